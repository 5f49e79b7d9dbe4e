"""Reading kubeconfig files as kubectl does: a list of files merged (the first to name a cluster, user or
context wins, as does the first current-context), paths relative to the file that names them, and
inline data preferred over a file path."""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpioperator.kube.access import ClusterAccess, basic_auth, bearer_token, bearer_token_file

SECTIONS = {"clusters": "cluster", "users": "user", "contexts": "context"}
# The cluster fields client-go decodes into a Go bool: a quoted "false" there fails the whole file, as it
# does for kubectl. Taken as Python truth, the string "false" would turn verification off.
CLUSTER_FLAGS = ("insecure-skip-tls-verify", "disable-compression")


@dataclass(frozen=True, slots=True)
class Entry:
    body: dict[str, Any]
    # The folder of the file that named this entry: its relative paths are relative to it.
    base: Path


@dataclass(slots=True)
class KubeConfig:
    clusters: dict[str, Entry] = field(default_factory=dict)
    users: dict[str, Entry] = field(default_factory=dict)
    contexts: dict[str, Entry] = field(default_factory=dict)
    current_context: str | None = None

    def context(self, name: str | None) -> tuple[str, dict[str, Any]]:
        chosen = name or self.current_context
        if not chosen:
            raise ValueError("no context chosen and no current-context set")
        entry = self.contexts.get(chosen)
        if entry is None:
            raise LookupError(f"context {chosen!r} not found")
        return chosen, entry.body

    def uses_plugin(self, context: str | None) -> bool:
        """Whether the context's user authenticates through an exec or auth-provider plugin."""
        _, ctx = self.context(context)
        user = self.users.get(str(ctx.get("user") or ""))
        return user is not None and ("exec" in user.body or "auth-provider" in user.body)


def read(paths: str) -> KubeConfig:
    """Merge the files of a KUBECONFIG-style list; files that do not exist are skipped, as kubectl does,
    unless none exists."""
    # yaml is imported only when a kubeconfig is read: an operator in a pod never reads one.
    import yaml

    merged = KubeConfig()
    found = False
    names = [p for p in paths.split(os.pathsep) if p]
    for name in names:
        path = Path(name).expanduser()
        if not path.exists():
            continue
        found = True
        doc = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
        if not isinstance(doc, dict):
            raise ValueError(f"{path} is not a kubeconfig")
        base = path.resolve().parent
        for section, key in SECTIONS.items():
            known: dict[str, Entry] = getattr(merged, section)
            for item in doc.get(section) or ():
                if isinstance(item, dict) and item.get("name") and item["name"] not in known:
                    body = dict(item.get(key) or {})
                    if section == "clusters":
                        _check_flags(path, str(item["name"]), body)
                    known[str(item["name"])] = Entry(body, base)
        merged.current_context = merged.current_context or doc.get("current-context") or None
    if not found:
        raise FileNotFoundError("file not found" if len(names) == 1 else "none of its files exists")
    return merged


def access_for(config: KubeConfig, context: str | None, pool_size: int) -> ClusterAccess:
    """The access the context describes, for users with a static credential, a token file, basic auth or
    a client certificate. Plugin users (exec, auth-provider) are the library's: see `uses_plugin`."""
    _, ctx = config.context(context)
    cluster_name = str(ctx.get("cluster") or "")
    if cluster_name not in config.clusters:
        raise LookupError(f"cluster {cluster_name!r} not found")
    cluster = config.clusters[cluster_name]
    empty = Entry({}, cluster.base)
    user = config.users.get(str(ctx.get("user") or ""), empty)
    c, u = cluster.body, user.body
    if not c.get("server"):
        raise ValueError(f"cluster {cluster_name!r} has no server")
    access = ClusterAccess(
        host=str(c["server"]).rstrip("/"),
        verify=c.get("insecure-skip-tls-verify") is not True,
        tls_server_name=c.get("tls-server-name") or None,
        proxy=c.get("proxy-url") or None,
        pool_size=pool_size,
    )
    if c.get("certificate-authority-data"):
        access.ca_data = base64.b64decode(c["certificate-authority-data"]).decode()
    elif c.get("certificate-authority"):
        access.ca_file = _relative(cluster.base, c["certificate-authority"])
    access.cert_file = _file_or_data(user, "client-certificate")
    access.key_file = _file_or_data(user, "client-key")
    if u.get("token"):
        # Surrounding whitespace (a token pasted with its newline) is dropped, as client-go drops it from
        # token files; a newline inside is refused when the header is made.
        access.credentials = bearer_token(str(u["token"]).strip())
    elif u.get("tokenFile"):
        access.credentials = bearer_token_file(_relative(user.base, u["tokenFile"]))
    elif u.get("username") and u.get("password"):
        access.credentials = basic_auth(str(u["username"]), str(u["password"]))
    return access


def _check_flags(path: Path, cluster: str, body: dict[str, Any]) -> None:
    for flag in CLUSTER_FLAGS:
        value = body.get(flag)
        if value is not None and not isinstance(value, bool):
            raise ValueError(
                f"{path}: cluster {cluster!r}: {flag} must be true or false, not the {type(value).__name__}"
                f" {value!r} (write it without quotes)"
            )


def _relative(base: Path, path: str) -> str:
    return str(base / Path(path).expanduser())


def _file_or_data(entry: Entry, key: str) -> str | None:
    """A path to the PEM of `key`: the file named, or the inline `key-data` written to a private file
    (the TLS layer loads client certificates from files only)."""
    data = entry.body.get(f"{key}-data")
    if data:
        return _private_file(base64.b64decode(data))
    path = entry.body.get(key)
    return _relative(entry.base, path) if path else None


_private_dir: str | None = None


def _private_file(content: bytes) -> str:
    global _private_dir
    if _private_dir is None:
        _private_dir = tempfile.mkdtemp(prefix="mpioperator-kubeconfig-")
        atexit.register(shutil.rmtree, _private_dir, True)
    fd, path = tempfile.mkstemp(dir=_private_dir, suffix=".pem")
    with os.fdopen(fd, "wb") as out:
        out.write(content)
    return path
