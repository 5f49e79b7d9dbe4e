"""The builder's setters for the operator's `mpioperator.io/` annotations (docs/extensions.md): one method
per behaviour, so a job's extensions are spelt as Python rather than as annotation keys and string values.
`build()` checks the values as the operator will, like every other field."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Self

from mpioperator.api.extensions import conveniences, elastic, launch, launcher_log, restarts


def _flag(enabled: bool) -> str:
    return "true" if enabled else "false"


class AnnotationSetters:
    """Mixed into MPIJobBuilder; each setter writes the job's annotations and returns the builder."""

    _annotations: dict[str, str]

    def worker_startup_deadline_seconds(self, seconds: int) -> Self:
        """Fail the job when its workers are not all Ready this long after it starts; 0 turns it off."""
        self._annotations[launch.WORKER_STARTUP_DEADLINE] = str(seconds)
        return self

    def keep_failed_launcher(self, enabled: bool = True) -> Self:
        """Each launcher attempt a pod of its own that stays after it fails (restartPolicy Never)."""
        self._annotations[launch.KEEP_FAILED_LAUNCHER] = _flag(enabled)
        return self

    def launch_agent(self, agent: str) -> Self:
        """How the launcher's MPI reaches the workers: "ssh" (the default) or "exec", the API server's
        exec into the job's own worker pods (workers need no sshd; the operator must run with
        --exec-agent)."""
        self._annotations[launch.LAUNCH_AGENT] = agent
        return self

    def restart_whole_job(
        self,
        policy: str = restarts.ON_WORKER_FAILURE,
        max_restarts: int | None = None,
        backoff_seconds: int | None = None,
    ) -> Self:
        """Restart the whole job (every pod made anew) when a worker fails or is evicted ("OnWorkerFailure"),
        or also when the launcher fails ("OnFailure"), at most `max_restarts` times (the operator's default
        when None), the first new attempt `backoff_seconds` after the failure (10 when None), doubling for
        each quick failure up to 5 minutes; "Never" is upstream's behaviour."""
        self._annotations[restarts.RESTART_POLICY] = policy
        if max_restarts is not None:
            self._annotations[restarts.MAX_RESTARTS] = str(max_restarts)
        if backoff_seconds is not None:
            self._annotations[restarts.RESTART_BACKOFF] = str(backoff_seconds)
        return self

    def wait_for_ssh_port(self, port: int) -> Self:
        """The launcher starts mpirun only once every host of its hostfile resolves and accepts connections
        on `port` (the workers' sshd), within the job's start-up deadline."""
        self._annotations[launch.WAIT_FOR_SSH_PORT] = str(port)
        return self

    def debug_mode(
        self,
        enabled: bool = True,
        *,
        command: Sequence[str] | None = None,
        worker_command: Sequence[str] | None = None,
        skip_init_containers: Sequence[str] = (),
    ) -> Self:
        """The launcher waits (`sleep infinity`, or `command`) instead of running its own command; the
        workers run `worker_command` instead of theirs when given; the replica types in
        `skip_init_containers` (`Launcher`, `Worker`) start without their templates' init containers."""
        self._annotations[conveniences.DEBUG_MODE] = _flag(enabled)
        return self._commands(
            (conveniences.DEBUG_COMMAND, command),
            (conveniences.DEBUG_WORKER_COMMAND, worker_command),
            (conveniences.DEBUG_SKIP_INIT_CONTAINERS, skip_init_containers),
        )

    def on_resume(
        self,
        *,
        launcher_command: Sequence[str] | None = None,
        worker_command: Sequence[str] | None = None,
        skip_init_containers: Sequence[str] = (),
    ) -> Self:
        """What pods made after the job is resumed from a suspension run instead of their own commands,
        and which replica types (`Launcher`, `Worker`) start without their templates' init containers."""
        return self._commands(
            (conveniences.RESUME_LAUNCHER_COMMAND, launcher_command),
            (conveniences.RESUME_WORKER_COMMAND, worker_command),
            (conveniences.RESUME_SKIP_INIT_CONTAINERS, skip_init_containers),
        )

    def _commands(
        self,
        launcher: tuple[str, Sequence[str] | None],
        worker: tuple[str, Sequence[str] | None],
        skip_init_containers: tuple[str, Sequence[str]],
    ) -> Self:
        """The launcher's and the workers' command lines (shell words), where given, and the replica types
        that skip their init containers (a comma-separated list), where any."""
        for key, argv in (launcher, worker):
            if argv is not None:
                self._annotations[key] = shlex.join(argv)
        key, kinds = skip_init_containers
        if kinds:
            self._annotations[key] = ",".join(kinds)
        return self

    def launcher_program(
        self,
        *argv: str,
        mpirun_args: Sequence[str] = (),
        mca: Mapping[str, str] | None = None,
        mpi_home: str | None = None,
    ) -> Self:
        """The operator writes the mpirun line that runs `argv` (the program's absolute path, or a path
        relative to the launcher container's workingDir, then its arguments); the launcher container must
        have no command or args of its own."""
        self._annotations[conveniences.LAUNCHER_PROGRAM] = shlex.join(argv)
        if mpirun_args:
            self._annotations[conveniences.MPIRUN_EXTRA_ARGS] = shlex.join(mpirun_args)
        if mca:
            self._annotations[conveniences.MCA_PARAMS] = "\n".join(f"{k}={v}" for k, v in mca.items())
        if mpi_home is not None:
            self._annotations[conveniences.MPI_HOME] = mpi_home
        return self

    def ssh_secret(self, name: str) -> Self:
        """Mount the user's own Secret (`ssh-privatekey`/`ssh-publickey`, or the openmpi prototype's
        `id_rsa`/`id_rsa.pub`/`authorized_keys`) instead of a generated one."""
        self._annotations[conveniences.SSH_SECRET] = name
        return self

    def roll_workers_on_template_change(self, enabled: bool = True) -> Self:
        """Re-create the workers when their template changes, while the launcher has not started."""
        self._annotations[conveniences.ROLL_WORKERS] = _flag(enabled)
        return self

    def hostfile_path(self, path: str) -> Self:
        """The launcher also finds the hostfile at `path` (e.g. `/kubeflow/openmpi/assets/hostfile`)."""
        self._annotations[conveniences.HOSTFILE_PATH] = path
        return self

    def worker_bounds(self, minimum: int | None = None, maximum: int | None = None) -> Self:
        """Elastic bounds: a scale (`kubectl scale`, an autoscaler) outside them runs the nearest bound."""
        if minimum is not None:
            self._annotations[elastic.MIN_WORKERS] = str(minimum)
        if maximum is not None:
            self._annotations[elastic.MAX_WORKERS] = str(maximum)
        return self

    def progress(self, how: str = launcher_log.PROGRESS_JSON) -> Self:
        """Put the job's progress in `status.progress` (PROGRESS in `kubectl get mpijobs -o wide`), read
        off the launcher's log: "json" for lines like `{"step": 30, "total": 120, "metrics": {"loss":
        0.25}}`, or a regular expression with a named group `done` (and optionally `total`; other named
        groups are metrics)."""
        self._annotations[launcher_log.PROGRESS] = how
        return self

    def stall_timeout(self, seconds: int, *, fail: bool = False) -> Self:
        """The `Stalled` condition (and one Warning event) once the launcher prints nothing new (no new
        progress, with `progress`) for `seconds`; with a restart policy the job then restarts as a whole,
        else with `fail` it is failed."""
        self._annotations[launcher_log.STALL_TIMEOUT] = str(seconds)
        if fail:
            self._annotations[launcher_log.STALL_ACTION] = launcher_log.STALL_FAIL
        return self

    def hostfile_addresses(self, addresses: str) -> Self:
        """`"ip"`: the hostfile and discover_hosts.sh list the workers' pod IPs; `"dns"`: their DNS names."""
        self._annotations[launch.HOSTFILE_ADDRESSES] = addresses
        return self
