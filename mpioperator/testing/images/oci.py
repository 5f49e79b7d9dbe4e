"""OCI image documents (config, manifest) and their digests, built as plain dicts and canonical JSON.

Pure: no file or network access. A layer is described by two digests: `digest` names the blob as stored
and pushed (equal to `diff_id` for an uncompressed layer), `diff_id` names the uncompressed tar and goes
into the config's rootfs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
LAYER_GZIP_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_json(document: Mapping[str, Any]) -> bytes:
    """Sorted keys and no spaces, so that equal documents always have equal digests."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@dataclass(frozen=True)
class Layer:
    digest: str
    diff_id: str
    size: int
    media_type: str = LAYER_MEDIA_TYPE
    comment: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "diff_id": self.diff_id,
            "size": self.size,
            "media_type": self.media_type,
            "comment": self.comment,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Layer:
        return cls(
            digest=str(data["digest"]),
            diff_id=str(data["diff_id"]),
            size=int(data["size"]),
            media_type=str(data.get("media_type", LAYER_MEDIA_TYPE)),
            comment=str(data.get("comment", "")),
        )


@dataclass(frozen=True)
class RuntimeConfig:
    """What a container runtime reads from the image config's `config` object."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    user: str = ""
    working_dir: str = ""
    exposed_ports: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        config: dict[str, Any] = {}
        if self.entrypoint:
            config["Entrypoint"] = list(self.entrypoint)
        if self.cmd:
            config["Cmd"] = list(self.cmd)
        if self.env:
            config["Env"] = list(self.env)
        if self.user:
            config["User"] = self.user
        if self.working_dir:
            config["WorkingDir"] = self.working_dir
        if self.exposed_ports:
            config["ExposedPorts"] = {port: {} for port in self.exposed_ports}
        if self.labels:
            config["Labels"] = dict(self.labels)
        return config

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuntimeConfig:
        return cls(
            entrypoint=tuple(data.get("Entrypoint") or ()),
            cmd=tuple(data.get("Cmd") or ()),
            env=tuple(data.get("Env") or ()),
            user=str(data.get("User", "")),
            working_dir=str(data.get("WorkingDir", "")),
            exposed_ports=tuple(sorted(data.get("ExposedPorts") or {})),
            labels=dict(data.get("Labels") or {}),
        )


def env_lookup(env: Sequence[str], name: str) -> str | None:
    """The value of `name` in a NAME=value list (the last assignment wins), or None."""
    value = None
    for item in env:
        key, _, rest = item.partition("=")
        if key == name:
            value = rest
    return value


def env_set(env: Sequence[str], name: str, value: str) -> tuple[str, ...]:
    """`env` with `name` set to `value`, in place if it was there, appended otherwise."""
    out = [item for item in env if item.partition("=")[0] != name]
    position = next((i for i, item in enumerate(env) if item.partition("=")[0] == name), len(out))
    out.insert(position, f"{name}={value}")
    return tuple(out)


def image_config(runtime: RuntimeConfig, layers: Sequence[Layer]) -> dict[str, Any]:
    """The OCI image config. No `created` time, so an unchanged image keeps its digest across rebuilds."""
    return {
        "architecture": "amd64",
        "os": "linux",
        "config": runtime.to_json(),
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created_by": layer.comment or "mpioperator image build"} for layer in layers],
    }


def descriptor(media_type: str, digest: str, size: int) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": digest, "size": size}


def image_manifest(config_bytes: bytes, layers: Sequence[Layer]) -> dict[str, Any]:
    return {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": descriptor(CONFIG_MEDIA_TYPE, sha256_digest(config_bytes), len(config_bytes)),
        "layers": [descriptor(layer.media_type, layer.digest, layer.size) for layer in layers],
    }


@dataclass(frozen=True)
class Reference:
    """`repository:tag` as containerd asks a registry mirror for it (no registry host, no docker.io/)."""

    repository: str
    tag: str

    @classmethod
    def parse(cls, text: str) -> Reference:
        name, sep, tag = text.rpartition(":")
        if not sep or "/" in tag or not name:
            raise ValueError(f"image reference {text!r} needs a tag (name:tag)")
        for prefix in ("docker.io/", "registry.k8s.io/"):
            if name.startswith(prefix):
                name = name[len(prefix) :]
        return cls(name, tag)

    def __str__(self) -> str:
        return f"{self.repository}:{self.tag}"
