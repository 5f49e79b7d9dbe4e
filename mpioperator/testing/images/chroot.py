"""Run commands inside a root filesystem being built, in throw-away namespaces.

Each command runs under `unshare` in its own mount and PID namespace: /proc, /dev, the host's DNS
config and the shared apt caches are mounted there and vanish with the namespace, so an interrupted
build leaves no mount behind, and no daemon a package script starts outlives the command.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Keeps services from starting when a package is installed (invoke-rc.d's documented hook).
_POLICY_RC_D = "#!/bin/sh\nexit 101\n"

_MOUNT_SCRIPT = r"""
set -e
root=$1; shift
if [ -n "$MPIOPERATOR_CHROOT_READ_ONLY" ]; then
  mount --bind "$root" "$root" && mount -o remount,bind,ro "$root"
fi
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mount -t sysfs -o ro sysfs "$root/sys"
while [ "$1" != -- ]; do
  mount --bind "$1" "$root$2"
  if [ "$3" = ro ]; then mount -o remount,bind,ro "$root$2"; fi
  shift 3
done
shift
if [ -n "$MPIOPERATOR_CHROOT_LOOPBACK" ]; then ip link set lo up; fi
if [ -n "$MPIOPERATOR_CHROOT_HOSTNAME" ]; then hostname "$MPIOPERATOR_CHROOT_HOSTNAME"; fi
exec chroot "$@"
"""


class ChrootError(RuntimeError):
    pass


@dataclass(frozen=True)
class Bind:
    """A host path mounted at `target` (absolute inside the root) for one command."""

    source: Path
    target: str
    read_only: bool = True


@dataclass
class Chroot:
    root: Path
    binds: Sequence[Bind] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def argv(
        self,
        command: Sequence[str],
        *,
        user: str | None = None,
        private_network: bool = False,
        netns: str | None = None,
        hostname: str | None = None,
    ) -> list[str]:
        flags = ["--mount", "--pid", "--kill-child", "--propagation", "private"]
        if private_network:
            flags.append("--net")
        if hostname:
            flags.append("--uts")
        prefix = ["ip", "netns", "exec", netns] if netns else []
        mounts: list[str] = []
        for bind in self.binds:
            mounts += [str(bind.source), bind.target, "ro" if bind.read_only else "rw"]
        userspec = [f"--userspec={user}"] if user else []
        environment = {"PATH": DEFAULT_PATH, "HOME": "/root", "LANG": "C.UTF-8", **self.env}
        env_argv = ["/usr/bin/env", "-i", *(f"{k}={v}" for k, v in environment.items())]
        return [
            *prefix,
            "unshare",
            *flags,
            "/bin/sh",
            "-c",
            _MOUNT_SCRIPT,
            "chroot-run",
            str(self.root),
            *mounts,
            "--",
            *userspec,
            str(self.root),
            *env_argv,
            *command,
        ]

    def _prepare(self) -> list[Path]:
        """Create the bind targets that do not exist yet; returns what to remove afterwards."""
        created: list[Path] = []
        for bind in self.binds:
            target = self.root / bind.target.lstrip("/")
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if bind.source.is_dir():
                target.mkdir()
            else:
                target.touch()
            created.append(target)
        policy = self.root / "usr/sbin/policy-rc.d"
        if not policy.exists():
            policy.write_text(_POLICY_RC_D)
            policy.chmod(0o755)
            created.append(policy)
        return created

    def _host_env(
        self, private_network: bool, hostname: str | None, read_only: bool = False
    ) -> dict[str, str]:
        env = dict(os.environ)
        if read_only:
            env["MPIOPERATOR_CHROOT_READ_ONLY"] = "1"
        if private_network:
            env["MPIOPERATOR_CHROOT_LOOPBACK"] = "1"
        if hostname:
            env["MPIOPERATOR_CHROOT_HOSTNAME"] = hostname
        return env

    def start(
        self,
        command: Sequence[str],
        *,
        log: Path,
        user: str | None = None,
        netns: str | None = None,
        hostname: str | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start a long-running command (a daemon in the foreground); stop it with `stop`."""
        with open(log, "ab") as out:
            return subprocess.Popen(
                self.argv(command, user=user, netns=netns, hostname=hostname),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._host_env(False, hostname),
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )

    def run(
        self,
        command: Sequence[str],
        *,
        user: str | None = None,
        private_network: bool = False,
        netns: str | None = None,
        hostname: str | None = None,
        read_only: bool = False,
        log: Path | None = None,
        timeout: float | None = None,
        capture: bool = False,
    ) -> str:
        """Run `command` in the root; raises ChrootError with the output's tail on a non-zero exit."""
        created = self._prepare()
        env = self._host_env(private_network, hostname, read_only)
        try:
            result = subprocess.run(
                self.argv(
                    command, user=user, private_network=private_network, netns=netns, hostname=hostname
                ),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                timeout=timeout,
                preexec_fn=_die_with_parent,
                check=False,
            )
        finally:
            for path in reversed(created):
                if path.is_dir():
                    path.rmdir()
                else:
                    path.unlink(missing_ok=True)
        output = result.stdout.decode(errors="replace")
        if log is not None:
            with open(log, "a") as handle:
                handle.write(f"$ {' '.join(command)}\n{output}")
        if result.returncode != 0:
            tail = "\n".join(output.splitlines()[-30:])
            raise ChrootError(
                f"{' '.join(command)} failed in {self.root} (exit {result.returncode}):\n{tail}"
            )
        return output if capture else ""

    def shell(self, script: str, **kwargs: object) -> str:
        return self.run(["/bin/sh", "-ec", script], **kwargs)  # type: ignore[arg-type]


def stop(process: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """SIGTERM to `unshare`, whose --kill-child ends the namespace's init and with it every process there."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _die_with_parent() -> None:
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: a killed build takes its chroot with it
