"""Child object names, fixed by upstream so tools that look them up keep working; the builders and the
PodGroup backends name the same objects."""

from __future__ import annotations

from mpioperator.api.objects import Obj


def job_name(job: Obj) -> str:
    return str(job["metadata"]["name"])


def service_name(job: Obj) -> str:
    return job_name(job)


def config_map_name(job: Obj) -> str:
    return f"{job_name(job)}-config"


def secret_name(job: Obj) -> str:
    return f"{job_name(job)}-ssh"


def launcher_name(job: Obj) -> str:
    return f"{job_name(job)}-launcher"


def worker_name(job: Obj, index: int) -> str:
    return f"{job_name(job)}-worker-{index}"


def worker_index(job: Obj, name: str) -> int | None:
    """The index whose worker_name is `name`, None for any other name."""
    prefix = f"{job_name(job)}-worker-"
    digits = name[len(prefix) :] if name.startswith(prefix) else ""
    if not (digits.isascii() and digits.isdigit()) or (digits[0] == "0" and len(digits) > 1):
        return None
    return int(digits)


def pod_group_name(job: Obj) -> str:
    return job_name(job)
