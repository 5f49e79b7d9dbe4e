"""How to reach one API server: where it is, how to trust it, who we are to it. Loaders (kube/config.py)
fill it in; the transport builds its connection pool from it."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mpioperator.kube.proxyenv import env_proxy

# How long one run of a kubeconfig user's credential plugin (exec, auth-provider) may take before the
# call that needed it fails: the client's default request timeout. client-go has no bound of its own.
PLUGIN_TIMEOUT_S = 30.0

# Auth headers for the next requests; the transport asks again at most every AUTH_REUSE_S.
Credentials = Callable[[], dict[str, str]]


def no_credentials() -> dict[str, str]:
    return {}


def bearer_token(token: str) -> Credentials:
    headers = {"authorization": f"Bearer {token}"}
    return lambda: headers


def bearer_token_file(path: str | Path) -> Credentials:
    """Re-read on every ask: projected service-account tokens and kubeconfig token files are rotated."""

    def read() -> dict[str, str]:
        token = Path(path).read_text().strip()
        return {"authorization": f"Bearer {token}"} if token else {}

    return read


def basic_auth(username: str, password: str) -> Credentials:
    encoded = base64.b64encode(f"{username}:{password}".encode()).decode()
    headers = {"authorization": f"Basic {encoded}"}
    return lambda: headers


@dataclass(slots=True)
class ClusterAccess:
    host: str
    ca_file: str | None = None
    # PEM text, from a kubeconfig's certificate-authority-data.
    ca_data: str | None = None
    verify: bool = True
    tls_server_name: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    # The proxy every connection to `host` goes through (an http:// or https:// URL; the transport refuses
    # others, a socks5:// one included, as aiohttp speaks HTTP proxies only), already
    # chosen by the loader: a kubeconfig cluster's proxy-url, else the environment's HTTPS_PROXY/HTTP_PROXY
    # unless NO_PROXY exempts the host (kube/proxyenv.py). None: connect directly. A user and password
    # in it (http://user:pass@proxy:3128) are the proxy's credentials (Proxy-Authorization: Basic).
    proxy: str | None = None
    # Whether `proxy` came from the environment: then it is chosen again if the host changes.
    proxy_from_env: bool = False
    # Header fields sent with every request besides the credentials' (impersonation: Impersonate-User,
    # Impersonate-Uid, one Impersonate-Group per group, Impersonate-Extra-<key>). Pairs, since a name
    # may repeat. Checked (no CR, LF, NUL); values are text, sent as UTF-8 as client-go sends them.
    default_headers: tuple[tuple[str, str], ...] = ()
    credentials: Credentials = field(default=no_credentials)
    # Every open watch pins a connection; a pool too small for them churns connections under load.
    pool_size: int = 16

    def choose_proxy(self, environ: Mapping[str, str] | None = None) -> None:
        """Take the environment's proxy for `host` unless one was named (a cluster's proxy-url wins)."""
        if self.proxy is None or self.proxy_from_env:
            self.proxy = env_proxy(self.host, environ)
            self.proxy_from_env = True
