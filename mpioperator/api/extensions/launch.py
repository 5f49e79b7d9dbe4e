"""Launch extensions: the workers' start-up deadline, the kept failed launcher, the exec launch agent, the
wait for the hosts and the hostfile of pod IPs (keys and readers: api/annotation_keys.py; docs/extensions.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mpioperator.api import annotation_keys as keys
from mpioperator.api.annotation_keys import HOSTFILE_ADDRESSES as HOSTFILE_ADDRESSES
from mpioperator.api.annotation_keys import KEEP_FAILED_LAUNCHER as KEEP_FAILED_LAUNCHER
from mpioperator.api.annotation_keys import LAUNCH_AGENT as LAUNCH_AGENT
from mpioperator.api.annotation_keys import MAX_SECONDS as MAX_SECONDS
from mpioperator.api.annotation_keys import WAIT_FOR_SSH_PORT as WAIT_FOR_SSH_PORT
from mpioperator.api.annotation_keys import WORKER_STARTUP_DEADLINE as WORKER_STARTUP_DEADLINE
from mpioperator.api.field_errors import FieldError, JSONString, invalid, not_supported
from mpioperator.api.objects import Obj

AGENT_SSH = keys.AGENT_SSH
AGENT_EXEC = keys.AGENT_EXEC
_AGENTS = (AGENT_SSH, AGENT_EXEC)
# Where the exec agent's launcher finds kubectl and the agent script (an emptyDir the operator mounts).
EXEC_AGENT_DIR = "/opt/mpioperator-exec"
whole_seconds = keys.whole_number(MAX_SECONDS)


_ADDRESSES = (keys.ADDRESSES_DNS, keys.ADDRESSES_IP)


@dataclass(frozen=True, slots=True)
class Settings:
    """The launch extensions a job asks for, read from its annotations (a bad value reads as absent:
    validation reports it)."""

    # The job's own start-up deadline in seconds (0: none); None when it sets none.
    worker_startup_deadline: int | None = None
    keep_failed_launcher: bool = False
    exec_agent: bool = False
    # The port the launcher waits for on every host before its own container starts; None: no wait.
    wait_for_ssh_port: int | None = None
    # The hostfile and discover_hosts.sh name the workers by pod IP instead of DNS name.
    ip_hostfile: bool = False

    @property
    def waits_for_running_workers(self) -> bool:
        """Whether the launcher waits for its hosts through the exec agent: there is no sshd to connect to,
        so the operator makes the launcher Job only once every worker pod is Running (the port is not
        used)."""
        return self.exec_agent and self.wait_for_ssh_port is not None


def settings(found: Mapping[str, str]) -> Settings:
    """The launch settings of a job whose annotations are `found` (annotation_keys.of)."""
    deadline = found.get(WORKER_STARTUP_DEADLINE)
    port = found.get(WAIT_FOR_SSH_PORT)
    return Settings(
        worker_startup_deadline=None if deadline is None else whole_seconds(deadline),
        keep_failed_launcher=keys.flag(found.get(KEEP_FAILED_LAUNCHER, "")) is True,
        exec_agent=found.get(LAUNCH_AGENT, "").strip() == AGENT_EXEC,
        wait_for_ssh_port=None if port is None else keys.port(port),
        ip_hostfile=found.get(HOSTFILE_ADDRESSES, "").strip() == keys.ADDRESSES_IP,
    )


def ip_hostfile(job: Obj) -> bool:
    """Whether the hostfile and discover_hosts.sh name the workers by pod IP instead of DNS name."""
    return settings(keys.of(job)).ip_hostfile


def waits_for_running_workers(job: Obj) -> bool:
    return settings(keys.of(job)).waits_for_running_workers


def validate_annotations(job: Obj, found: Mapping[str, str] | None = None) -> list[FieldError]:
    """What is wrong with the launch annotations; `found`: the job's annotations when already read."""
    errors: list[FieldError] = []
    found = keys.of(job) if found is None else found
    seconds = f"must be a whole number of seconds, at most {MAX_SECONDS}"
    errors += keys.unreadable(found, WORKER_STARTUP_DEADLINE, whole_seconds, seconds)
    keep = found.get(KEEP_FAILED_LAUNCHER)
    if keep is not None and keys.flag(keep) is None:
        errors.append(not_supported(keys.field_path(KEEP_FAILED_LAUNCHER), JSONString(keep), keys.BOOLEANS))
    agent = found.get(LAUNCH_AGENT)
    if agent is not None and agent.strip() not in _AGENTS:
        errors.append(not_supported(keys.field_path(LAUNCH_AGENT), JSONString(agent), _AGENTS))
    errors += keys.unreadable(found, WAIT_FOR_SSH_PORT, keys.port, "must be a port number, 1-65535")
    addresses = found.get(HOSTFILE_ADDRESSES)
    if addresses is not None and addresses.strip() not in _ADDRESSES:
        errors.append(not_supported(keys.field_path(HOSTFILE_ADDRESSES), JSONString(addresses), _ADDRESSES))
    elif (read := settings(found)).ip_hostfile and read.exec_agent:
        detail = (
            f"cannot be used with {LAUNCH_AGENT}: {AGENT_EXEC}, which finds each worker's pod by its name"
        )
        errors.append(invalid(keys.field_path(HOSTFILE_ADDRESSES), JSONString(addresses), detail))
    return errors
