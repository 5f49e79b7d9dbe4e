"""The command line of `kubectl mpijob`: subcommands and flags, kubectl's global flags accepted before or
after the subcommand. Parsing only: what each command does is in `commands.py`."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

from mpioperator.api import constants as api
from mpioperator.api.extensions import restarts

PROG = "kubectl mpijob"
DESCRIPTION = "Submit, follow and manage Kubeflow MPIJobs (kubeflow.org/v2beta1)."
EPILOG = """\
kubeconfig and namespace are found as kubectl finds them: --kubeconfig, else $KUBECONFIG, else
~/.kube/config; -n/--namespace, else the context's namespace, else "default".
Exit codes: 0 success (wait: the job Succeeded), 1 an error or (wait) the job Failed, 2 a usage error.

examples:
  kubectl mpijob submit -f examples/v2beta1/pi/pi.yaml
  kubectl mpijob submit pi --image mpioperator/mpi-pi:openmpi --workers 2 -- mpirun -n 2 /home/mpiuser/pi
  kubectl mpijob wait pi --timeout 600 && kubectl mpijob logs pi
  kubectl mpijob convert -f t9k-mpijob.yaml > mpijob.yaml
"""


def _global_flags() -> argparse.ArgumentParser:
    # SUPPRESS defaults: a flag given before the subcommand is not reset by the subparser's own copy.
    flags = argparse.ArgumentParser(add_help=False)
    group = flags.add_argument_group("cluster")
    group.add_argument("--kubeconfig", default=argparse.SUPPRESS, help="path of the kubeconfig file")
    group.add_argument("--context", default=argparse.SUPPRESS, help="kubeconfig context to use")
    group.add_argument("-n", "--namespace", default=argparse.SUPPRESS, help="namespace of the MPIJob(s)")
    return flags


def build_parser() -> argparse.ArgumentParser:
    common = _global_flags()
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=DESCRIPTION,
        epilog=EPILOG,
        parents=[common],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, help=help_text, description=help_text, parents=[common])

    submit = command("submit", "create an MPIJob from a YAML file, or from flags")
    submit.usage = "%(prog)s [flags] (-f FILE | NAME --image IMAGE [-- LAUNCHER COMMAND...])"
    submit.add_argument("name", nargs="?", help="the job's name (with --image; a file names its own)")
    submit.add_argument("-f", "--filename", help="YAML file with one or more MPIJobs ('-' reads stdin)")
    submit.add_argument("--image", help="container image of the launcher and the workers")
    submit.add_argument("--workers", type=_positive, default=1, help="worker replicas (default 1)")
    submit.add_argument("--slots", type=_positive, default=None, help="slots per worker (default 1)")
    submit.add_argument(
        "--implementation",
        choices=api.MPI_IMPLEMENTATIONS,
        default=None,
        help="MPI implementation (default OpenMPI)",
    )
    submit.add_argument(
        "--command", dest="command_line", help="the launcher's command line, one quoted string"
    )
    submit.add_argument(
        "--worker-command", help="the workers' command line (e.g. an sshd), one quoted string"
    )
    submit.add_argument("--ssh-auth-mount-path", help="where the SSH key is mounted (default /root/.ssh)")
    submit.add_argument("--run-as-user", type=int, help="uid of the launcher and worker containers")
    submit.add_argument("--cpu", help="CPU limit per container, e.g. 500m")
    submit.add_argument("--memory", help="memory limit per container, e.g. 1Gi")
    submit.add_argument("--gpus", type=_positive, help="GPUs per worker (nvidia.com/gpu)")
    submit.add_argument("--dry-run", action="store_true", help="print the MPIJob as YAML, create nothing")
    _extension_flags(submit)

    listing = command("list", "list MPIJobs with their phase and workers")
    listing.add_argument("-A", "--all-namespaces", action="store_true", help="in every namespace")

    describe = command("describe", "phase, conditions, replica counts, problem pods and recent events")
    describe.add_argument("name")

    logs = command("logs", "print the launcher's log")
    logs.add_argument("name")
    logs.add_argument("-f", "--follow", action="store_true", help="stream the log until the launcher ends")
    logs.add_argument("--tail", type=int, default=None, help="only the last N lines")

    wait = command("wait", "wait until the MPIJob Succeeded (exit 0) or Failed (exit 1), showing progress")
    wait.add_argument("name")
    wait.add_argument("--timeout", type=_seconds, default=None, help="give up after this many seconds")
    wait.add_argument("-q", "--quiet", action="store_true", help="print only the final phase")

    delete = command("delete", "delete an MPIJob and everything it created")
    delete.add_argument("name")
    delete.add_argument("--wait", action="store_true", help="return once it is gone")

    suspend = command("suspend", "suspend an MPIJob: its pods are deleted, the job is kept")
    suspend.add_argument("name")
    resume = command("resume", "resume a suspended MPIJob")
    resume.add_argument("name")

    convert = command(
        "convert", "print a T9k or FFFFFaraway MPIJob manifest as a kubeflow.org/v2beta1 MPIJob"
    )
    convert.add_argument("-f", "--filename", required=True, help="the manifest ('-' reads stdin)")
    convert.add_argument(
        "--ssh-auth-mount-path", help="where the SSH keys go (a non-root user's ~/.ssh); default /root/.ssh"
    )
    return parser


# The submit flags that set the operator's annotations (docs/extensions.md): dest -> flag.
EXTENSION_FLAGS = {
    "worker_startup_deadline_seconds": "--worker-startup-deadline-seconds",
    "keep_failed_launcher": "--keep-failed-launcher",
    "launch_agent": "--launch-agent",
    "wait_for_ssh_port": "--wait-for-ssh-port",
    "restart_policy": "--restart-policy",
    "max_restarts": "--max-restarts",
    "restart_backoff_seconds": "--restart-backoff-seconds",
    "debug": "--debug",
    "debug_command": "--debug-command",
    "debug_worker_command": "--debug-worker-command",
    "debug_skip_init_containers": "--debug-skip-init-containers",
    "resume_launcher_command": "--resume-launcher-command",
    "resume_worker_command": "--resume-worker-command",
    "resume_skip_init_containers": "--resume-skip-init-containers",
    "launcher_program": "--launcher-program",
    "mpirun_args": "--mpirun-args",
    "mca": "--mca",
    "mpi_home": "--mpi-home",
    "ssh_secret": "--ssh-secret",
    "roll_workers": "--roll-workers-on-template-change",
    "hostfile_path": "--hostfile-path",
    "min_workers": "--min-workers",
    "max_workers": "--max-workers",
    "progress": "--progress",
    "stall_timeout_seconds": "--stall-timeout-seconds",
    "stall_fail": "--stall-fail",
    "hostfile_addresses": "--hostfile-addresses",
}


def _extension_flags(submit: argparse.ArgumentParser) -> None:
    group = submit.add_argument_group("operator extensions (mpioperator.io/ annotations, docs/extensions.md)")
    group.add_argument(
        "--worker-startup-deadline-seconds",
        type=_non_negative,
        help="fail the job if its workers are not all Ready this long after it starts (0: off)",
    )
    group.add_argument(
        "--keep-failed-launcher", action="store_true", help="each launcher attempt a pod that stays"
    )
    group.add_argument(
        "--launch-agent",
        choices=["ssh", "exec"],
        help="how mpirun reaches the workers: ssh (default) or exec (no sshd in the workers)",
    )
    group.add_argument(
        "--wait-for-ssh-port",
        type=_positive,
        metavar="PORT",
        help="start mpirun once every worker resolves and accepts connections on this port (sshd's)",
    )
    group.add_argument(
        "--restart-policy",
        choices=list(restarts.POLICIES),
        help="restart the whole job when a worker (OnWorkerFailure) or any pod (OnFailure) fails",
    )
    group.add_argument(
        "--max-restarts",
        type=_non_negative,
        metavar="N",
        help=f"at most this many whole-job restarts (default {restarts.DEFAULT_MAX_RESTARTS})",
    )
    group.add_argument(
        "--restart-backoff-seconds",
        type=_positive,
        metavar="S",
        help=f"the first wait before a restart's new attempt, doubling up to {restarts.MAX_BACKOFF_SECONDS}s "
        f"(default {restarts.DEFAULT_BACKOFF_SECONDS})",
    )
    group.add_argument(
        "--debug", action="store_true", help="debug mode: the launcher waits, run mpirun by hand"
    )
    group.add_argument("--debug-command", help="what the launcher waits with in debug mode (sleep infinity)")
    group.add_argument("--debug-worker-command", help="what the workers run in debug mode (their own)")
    group.add_argument(
        "--debug-skip-init-containers",
        metavar="TYPES",
        help="Launcher, Worker or both (comma-separated): no template init containers in debug mode",
    )
    group.add_argument("--resume-launcher-command", help="what the launcher runs after a resume")
    group.add_argument("--resume-worker-command", help="what the workers run after a resume")
    group.add_argument(
        "--resume-skip-init-containers",
        metavar="TYPES",
        help="Launcher, Worker or both (comma-separated): no template init containers after a resume",
    )
    group.add_argument(
        "--launcher-program",
        help="the program and its arguments, one quoted string: the operator writes the mpirun line",
    )
    group.add_argument("--mpirun-args", help="extra mpirun arguments, one quoted string (--launcher-program)")
    group.add_argument(
        "--mca", action="append", metavar="KEY=VALUE", help="an Open MPI MCA parameter (repeatable)"
    )
    group.add_argument("--mpi-home", help="the MPI installation whose bin/mpirun runs the program")
    group.add_argument("--ssh-secret", help="a Secret of yours with the SSH keys, instead of a generated one")
    group.add_argument(
        "--roll-workers-on-template-change",
        dest="roll_workers",
        action="store_true",
        help="re-create the workers when their template changes, before the launcher starts",
    )
    group.add_argument("--hostfile-path", help="another path where the launcher finds the hostfile")
    group.add_argument("--min-workers", type=int, help="the fewest workers a scale may leave (elastic)")
    group.add_argument("--max-workers", type=int, help="the most workers a scale may ask for (elastic)")
    group.add_argument(
        "--progress",
        metavar="json|PATTERN",
        help="status.progress from the launcher's log: JSON lines with step, total and metrics, or a "
        "regular expression with a named group done (and total)",
    )
    group.add_argument(
        "--stall-timeout-seconds",
        type=_positive,
        metavar="S",
        help="the Stalled condition once the launcher prints nothing new (no new progress) for this long",
    )
    group.add_argument(
        "--stall-fail",
        action="store_true",
        help="fail a stalled job that has no restart policy (with one, it restarts as a whole)",
    )
    group.add_argument(
        "--hostfile-addresses",
        choices=("dns", "ip"),
        help="name the workers in the hostfile by DNS name (dns, the default) or pod IP (ip)",
    )


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The parsed command line. Everything after the first `--` is the launcher's command line (submit),
    kept away from argparse, which would take its dashes for flags of ours."""
    words = list(sys.argv[1:] if argv is None else argv)
    launcher_argv: list[str] = []
    if "--" in words:
        cut = words.index("--")
        words, launcher_argv = words[:cut], words[cut + 1 :]
    parser = build_parser()
    args = parser.parse_args(words)
    args.launcher_argv = launcher_argv
    if args.command == "submit":
        _check_submit(parser, args)
    elif launcher_argv:
        parser.error(f"{args.command}: unexpected arguments after --: {shlex.join(launcher_argv)}")
    return args


def _check_submit(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.command_line and args.launcher_argv:
        parser.error("submit: give the launcher's command either with --command or after --, not both")
    if args.command_line:
        args.launcher_argv = shlex.split(args.command_line)
    args.worker_argv = shlex.split(args.worker_command) if args.worker_command else []
    needing_program = [
        f"--{f.replace('_', '-')}" for f in ("mpirun_args", "mca", "mpi_home") if getattr(args, f)
    ]
    if needing_program and not args.launcher_program:
        parser.error(f"submit: {', '.join(needing_program)} need --launcher-program")
    if args.filename:
        job_flags = ("name", "image", "command_line", "worker_command", *EXTENSION_FLAGS)
        flags = [f for f in job_flags if getattr(args, f) not in (None, False)]
        if flags or args.launcher_argv:
            parser.error("submit: -f takes the whole job from the file; drop the other job flags")
        return
    if not args.name or not args.image:
        parser.error("submit: give -f FILE, or a NAME and --image")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _seconds(text: str) -> float:
    value = float(text.removesuffix("s"))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value
