"""Re-creating workers whose template changed (`mpioperator.io/roll-workers-on-template-change`, issue 18).

Upstream never touches a worker pod once made (quirk #9): a fixed image or resource request reaches only
workers created later. With the annotation, every worker made from an older template is deleted and made
again from the new one: all at once, since MPI ranks cannot be replaced one by one under a running mpirun,
and only while that cannot hurt: no launcher pod has left Pending yet. (A suspended job has no workers; on
resume they are made from the template of that moment, as upstream does.)
"""

from __future__ import annotations

from mpioperator.api import conveniences
from mpioperator.api.objects import Obj
from mpioperator.controller.builders.worker_template import stamped_hash, template_hash


def launcher_started(launcher: Obj | None, launcher_pods: list[Obj]) -> bool:
    if launcher is None:
        return False
    status = launcher.get("status") or {}
    if status.get("succeeded") or status.get("failed"):
        return True
    return any((p.get("status") or {}).get("phase") not in (None, "Pending") for p in launcher_pods)


def workers_to_roll(
    job: Obj, workers: list[Obj], launcher: Obj | None, launcher_pods: list[Obj]
) -> list[Obj]:
    """The worker pods to delete so they are made again from the current template; none unless the job
    asked for it and its launcher has not started. A worker without the stamp was made before the job
    opted in, from a template we cannot know, so it is rolled too."""
    if not conveniences.roll_workers(job) or launcher_started(launcher, launcher_pods):
        return []
    current = template_hash(job)
    return [
        pod
        for pod in workers
        if not (pod.get("metadata") or {}).get("deletionTimestamp") and stamped_hash(pod) != current
    ]
