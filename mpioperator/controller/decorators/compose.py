"""Our decorators of a job's children, in the order they apply, and the children rendered with them.

Upstream's builders (controller/builders/) render what upstream renders and then apply the decorators they
are given, each a function of the object being made; they import none of ours. This module lists ours for
one job: each is a no-op unless the job asks for its behaviour (docs/extensions.md). Gang scheduling's
and the exec agent's come after, from the caller (`then`).
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Sequence

from mpioperator.api import constants as api
from mpioperator.api.extensions.parsed import Extensions, parse
from mpioperator.api.names import config_map_name
from mpioperator.api.objects import Obj
from mpioperator.controller.builders import launcher_job, worker_pod
from mpioperator.controller.builders.podspec import SSH_VOLUME, UPSTREAM_KEYS, Decorator, SSHKeys, add_volume
from mpioperator.controller.decorators import worker_template
from mpioperator.controller.decorators.host_waiter import HostWaiter, add_host_waiter
from mpioperator.controller.decorators.launcher_command import mark_debug, set_launcher_command

EXTRA_HOSTFILE_VOLUME = "mpi-job-hostfile"


def _attempt_labels(job: Obj, ext: Extensions, obj: Obj) -> None:
    """Only for a job that restarts as a whole: which attempt the child belongs to."""
    labels = ext.restarts.attempt_labels(job)
    if labels:
        obj.setdefault("metadata", {}).setdefault("labels", {}).update(labels)


def _keep_failed_launcher(ext: Extensions, template: Obj) -> None:
    if ext.launch.keep_failed_launcher:
        # Each attempt its own pod, which the Job controller keeps when it fails; restarted in place
        # (OnFailure), the pod is deleted once the back-off limit is reached, its log with it.
        template["spec"]["restartPolicy"] = api.RESTART_POLICY_NEVER


def _extra_hostfile(job: Obj, ext: Extensions, template: Obj) -> None:
    """The same hostfile where the openmpi prototype's exec lines look for it, when the job asks."""
    extra_hostfile = ext.conveniences.hostfile_path
    if extra_hostfile is None:
        return
    directory, file_name = posixpath.split(extra_hostfile)
    volume = {
        "name": EXTRA_HOSTFILE_VOLUME,
        "configMap": {
            "name": config_map_name(job),
            "items": [{"key": "hostfile", "path": file_name, "mode": 0o444}],
        },
    }
    spec = template["spec"]
    add_volume(spec, spec["containers"][0], volume, directory)


def _user_ssh_secret(ext: Extensions, pod: Obj) -> None:
    """A Secret of the user's own for SSH, when the job names one, in place of the generated one."""
    name = ext.conveniences.ssh_secret
    if name is None:
        return
    for volume in pod["spec"].get("volumes") or ():
        if volume.get("name") == SSH_VOLUME:
            volume["secret"]["secretName"] = name


def _worker_modes(job: Obj, ext: Extensions, pod: Obj) -> None:
    ext.modes.apply(job, api.WORKER, pod["spec"])  # debug mode's or a resume's worker settings


def launcher_template_decorators(job: Obj, ext: Extensions, waiter: HostWaiter) -> list[Decorator]:
    return [
        functools.partial(_attempt_labels, job, ext),
        functools.partial(_user_ssh_secret, ext),
        functools.partial(_keep_failed_launcher, ext),
        functools.partial(_extra_hostfile, job, ext),
        functools.partial(set_launcher_command, job, ext, hostfile=launcher_job.HOSTFILE_PATH),
        functools.partial(
            add_host_waiter,
            job,
            ext,
            waiter=waiter,
            config_volume=launcher_job.CONFIG_VOLUME,
            config_mount=launcher_job.CONFIG_MOUNT,
        ),
    ]


def launcher_job_decorators(job: Obj, ext: Extensions) -> list[Decorator]:
    return [
        functools.partial(_attempt_labels, job, ext),
        functools.partial(mark_debug, job, ext),
        functools.partial(worker_template.stamp_launcher, job, ext),
    ]


def worker_decorators(job: Obj, ext: Extensions) -> list[Decorator]:
    return [
        functools.partial(_attempt_labels, job, ext),
        functools.partial(_user_ssh_secret, ext),
        functools.partial(_worker_modes, job, ext),
        functools.partial(worker_template.stamp, job, ext),
    ]


# Each function below takes the job's extensions as the sync parsed them (`ext`); without them (a test, the
# SDK's dry run) they are read from the job.


def launcher_pod_template(
    job: Obj,
    then: Sequence[Decorator] = (),
    waiter: HostWaiter | None = None,
    *,
    ext: Extensions | None = None,
) -> tuple[Obj, bool]:
    """The launcher's pod template as the operator makes it (with upstream's SSH keys: only its scheduling
    directives are read, on a resume), and whether its restartPolicy was overridden."""
    ours = launcher_template_decorators(job, ext or parse(job), waiter or HostWaiter())
    return launcher_job.launcher_pod_template(job, [*ours, *then])


def new_launcher_job(
    job: Obj,
    then: Sequence[Decorator] = (),
    ssh_keys: SSHKeys = UPSTREAM_KEYS,
    waiter: HostWaiter | None = None,
    *,
    ext: Extensions | None = None,
) -> tuple[Obj, bool]:
    """The launcher Job as the operator makes it, `then` (gang scheduling's, the exec agent's) last."""
    ext = ext or parse(job)
    ours = launcher_template_decorators(job, ext, waiter or HostWaiter())
    return launcher_job.new_launcher_job(job, [*ours, *then], ssh_keys, launcher_job_decorators(job, ext))


def new_worker(
    job: Obj,
    index: int,
    then: Sequence[Decorator] = (),
    ssh_keys: SSHKeys = UPSTREAM_KEYS,
    *,
    ext: Extensions | None = None,
) -> Obj:
    """Worker `index`'s pod as the operator makes it, `then` (gang scheduling's) last."""
    return worker_pod.new_worker(job, index, [*worker_decorators(job, ext or parse(job)), *then], ssh_keys)
