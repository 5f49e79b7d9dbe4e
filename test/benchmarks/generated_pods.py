"""The generated alternative to the hand-written protobuf decoder, for the decoder benchmark only.

protoc (from grpcio-tools) compiles k8s.io/api's core/v1 `generated.proto` and what it imports, found in
the Go module cache at the control plane's version, into a descriptor set; the `protobuf` package's
runtime (upb, in C) builds the PodList message class from it and parses whole lists. The projection is
then read off the parsed messages with the same JSON rules the hand-written decoder follows, so both
produce the same dicts and only their cost differs.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpioperator.api.objects import Obj
from mpioperator.kube.protoapi import MAGIC

K8S_MODULE_VERSION = "v0.36.3"  # k8s.io/api and apimachinery of Kubernetes v1.36.3 (hack/versions.env)
_PROTOS = (
    "k8s.io/api/core/v1/generated.proto",
    "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/generated.proto",
    "k8s.io/apimachinery/pkg/runtime/schema/generated.proto",
    "k8s.io/apimachinery/pkg/util/intstr/generated.proto",
    "k8s.io/apimachinery/pkg/api/resource/generated.proto",
)


def _module_cache() -> Path:
    found = (
        os.environ.get("GOMODCACHE")
        or subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False
        ).stdout.strip()
    )
    return Path(found or Path.home() / "go/pkg/mod")


def _descriptor_set(out: Path) -> bytes | None:
    from grpc_tools import protoc

    cache = _module_cache() / "k8s.io"
    root = out / "include"
    (root / "k8s.io").mkdir(parents=True)
    for module in ("api", "apimachinery"):
        source = cache / f"{module}@{K8S_MODULE_VERSION}"
        if not source.is_dir():
            return None
        (root / "k8s.io" / module).symlink_to(source)
    target = out / "k8s.desc"
    code = protoc.main(
        ["protoc", f"-I{root}", f"--descriptor_set_out={target}", "--include_imports", *_PROTOS]
    )
    return target.read_bytes() if code == 0 else None


def _pod_list_class() -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    with tempfile.TemporaryDirectory() as tmp:
        raw = _descriptor_set(Path(tmp))
    if raw is None:
        return None
    files = descriptor_pb2.FileDescriptorSet.FromString(raw)
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("k8s.io.api.core.v1.PodList"))


def _time(message: Any) -> str | None:
    if not message.HasField("seconds"):
        return None
    t = time.gmtime(message.seconds)
    return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}Z"


def _owner(ref: Any) -> Obj:
    out: Obj = {"apiVersion": ref.apiVersion, "kind": ref.kind, "name": ref.name, "uid": ref.uid}
    if ref.HasField("controller"):
        out["controller"] = ref.controller
    if ref.HasField("blockOwnerDeletion"):
        out["blockOwnerDeletion"] = ref.blockOwnerDeletion
    return out


def _project(pod: Any) -> Obj:
    m = pod.metadata
    meta: Obj = {}
    for name in ("name", "namespace", "uid", "resourceVersion"):
        value = getattr(m, name)
        if value:
            meta[name] = value
    created = _time(m.creationTimestamp)
    if created is not None:
        meta["creationTimestamp"] = created
    if m.HasField("deletionTimestamp"):
        meta["deletionTimestamp"] = _time(m.deletionTimestamp)
    if m.ownerReferences:
        meta["ownerReferences"] = [_owner(ref) for ref in m.ownerReferences]
    if m.labels:
        meta["labels"] = dict(m.labels)
    s = pod.status
    status: Obj = {}
    for name in ("reason", "message", "phase"):
        value = getattr(s, name)
        if value:
            status[name] = value
    if s.conditions:
        status["conditions"] = [{"type": c.type, "status": c.status} for c in s.conditions]
    return {"metadata": meta, "status": status}


def generated_decoder() -> Callable[[bytes], Obj] | None:
    """A decoder of a protobuf PodList body into the pod projection, or None without protoc/protobuf."""
    try:
        pod_list = _pod_list_class()
    except ImportError:
        return None
    if pod_list is None:
        return None
    from google.protobuf import message_factory

    unknown_class = message_factory.GetMessageClass(
        pod_list.DESCRIPTOR.file.pool.FindMessageTypeByName("k8s.io.apimachinery.pkg.runtime.Unknown")
    )

    def decode(body: bytes) -> Obj:
        assert body.startswith(MAGIC)
        envelope = unknown_class.FromString(body[len(MAGIC) :])
        listed = pod_list.FromString(envelope.raw)
        meta: Obj = {}
        for name in ("resourceVersion", "continue"):
            value = getattr(listed.metadata, name)
            if value:
                meta[name] = value
        return {"metadata": meta, "items": [_project(pod) for pod in listed.items]}

    return decode
