"""Annotations for habits users bring from other MPI operators (docs/extensions.md).

Debug mode and the generated mpirun line (T9k's MPIJob), a Secret of the user's own for SSH (Kubeflow's
openmpi prototype) and re-created workers when their template changes (FFFFFaraway's operator). All are
opt-in annotations under `mpioperator.io/`: upstream's spec stays as it is, since typed clients built on
upstream's structs drop unknown spec fields on a read-modify-write but keep annotations.

What can be judged from the job alone (a program that is not an absolute path, an MCA key with a space)
is a validation error: the controller's `Invalid` condition and one Warning event, no children, no retry.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from mpioperator.api import accessors
from mpioperator.api import annotation_keys as keys
from mpioperator.api import constants as api
from mpioperator.api.annotation_keys import DEBUG_COMMAND as DEBUG_COMMAND
from mpioperator.api.annotation_keys import DEBUG_MODE as DEBUG_MODE
from mpioperator.api.annotation_keys import DEBUG_SKIP_INIT_CONTAINERS as DEBUG_SKIP_INIT_CONTAINERS
from mpioperator.api.annotation_keys import DEBUG_WORKER_COMMAND as DEBUG_WORKER_COMMAND
from mpioperator.api.annotation_keys import DEFAULT_DEBUG_COMMAND as DEFAULT_DEBUG_COMMAND
from mpioperator.api.annotation_keys import HOSTFILE_PATH as HOSTFILE_PATH
from mpioperator.api.annotation_keys import LAUNCHER_PROGRAM as LAUNCHER_PROGRAM
from mpioperator.api.annotation_keys import MAX_WORDS_BYTES as MAX_WORDS_BYTES
from mpioperator.api.annotation_keys import MCA_PARAMS as MCA_PARAMS
from mpioperator.api.annotation_keys import MPI_HOME as MPI_HOME
from mpioperator.api.annotation_keys import MPIRUN_EXTRA_ARGS as MPIRUN_EXTRA_ARGS
from mpioperator.api.annotation_keys import RESUME_LAUNCHER_COMMAND as RESUME_LAUNCHER_COMMAND
from mpioperator.api.annotation_keys import RESUME_SKIP_INIT_CONTAINERS as RESUME_SKIP_INIT_CONTAINERS
from mpioperator.api.annotation_keys import RESUME_WORKER_COMMAND as RESUME_WORKER_COMMAND
from mpioperator.api.annotation_keys import ROLL_WORKERS as ROLL_WORKERS
from mpioperator.api.annotation_keys import SSH_SECRET as SSH_SECRET
from mpioperator.api.extensions import launch
from mpioperator.api.field_errors import FieldError, JSONString, invalid, not_supported, too_long
from mpioperator.api.objects import Obj

_WORD_KEYS = (DEBUG_COMMAND, LAUNCHER_PROGRAM, MPIRUN_EXTRA_ARGS)
_MCA_KEY = re.compile(r"[A-Za-z0-9_]+")
_MCA_SEPARATORS = re.compile(r"[;\n]")
# A Secret's name: a DNS-1123 subdomain, at most 253 characters.
_SUBDOMAIN_MAX = 253
# Where upstream mounts the hostfile; another path for it may not be there or under it.
_CONFIG_DIR = "/etc/mpi"
# Directories a hostfile's volume may not be, hold or lie under, besides the job's config and SSH keys:
# where the kubelet puts the service account's token (and /run, which /var/run links to), the exec
# agent's delivery directory, and the system's own (the runtime refuses some mounts there, and one over
# the others leaves a container without its programs).
_TOKEN_DIRS = ("/var/run/secrets", "/run/secrets")
_SYSTEM_DIRS = (
    "/bin",
    "/boot",
    "/dev",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/sbin",
    "/sys",
    "/usr",
)
_PATH_MAX = 1024
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


@dataclass(frozen=True, slots=True)
class LauncherProgram:
    """What the generated launcher command runs, parsed from the annotations."""

    program: tuple[str, ...]  # the absolute path, then the program's own arguments
    extra_args: tuple[str, ...]
    mca: tuple[tuple[str, str], ...]
    mpi_home: str | None


@dataclass(frozen=True, slots=True)
class Settings:
    """The conveniences a job asks for, read from its annotations (a bad value reads as absent:
    validation reports it)."""

    debug_mode: bool = False
    roll_workers: bool = False
    # What the launcher runs in debug mode.
    debug_command: tuple[str, ...] = DEFAULT_DEBUG_COMMAND
    launcher_program: LauncherProgram | None = None
    # The user's own SSH Secret, when the job names one.
    ssh_secret: str | None = None
    # Another path where the launcher finds the hostfile, when the job asks for one and names it well.
    hostfile_path: str | None = None


def settings(job: Obj, found: Mapping[str, str]) -> Settings:
    """The conveniences of `job`, whose annotations are `found` (annotation_keys.of)."""
    return Settings(
        debug_mode=keys.flag(found.get(DEBUG_MODE, "")) is True,
        roll_workers=keys.flag(found.get(ROLL_WORKERS, "")) is True,
        debug_command=_words(found.get(DEBUG_COMMAND)) or DEFAULT_DEBUG_COMMAND,
        launcher_program=_launcher_program(job, found),
        ssh_secret=found.get(SSH_SECRET, "").strip() or None,
        hostfile_path=_hostfile_path(job, found),
    )


def hostfile_path(job: Obj) -> str | None:
    return settings(job, keys.of(job)).hostfile_path


def _words(value: str | None) -> tuple[str, ...] | None:
    """Shell words (quotes allowed, no expansion); None when the quoting is broken or the value too long."""
    return () if value is None else keys.shell_words(value)


_too_long = keys.too_long


def shell_words(value: str | None) -> tuple[str, ...] | None:
    """Shell words of an annotation's value (quotes allowed, no expansion); `()` for an absent one, None
    when the quoting is broken or the value longer than MAX_WORDS_BYTES."""
    return _words(value)


def _mca_pairs(value: str) -> tuple[list[tuple[str, str]], list[str]]:
    """key=value pairs separated by newlines or semicolons, and the entries that are not such pairs."""
    pairs, bad = [], []
    for entry in _MCA_SEPARATORS.split(value):
        entry = entry.strip()
        if not entry:
            continue
        key, sep, val = entry.partition("=")
        key, val = key.strip(), val.strip()
        if not sep or not val or _MCA_KEY.fullmatch(key) is None:
            bad.append(entry)
        else:
            pairs.append((key, val))
    return pairs, bad


def launcher_program(job: Obj) -> LauncherProgram | None:
    """The generated command's inputs, or None when the job does not ask for one (or asks badly)."""
    return _launcher_program(job, keys.of(job))


