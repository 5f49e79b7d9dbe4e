"""Every `mpioperator.io/` key the operator reads or writes, in one table (docs/extensions.md; D8).

Our opt-in behaviour is asked for with annotations under our own prefix: upstream's spec stays as it is,
since typed clients built on upstream's structs drop unknown spec fields on a read-modify-write but keep
annotations. CEL in a CRD cannot read annotations, so a bad value is reported by the controller's
validation (the `Invalid` condition) instead of being refused at apply time.

`TABLE` holds each annotation a user sets: its key, the reader that turns its text into a value (None for
text it does not take), the value when the job does not set it, and one line of what it does. The SDK's
setters, `kubectl mpijob submit`'s flags and docs/extensions.md are checked against it by tests.
`WRITTEN_BY_THE_OPERATOR` holds the labels, annotations and finalizer the operator puts on objects itself.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from mpioperator.api.field_errors import FieldError, JSONString, invalid
from mpioperator.api.objects import Obj

PREFIX: Final = "mpioperator.io/"


def of(job: Obj) -> dict[str, str]:
    """The job's annotations, every value as text (an object without any has none)."""
    found = (job.get("metadata") or {}).get("annotations") or {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def field_path(key: str) -> str:
    """Where a validation error about the annotation `key` points."""
    return f"metadata.annotations[{key}]"


def unreadable(
    found: Mapping[str, str], key: str, read: Callable[[str], object], detail: str
) -> list[FieldError]:
    """One Invalid error saying `detail` when the job sets `key` to text `read` refuses (reads as None);
    none when it is unset or readable."""
    value = found.get(key)
    if value is None or read(value) is not None:
        return []
    return [invalid(field_path(key), JSONString(value), detail)]


# --- the readers: each takes an annotation's text and returns its value, or None for text it refuses ---

BOOLEANS: Final = ("false", "true")
# ASCII digits only, as Go's strconv reads them: str.isdigit() also takes "²", which int() then refuses.
_DIGITS = re.compile(r"[0-9]+")
# shlex reads about 100 KB a second and a sync reads the words a few times: a 200 KB value held the event
# loop (and the Lease renewals on it) for 2.4 s per sync. Longer than any command line a user writes.
MAX_WORDS_BYTES: Final = 16 * 1024


def flag(text: str) -> bool | None:
    """`true` or `false`, in any case, spaces around allowed."""
    value = text.strip().lower()
    return value == "true" if value in BOOLEANS else None


def whole_number(maximum: int) -> Callable[[str], int | None]:
    """A reader of a whole, non-negative number in ASCII digits, at most `maximum`."""
    width = len(str(maximum))

    def read(text: str) -> int | None:
        value = text.strip()
        if len(value) > width or _DIGITS.fullmatch(value) is None:
            return None
        number = int(value)
        return number if number <= maximum else None

    return read


def port(text: str) -> int | None:
    """A TCP port, 1-65535."""
    number = whole_number(99999)(text)
    return number if number is not None and 0 < number < 65536 else None


def choice(*options: str) -> Callable[[str], str | None]:
    """A reader of one of `options`, exactly as spelt (spaces around allowed)."""

    def read(text: str) -> str | None:
        value = text.strip()
        return value if value in options else None

    return read


def too_long(text: str) -> bool:
    """Longer than MAX_WORDS_BYTES, in bytes as the API server counts them (a lone surrogate from a JSON
    escape must not raise here)."""
    return len(text) > MAX_WORDS_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_WORDS_BYTES


def shell_words(text: str) -> tuple[str, ...] | None:
    """Shell words (quotes allowed, no expansion); None when the quoting is broken or the text too long."""
    if too_long(text):
        return None
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return None


def stripped(text: str) -> str | None:
    """Text whose checks need the rest of the job (validation.py's), spaces around dropped."""
    return text.strip()


def verbatim(text: str) -> str | None:
    """Text whose checks need the rest of the job, as written."""
    return text


# --- the keys ---

WORKER_STARTUP_DEADLINE: Final = f"{PREFIX}worker-startup-deadline-seconds"
KEEP_FAILED_LAUNCHER: Final = f"{PREFIX}keep-failed-launcher"
LAUNCH_AGENT: Final = f"{PREFIX}launch-agent"
WAIT_FOR_SSH_PORT: Final = f"{PREFIX}wait-for-ssh-port"
RESTART_POLICY: Final = f"{PREFIX}restart-policy"
MAX_RESTARTS: Final = f"{PREFIX}max-restarts"
RESTART_BACKOFF: Final = f"{PREFIX}restart-backoff-seconds"
DEBUG_MODE: Final = f"{PREFIX}debug-mode"
DEBUG_COMMAND: Final = f"{PREFIX}debug-command"
DEBUG_WORKER_COMMAND: Final = f"{PREFIX}debug-worker-command"
DEBUG_SKIP_INIT_CONTAINERS: Final = f"{PREFIX}debug-skip-init-containers"
RESUME_LAUNCHER_COMMAND: Final = f"{PREFIX}resume-launcher-command"
RESUME_WORKER_COMMAND: Final = f"{PREFIX}resume-worker-command"
RESUME_SKIP_INIT_CONTAINERS: Final = f"{PREFIX}resume-skip-init-containers"
LAUNCHER_PROGRAM: Final = f"{PREFIX}launcher-program"
MPIRUN_EXTRA_ARGS: Final = f"{PREFIX}mpirun-extra-args"
MCA_PARAMS: Final = f"{PREFIX}mca-params"
MPI_HOME: Final = f"{PREFIX}mpi-home"
SSH_SECRET: Final = f"{PREFIX}ssh-secret"
ROLL_WORKERS: Final = f"{PREFIX}roll-workers-on-template-change"
HOSTFILE_PATH: Final = f"{PREFIX}hostfile-path"
MIN_WORKERS: Final = f"{PREFIX}min-workers"
MAX_WORKERS: Final = f"{PREFIX}max-workers"
PROGRESS: Final = f"{PREFIX}progress"
STALL_TIMEOUT: Final = f"{PREFIX}stall-timeout-seconds"
STALL_ACTION: Final = f"{PREFIX}stall-action"
HOSTFILE_ADDRESSES: Final = f"{PREFIX}hostfile-addresses"

# Written by the operator, never by a user.
ATTEMPT_LABEL: Final = f"{PREFIX}attempt"  # on every child of a job that restarts as a whole
EXEC_GRANTS_FINALIZER: Final = f"{PREFIX}exec-grants"  # on an exec-agent job until its grants are gone
EXEC_GRANT_LABEL: Final = f"{PREFIX}exec-grant"  # on the exec agent's RBAC objects
WORKER_TEMPLATE_HASH: Final = f"{PREFIX}worker-template-hash"  # on workers of a job that rolls them
LAUNCHER_TEMPLATE_HASH: Final = f"{PREFIX}launcher-template-hash"  # on its launcher Job
MADE_AFTER_RESUME: Final = f"{PREFIX}made-after-resume"  # on a launcher Job made anew on a resume
WRITTEN_BY_THE_OPERATOR: Final = (
    ATTEMPT_LABEL,
    EXEC_GRANTS_FINALIZER,
    EXEC_GRANT_LABEL,
    WORKER_TEMPLATE_HASH,
    LAUNCHER_TEMPLATE_HASH,
    MADE_AFTER_RESUME,
)

# Bounds and choices the readers below share with the modules that use the values.
MAX_SECONDS: Final = 2**63 - 1  # as Kubernetes' own second counts (activeDeadlineSeconds): an int64
MAX_MAX_RESTARTS: Final = 2**31 - 1  # an int32, as status counts are
AGENT_SSH: Final = "ssh"
AGENT_EXEC: Final = "exec"
NEVER: Final = "Never"
ON_WORKER_FAILURE: Final = "OnWorkerFailure"
ON_FAILURE: Final = "OnFailure"  # a worker's or the launcher's
POLICIES: Final = (NEVER, ON_WORKER_FAILURE, ON_FAILURE)
DEFAULT_MAX_RESTARTS: Final = 3
DEFAULT_BACKOFF_SECONDS: Final = 10
DEFAULT_DEBUG_COMMAND: Final = ("sleep", "infinity")
MAX_WORKER_BOUND: Final = 2**31 - 1  # an int32, as spec.mpiReplicaSpecs[Worker].replicas is
PROGRESS_JSON: Final = "json"
# A progress pattern is matched against every new launcher line: a longer one is no line pattern.
MAX_PROGRESS_PATTERN: Final = 512
STALL_CONDITION_ONLY: Final = "condition"
STALL_FAIL: Final = "fail"


def progress_format(text: str) -> str | re.Pattern[str] | None:
    """`json`, or a regular expression with a named group `done` (and optionally `total`; any other named
    group is a metric)."""
    value = text.strip()
    if value == PROGRESS_JSON:
        return value
    if not value or len(value) > MAX_PROGRESS_PATTERN:
        return None
    try:
        pattern = re.compile(value)
    except (re.error, RecursionError, OverflowError):
        return None
    return pattern if "done" in pattern.groupindex else None


ADDRESSES_DNS: Final = "dns"
ADDRESSES_IP: Final = "ip"


@dataclass(frozen=True, slots=True)
class Annotation:
    key: str
    read: Callable[[str], object | None]
    default: object
    doc: str


TABLE: Final = (
    Annotation(
        WORKER_STARTUP_DEADLINE,
        whole_number(MAX_SECONDS),
        None,
        "fail the job when its workers are not all Ready this many seconds after it starts (0: never)",
    ),
    Annotation(KEEP_FAILED_LAUNCHER, flag, False, "each launcher attempt its own pod, kept when it fails"),
    Annotation(
        LAUNCH_AGENT, choice(AGENT_SSH, AGENT_EXEC), AGENT_SSH, "how mpirun reaches the workers: ssh or exec"
    ),
    Annotation(WAIT_FOR_SSH_PORT, port, None, "the launcher waits until every host accepts this port"),
    Annotation(RESTART_POLICY, choice(*POLICIES), NEVER, "restart the whole job when a worker (or it) fails"),
    Annotation(
        MAX_RESTARTS, whole_number(MAX_MAX_RESTARTS), DEFAULT_MAX_RESTARTS, "the most whole-job restarts"
    ),
    Annotation(
        RESTART_BACKOFF,
        whole_number(MAX_MAX_RESTARTS),
        DEFAULT_BACKOFF_SECONDS,
        "the first wait before a restart",
    ),
    Annotation(DEBUG_MODE, flag, False, "the launcher waits instead of running its command"),
    Annotation(DEBUG_COMMAND, shell_words, DEFAULT_DEBUG_COMMAND, "what the launcher runs in debug mode"),
    Annotation(DEBUG_WORKER_COMMAND, shell_words, None, "what the workers run in debug mode"),
    Annotation(DEBUG_SKIP_INIT_CONTAINERS, stripped, None, "replica types started without init containers"),
    Annotation(RESUME_LAUNCHER_COMMAND, shell_words, None, "what the launcher runs after a resume"),
    Annotation(RESUME_WORKER_COMMAND, shell_words, None, "what the workers run after a resume"),
    Annotation(
        RESUME_SKIP_INIT_CONTAINERS,
        stripped,
        None,
        "replica types started without init containers after a resume",
    ),
    Annotation(LAUNCHER_PROGRAM, shell_words, None, "the program the operator's generated mpirun line runs"),
    Annotation(MPIRUN_EXTRA_ARGS, shell_words, (), "more mpirun arguments for the generated line"),
    Annotation(MCA_PARAMS, verbatim, None, "Open MPI MCA parameters for the generated line"),
    Annotation(MPI_HOME, stripped, None, "where the generated line finds mpirun"),
    Annotation(SSH_SECRET, stripped, None, "a Secret of the user's own for SSH"),
    Annotation(ROLL_WORKERS, flag, False, "workers made anew when their template changes"),
    Annotation(HOSTFILE_PATH, verbatim, None, "a second path where the launcher finds the hostfile"),
    Annotation(
        MIN_WORKERS, whole_number(MAX_WORKER_BOUND), None, "the fewest workers a scale may leave (elastic)"
    ),
    Annotation(
        MAX_WORKERS, whole_number(MAX_WORKER_BOUND), None, "the most workers a scale may ask for (elastic)"
    ),
    Annotation(
        PROGRESS, progress_format, None, "status.progress from the launcher's log: json, or a line pattern"
    ),
    Annotation(
        STALL_TIMEOUT,
        whole_number(MAX_SECONDS),
        None,
        "the Stalled condition after this many seconds without new launcher output (or progress)",
    ),
    Annotation(
        STALL_ACTION,
        choice(STALL_CONDITION_ONLY, STALL_FAIL),
        STALL_CONDITION_ONLY,
        "what a stall does without a restart policy: only the condition, or fail the job",
    ),
    Annotation(
        HOSTFILE_ADDRESSES,
        choice(ADDRESSES_DNS, ADDRESSES_IP),
        ADDRESSES_DNS,
        "the hostfile names each worker by its DNS name (dns) or its pod IP (ip)",
    ),
)
BY_KEY: Final = {entry.key: entry for entry in TABLE}
