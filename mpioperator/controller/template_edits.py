"""Template edits reaching a job's pods (`mpioperator.io/roll-workers-on-template-change`): what is done
when, and what is refused (docs/extensions.md "The worker roll in detail", decisions-local L14).

Upstream never touches a worker pod or the launcher Job once made (quirk #9): an edit reaches only pods
made later. A pod is made again to carry an edit, never changed: MPI cannot replace one rank under a
running mpirun, and a batch/v1 Job's pod template cannot be changed. So, for a job with the annotation:
- before its launcher has started, workers made from another worker template are deleted and made again
  (all at once), and a launcher Job made from another launcher template is deleted and made again;
- once the launcher runs, an edit restarts the whole job as one new attempt when the job also opted in to
  whole-job restarts and has one left (features/restarts.py); otherwise it is refused with the
  `TemplateChangeRefused` condition and one event, and the running pods keep their template.
"""

from __future__ import annotations

from mpioperator.api.extensions import restarts as policy
from mpioperator.api.extensions.parsed import Extensions, parse
from mpioperator.api.objects import Obj
from mpioperator.controller.child_state import launcher_done
from mpioperator.controller.decorators.worker_template import (
    launcher_template_hash,
    stamped_hash,
    stamped_launcher_hash,
    template_hash,
)

REASON_WORKERS_ROLLED = "WorkersRolled"
REASON_LAUNCHER_REMADE = "LauncherRecreated"
COND_REFUSED = "TemplateChangeRefused"
REASON_NO_RESTARTS = "LauncherAlreadyStarted"
REASON_LIMIT = "RestartLimitReached"


def launcher_started(launcher: Obj | None, launcher_pods: list[Obj]) -> bool:
    if launcher is None:
        return False
    status = launcher.get("status") or {}
    if status.get("succeeded") or status.get("failed"):
        return True
    return any((p.get("status") or {}).get("phase") not in (None, "Pending") for p in launcher_pods)


def _live(pods: list[Obj]) -> list[Obj]:
    return [p for p in pods if not (p.get("metadata") or {}).get("deletionTimestamp")]


def workers_to_roll(
    job: Obj,
    workers: list[Obj],
    launcher: Obj | None,
    launcher_pods: list[Obj],
    ext: Extensions | None = None,
) -> list[Obj]:
    """The worker pods to delete so they are made again from the current template; none unless the job
    asked for it and its launcher has not started. A worker without the stamp was made before the job
    opted in, from a template we cannot know, so it is rolled too. `ext`: the job's extensions as the
    sync parsed them (read from the job when None)."""
    if not (ext or parse(job)).conveniences.roll_workers or launcher_started(launcher, launcher_pods):
        return []
    current = template_hash(job)
    return [pod for pod in _live(workers) if stamped_hash(pod) != current]


def _idle_while_suspended(launcher: Obj, launcher_pods: list[Obj]) -> bool:
    """A suspended launcher Job with no pod left running: whatever it ran before the suspension is over
    (an attempt it counted as failed included), so making it again costs nothing."""
    if not (launcher.get("spec") or {}).get("suspend") or launcher_done(launcher):
        return False
    return not any(
        (p.get("status") or {}).get("phase") in ("Pending", "Running") for p in _live(launcher_pods)
    )


def launcher_to_remake(job: Obj, ext: Extensions, launcher: Obj | None, launcher_pods: list[Obj]) -> bool:
    """Whether the launcher Job goes, to be made again from the current launcher template: the job asked
    for it, the Job was made from another template (or before the job opted in) and has not started, or
    is suspended with nothing running (a resume)."""
    if launcher is None or not ext.conveniences.roll_workers:
        return False
    if launcher_started(launcher, launcher_pods) and not _idle_while_suspended(launcher, launcher_pods):
        return False
    return stamped_launcher_hash(launcher) != launcher_template_hash(job)


def running_edit(
    job: Obj, ext: Extensions, workers: list[Obj], launcher: Obj | None, launcher_pods: list[Obj]
) -> str | None:
    """What was edited since the running attempt's pods were made ("the worker template", "the launcher
    template", or both), when the job asked for its edits to reach its pods and its launcher runs.

    Only a stamp of another template counts: a pod without one was made before the job opted in, from a
    template that cannot be known, and a guess must not cost a running job its work."""
    if launcher is None or not ext.conveniences.roll_workers:
        return None
    if launcher_done(launcher) or not launcher_started(launcher, launcher_pods):
        return None
    attempt = policy.current_attempt(job)
    labelled = ext.restarts.labelled(job)
    if labelled and policy.attempt_of(launcher) != attempt:
        return None  # an earlier attempt's, which the restart step deletes
    current = template_hash(job)
    workers_edited = any(
        stamped_hash(p) not in (None, current)
        for p in _live(workers)
        if not labelled or policy.attempt_of(p) == attempt
    )
    stamp = stamped_launcher_hash(launcher)
    launcher_edited = stamp is not None and stamp != launcher_template_hash(job)
    if workers_edited and launcher_edited:
        return "the worker and launcher templates"
    if workers_edited:
        return "the worker template"
    return "the launcher template" if launcher_edited else None


def refusal(job: Obj, ext: Extensions, edited: str) -> tuple[str, str] | None:
    """The reason and message of a refused edit of a running job; None when a restart takes it."""
    meta = job["metadata"]
    head = f"MPIJob {meta.get('namespace', '')}/{meta['name']}: {edited} changed after the launcher started"
    if not ext.restarts.enabled:
        return REASON_NO_RESTARTS, (
            f"{head}; the running pods keep the template they were made from, since MPI cannot replace a "
            f"rank under a running mpirun. Set {policy.RESTART_POLICY} to restart the job as a whole on "
            "the new template, or suspend and resume it."
        )
    done = policy.restarts(job.get("status") or {})
    if done < ext.restarts.max_restarts:
        return None
    return REASON_LIMIT, (
        f"{head}; the job restarted {done} times, the most {policy.MAX_RESTARTS} allows, so the running "
        f"pods keep the template they were made from. Raise {policy.MAX_RESTARTS}, or suspend and resume "
        "the job."
    )
