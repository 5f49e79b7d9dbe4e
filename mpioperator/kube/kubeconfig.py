"""Reading kubeconfig files as kubectl does: a list of files merged (the first to name a cluster, user or
context wins, as does the first current-context), paths relative to the file that names them, and
inline data preferred over a file path."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mpioperator.kube.access import (
    PLUGIN_TIMEOUT_S,
    ClusterAccess,
    basic_auth,
    bearer_token,
    bearer_token_file,
)
from mpioperator.kube.requesthead import check_header

if TYPE_CHECKING:
    from mpioperator.kube.plugins import ExecCredentials

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

    def auth_provider(self, context: str | None) -> tuple[str, str] | None:
        """The context's user and the name of its auth-provider plugin (oidc, gcp, azure), which the
        official client runs; None when the user authenticates otherwise."""
        _, ctx = self.context(context)
        name = str(ctx.get("user") or "")
        user = self.users.get(name)
        if user is None or "auth-provider" not in user.body:
            return None
        return name, str((user.body["auth-provider"] or {}).get("name") or "")


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


def access_for(
    config: KubeConfig, context: str | None, pool_size: int, plugin_timeout: float = PLUGIN_TIMEOUT_S
) -> ClusterAccess:
    """The access the context describes, for users with an exec plugin, a static credential, a token
    file, basic auth or a client certificate, with the user's impersonation. An auth-provider user's
    credentials are left to the caller (see `auth_provider`)."""
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
    access.default_headers = impersonation(u)
    if u.get("exec"):
        access.credentials = _exec_credentials(access, user, cluster, plugin_timeout)
    elif u.get("token"):
        # Surrounding whitespace (a token pasted with its newline) is dropped, as client-go drops it from
        # token files; a newline inside is refused when the header is made.
        access.credentials = bearer_token(str(u["token"]).strip())
    elif u.get("tokenFile"):
        access.credentials = bearer_token_file(_relative(user.base, u["tokenFile"]))
    elif u.get("username") and u.get("password"):
        access.credentials = basic_auth(str(u["username"]), str(u["password"]))
    return access


def _exec_credentials(access: ClusterAccess, user: Entry, cluster: Entry, timeout: float) -> ExecCredentials:
    # Imported here: an operator in a pod never runs a plugin.
    from mpioperator.kube.plugins import ExecCredentials

    spec = dict(user.body["exec"])
    # As kubectl: a command with a path separator is relative to the file that names it, a bare name is
    # looked up on PATH.
    if os.sep in str(spec.get("command") or ""):
        spec["command"] = _relative(user.base, spec["command"])
    shown = dict(cluster.body)
    if shown.get("certificate-authority"):
        shown["certificate-authority"] = _relative(cluster.base, shown["certificate-authority"])
    source = ExecCredentials(spec, shown, timeout=timeout)
    # Run once now, as the official loader did: a plugin that cannot give a credential fails the load
    # with its reason, and a client certificate it gives is in place before the first connection.
    source()
    if source.cert_file:
        access.cert_file, access.key_file = source.cert_file, source.key_file
    return source


def impersonation(user: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The Impersonate-* header fields for a kubeconfig user's `as`, `as-uid`, `as-groups` and
    `as-user-extra`, as client-go sends them: extra keys percent-encoded where a header name cannot hold
    the character, values sent as UTF-8."""
    name = str(user.get("as") or "")
    uid = str(user.get("as-uid") or "")
    groups = [str(g) for g in user.get("as-groups") or ()]
    extra: dict[str, Any] = dict(user.get("as-user-extra") or {})
    if not name:
        if uid or groups or extra:
            # kubectl refuses this too, and the API server refuses to impersonate groups without a user.
            raise ValueError("as-uid, as-groups and as-user-extra need the user to impersonate (as)")
        return ()
    fields = [("Impersonate-User", name)]
    if uid:
        fields.append(("Impersonate-Uid", uid))
    fields += [("Impersonate-Group", group) for group in groups]
    for key, values in extra.items():
        for value in values if isinstance(values, list) else [values]:
            fields.append((f"Impersonate-Extra-{_escape_extra_key(str(key))}", str(value)))
    for field_name, value in fields:
        check_header(field_name, value)
    return tuple(fields)


_TOKEN_BYTES = frozenset(b"!#$&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _escape_extra_key(key: str) -> str:
    # The API server percent-decodes the key; '%' itself is escaped so it decodes to itself.
    return "".join(chr(b) if b in _TOKEN_BYTES else f"%{b:02X}" for b in key.encode())


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
        from mpioperator.kube.privatefiles import write_private

        return write_private(base64.b64decode(data))
    path = entry.body.get(key)
    return _relative(entry.base, path) if path else None