def _launcher_program(job: Obj, found: Mapping[str, str]) -> LauncherProgram | None:
    if LAUNCHER_PROGRAM not in found:
        return None
    words = _words(found[LAUNCHER_PROGRAM])
    resolved = program_path(job, words[0]) if words else None
    if words is None or resolved is None:
        return None  # validation says why; a job it refuses gets no children
    program = (resolved, *words[1:])
    extra = _words(found.get(MPIRUN_EXTRA_ARGS)) or ()
    mca, _ = _mca_pairs(found.get(MCA_PARAMS, ""))
    home = found.get(MPI_HOME, "").strip().rstrip("/") or None
    return LauncherProgram(program, extra, tuple(mca), home)


def program_path(job: Obj, word: str) -> str | None:
    """The program's absolute path: the word itself when absolute; a path with a `/` in it (`./train`,
    `bin/train`) taken in the launcher container's `workingDir`, as a shell in that directory would; None
    when it cannot be known here (no `workingDir`, or a bare name, which a shell would look up in PATH)."""
    if word.startswith("/"):
        return word
    directory = _launcher_container(job).get("workingDir")
    if "/" not in word or not isinstance(directory, str) or not directory.startswith("/"):
        return None
    # `.` and empty segments name the same directory, so they go; `..` stays for the kernel to resolve
    # (through symlinks, as the shell's exec would).
    parts = [part for part in word.split("/") if part not in ("", ".")]
    if not parts or parts[-1] == "..":
        return None
    return directory.rstrip("/") + "/" + "/".join(parts)


def _hostfile_path(job: Obj, found: Mapping[str, str]) -> str | None:
    """Another path where the launcher finds the hostfile (the openmpi prototype's
    `/kubeflow/openmpi/assets/hostfile`), when the job asks for one and names it well."""
    value = found.get(HOSTFILE_PATH)
    if value is None or _hostfile_path_error(job, value) is not None:
        return None
    return value


def _hostfile_path_error(job: Obj, value: str) -> str | None:
    if len(value) > _PATH_MAX:
        return f"must be at most {_PATH_MAX} characters"
    if not value.startswith("/") or posixpath.normpath(value) != value or value.startswith("//"):
        return "must be an absolute path to a file, without '.', '..' or repeated '/'"
    directory = posixpath.dirname(value)
    if directory == "/":
        return "must be in a directory other than '/'"
    taken = {_CONFIG_DIR: "the job's config", accessors.ssh_auth_mount_path(job): "the SSH keys"}
    taken.update(dict.fromkeys(_TOKEN_DIRS, "the service account's token"))
    taken[launch.EXEC_AGENT_DIR] = "the exec agent"
    taken.update(dict.fromkeys(_SYSTEM_DIRS, "the system's files"))
    for mount, what in taken.items():
        if directory == mount or directory.startswith(mount + "/") or mount.startswith(directory + "/"):
            return f"its directory would overlap {mount}, which holds {what}"
    return None


