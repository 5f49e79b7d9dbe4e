"""buildah, run daemonless as root on a store of the project's own (never /var/lib/containers).

RUN steps use chroot isolation (no runtime, no user namespaces); FROM never pulls: every base is built
here and found in the store under the name a Dockerfile gives it (short names resolve to docker.io, as
docker's do).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Short names (`FROM debian:bookworm`, `mpioperator/openmpi`) mean Docker Hub's, as in `docker build`.
REGISTRIES_CONF = 'unqualified-search-registries = ["docker.io"]\nshort-name-mode = "permissive"\n'


class BuildahError(RuntimeError):
    pass


def qualified(name: str) -> str:
    """`name` as the store holds it: registry host, `library/` for Hub's official images, a tag."""
    first, slash, _ = name.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        name = f"docker.io/{name}" if slash else f"docker.io/library/{name}"
    if ":" not in name.rpartition("/")[2] and "@" not in name:
        name += ":latest"
    return name


def repository_path(name: str) -> str:
    """`repo:tag` as a registry mirror of docker.io or registry.k8s.io is asked for it (no host)."""
    host, _, rest = qualified(name).partition("/")
    return rest if host in ("docker.io", "registry.k8s.io") else f"{host}/{rest}"


@dataclass(frozen=True)
class Buildah:
    root: Path  # --root and --runroot live under it
    log: Path

    def command(self, *args: str) -> list[str]:
        return [
            "buildah",
            "--root",
            str(self.root / "storage"),
            "--runroot",
            str(self.root / "run"),
            "--storage-driver",
            "overlay",
            *args,
        ]

    def environment(self) -> dict[str, str]:
        conf = self.root / "registries.conf"
        if not conf.exists() or conf.read_text() != REGISTRIES_CONF:
            conf.parent.mkdir(parents=True, exist_ok=True)
            conf.write_text(REGISTRIES_CONF)
        return {**os.environ, "CONTAINERS_REGISTRIES_CONF": str(conf), "BUILDAH_ISOLATION": "chroot"}

    def run(self, *args: str, capture: bool = False) -> str:
        """Runs buildah; its output goes to the log (or is returned); failing raises with the log's tail."""
        argv = self.command(*args)
        with open(self.log, "a") as log:
            log.write(f"$ {' '.join(argv)}\n")
            log.flush()
            result = subprocess.run(
                argv,
                stdout=subprocess.PIPE if capture else log,
                stderr=log,
                text=True,
                env=self.environment(),
                check=False,
            )
        if result.returncode != 0:
            raise BuildahError(f"buildah {args[0]} failed (exit {result.returncode}):\n{self.log_tail()}")
        return result.stdout if capture else ""

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:]) + f"\n(full log: {self.log})"

    def image_ids(self) -> dict[str, str]:
        """Every tagged image of the store, qualified name -> image ID."""
        out = self.run("images", "--json", "--no-trunc", capture=True)
        ids: dict[str, str] = {}
        for image in json.loads(out or "[]"):
            for name in image.get("names") or []:
                ids[name] = image["id"].removeprefix("sha256:")
        return ids

    def image_id(self, name: str) -> str:
        return self.run(
            "inspect", "--type", "image", "--format", "{{.FromImageID}}", name, capture=True
        ).strip()

    def image_size(self, name: str) -> str:
        """As buildah reports it ("131 MB": the uncompressed layers)."""
        out = self.run("images", "--json", name, capture=True)
        return ", ".join(str(image.get("size", "?")) for image in json.loads(out or "[]"))

    def bud(
        self,
        name: str,
        dockerfile: Path,
        context: Path,
        *,
        build_args: Mapping[str, str],
        volumes: Sequence[str] = (),
    ) -> str:
        """Builds `name` from `dockerfile` (never pulling; reproducible timestamps); returns its image ID."""
        args = ["bud", "--isolation", "chroot", "--pull=never", "--layers", "--force-rm", "--timestamp", "0"]
        args += ["-f", str(dockerfile), "-t", qualified(name)]
        for key, value in sorted(build_args.items()):
            args += ["--build-arg", f"{key}={value}"]
        for volume in volumes:
            args += ["-v", volume]
        self.run(*args, str(context))
        return self.image_id(qualified(name))

    def prune(self) -> None:
        """Removes untagged images: replaced ones and the layer cache of RUN and COPY steps."""
        self.run("rmi", "--prune")

    def push(self, name: str, registry: str) -> None:
        """Pushes `name` to `registry` (host:port, plain HTTP) under its mirror repository path."""
        self.run(
            "push", "--tls-verify=false", qualified(name), f"docker://{registry}/{repository_path(name)}"
        )