def _launcher_container(job: Obj) -> Obj:
    spec = ((accessors.replica_spec(job, api.LAUNCHER) or {}).get("template") or {}).get("spec") or {}
    containers = spec.get("containers") or [{}]
    first = containers[0]
    return first if isinstance(first, dict) else {}


def validate_conveniences(job: Obj, found: Mapping[str, str] | None = None) -> list[FieldError]:
    """What is wrong with the conveniences' annotations; `found`: the job's annotations when already
    read."""
    found = keys.of(job) if found is None else found
    errors: list[FieldError] = []

    for key in (DEBUG_MODE, ROLL_WORKERS):
        value = found.get(key)
        if value is not None and keys.flag(value) is None:
            errors.append(not_supported(_field(key), JSONString(value), keys.BOOLEANS))
    long = {key for key in _WORD_KEYS if key in found and _too_long(found[key])}
    errors += [too_long(_field(key), MAX_WORDS_BYTES) for key in _WORD_KEYS if key in long]
    for key in (DEBUG_COMMAND, MPIRUN_EXTRA_ARGS):
        if key not in long and _words(found.get(key)) is None:
            errors.append(invalid(_field(key), JSONString(found[key]), "unbalanced quotes"))
    if DEBUG_COMMAND in found and DEBUG_COMMAND not in long and not _words(found[DEBUG_COMMAND]):
        errors.append(invalid(_field(DEBUG_COMMAND), JSONString(found[DEBUG_COMMAND]), "must name a command"))
    if LAUNCHER_PROGRAM in found:
        errors += _program_errors(job, found)
    else:
        for key in (MPIRUN_EXTRA_ARGS, MCA_PARAMS, MPI_HOME):
            if key in found:
                errors.append(invalid(_field(key), JSONString(found[key]), f"needs {LAUNCHER_PROGRAM}"))
    secret = found.get(SSH_SECRET)
    if secret is not None and (
        len(secret.strip()) > _SUBDOMAIN_MAX or _SUBDOMAIN.fullmatch(secret.strip()) is None
    ):
        errors.append(invalid(_field(SSH_SECRET), JSONString(secret), "must be the name of a Secret"))
    hostfile = found.get(HOSTFILE_PATH)
    detail = None if hostfile is None else _hostfile_path_error(job, hostfile)
    if hostfile is not None and detail is not None:
        errors.append(invalid(_field(HOSTFILE_PATH), JSONString(hostfile), detail))
    return errors


_field = keys.field_path


def _program_errors(job: Obj, found: Mapping[str, str]) -> list[FieldError]:
    errors: list[FieldError] = []
    words = _words(found[LAUNCHER_PROGRAM])
    if _too_long(found[LAUNCHER_PROGRAM]):
        pass  # said once, by validate_conveniences
    elif words is None:
        errors.append(
            invalid(_field(LAUNCHER_PROGRAM), JSONString(found[LAUNCHER_PROGRAM]), "unbalanced quotes")
        )
    elif not words or program_path(job, words[0]) is None:
        errors.append(
            invalid(
                _field(LAUNCHER_PROGRAM),
                JSONString(found[LAUNCHER_PROGRAM]),
                "must start with the program's absolute path, or its path relative to the launcher "
                "container's workingDir (./program) when that is set",
            )
        )
    container = _launcher_container(job)
    if container.get("command") or container.get("args"):
        errors.append(
            invalid(
                _field(LAUNCHER_PROGRAM),
                JSONString(found[LAUNCHER_PROGRAM]),
                "the launcher container has its own command or args; set one or the other",
            )
        )
    if MCA_PARAMS in found:
        _, bad = _mca_pairs(found[MCA_PARAMS])
        for entry in bad:
            errors.append(
                invalid(
                    _field(MCA_PARAMS),
                    JSONString(entry),
                    "must be key=value, the key made of letters, digits and underscores",
                )
            )
        implementation = accessors.mpi_implementation(job)
        if implementation != api.OPENMPI:
            errors.append(
                invalid(
                    _field(MCA_PARAMS),
                    JSONString(found[MCA_PARAMS]),
                    f"MCA parameters are Open MPI's; spec.mpiImplementation is {implementation}",
                )
            )
    home = found.get(MPI_HOME)
    if home is not None and not home.strip().startswith("/"):
        errors.append(invalid(_field(MPI_HOME), JSONString(home), "must be an absolute path"))
    return errors
