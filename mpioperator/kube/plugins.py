"""Credentials from a kubeconfig user's plugin, every run of it bounded in time.

`exec` plugins speak the ExecCredential protocol (client.authentication.k8s.io v1 and v1beta1) as
client-go runs it: the command with its args and env (plus KUBERNETES_EXEC_INFO, holding the cluster when
`provideClusterInfo` asks), never interactive; its token, or client certificate and key, used until
`expirationTimestamp` and then asked for again. A run that has not finished within the bound is killed
with every process it started and fails the call that needed it with `CredentialPluginError`; calls
that find a valid credential never wait for a run. client-go has no such bound of its own (it kills a
plugin when the request's context ends): ours is `access.PLUGIN_TIMEOUT_S`, the client's default request
timeout, or the loader's `plugin_timeout`.

`auth-provider` plugins (oidc, gcp, azure) stay the official client's, which knows how to refresh them;
its calls are run on a thread of their own and waited for within the same bound.
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import datetime
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson

from mpioperator.kube.access import PLUGIN_TIMEOUT_S
from mpioperator.kube.errors import CredentialPluginError
from mpioperator.kube.privatefiles import write_private

T = TypeVar("T")

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
EXEC_CLUSTER_EXTENSION = "client.authentication.k8s.io/exec"
# The transport reuses credentials for up to 10 s (transport.AUTH_REUSE_S): a credential that expires
# sooner is asked for again now, so no request carries an expired one.
EXPIRY_MARGIN_S = 10.0
# How long a killed plugin is given to be reaped and let go of its pipes.
REAP_S = 5.0


@dataclass(frozen=True, slots=True)
class _Issued:
    headers: dict[str, str]
    # Epoch seconds; None when the plugin set no expiry (used until the process ends, as client-go
    # uses it until an answer says 401).
    expires_at: float | None

    def fresh(self, now: float) -> bool:
        return self.expires_at is None or now < self.expires_at - EXPIRY_MARGIN_S

    def usable(self, now: float) -> bool:
        """Not expired yet, though perhaps due for renewal."""
        return self.expires_at is None or now < self.expires_at


class ExecCredentials:
    """The credentials of an `exec` user: call it for the auth headers. A client certificate the plugin
    hands back is written to `cert_file` and `key_file` (private files, replaced on each run), which the
    TLS layer reads for every new connection."""

    def __init__(
        self,
        spec: Mapping[str, Any],
        cluster: Mapping[str, Any] | None,
        *,
        timeout: float = PLUGIN_TIMEOUT_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        api_version = str(spec.get("apiVersion") or "")
        if api_version not in EXEC_API_VERSIONS:
            raise ValueError(
                f"exec plugin: apiVersion {api_version!r} is not one of {', '.join(EXEC_API_VERSIONS)}"
            )
        if not spec.get("command"):
            raise ValueError("exec plugin: no command")
        if spec.get("interactiveMode") == "Always":
            raise ValueError("exec plugin: interactiveMode Always needs a terminal, and this client has none")
        self._spec = spec
        try:
            self._env = {str(item["name"]): str(item["value"]) for item in spec.get("env") or ()}
        except (KeyError, TypeError):
            raise ValueError("exec plugin: every env entry needs a name and a value") from None
        self._api_version = api_version
        self._cluster = cluster if spec.get("provideClusterInfo") else None
        self._timeout = timeout
        self._clock = clock
        self._issued: _Issued | None = None
        self._lock = threading.Lock()
        self.cert_file: str | None = None
        self.key_file: str | None = None

    @property
    def command(self) -> str:
        return str(self._spec["command"])

    def __call__(self) -> dict[str, str]:
        issued = self._issued
        now = self._clock()
        if issued is not None and issued.fresh(now):
            return issued.headers
        if issued is not None and issued.usable(now):
            if not self._lock.acquire(blocking=False):
                # Another call is renewing it; this one still works meanwhile, so nobody waits.
                return issued.headers
        # One run at a time: callers that need the new credential wait for it, within the bound.
        elif not self._lock.acquire(timeout=self._timeout):
            raise CredentialPluginError(
                f"exec plugin {self.command}: the run another call started has not finished within"
                f" {self._timeout:g} s"
            )
        try:
            issued = self._issued
            if issued is None or not issued.fresh(self._clock()):
                issued = self._issued = self._run()
            return issued.headers
        finally:
            self._lock.release()

    def _run(self) -> _Issued:
        env = {**os.environ, **self._env}
        env["KUBERNETES_EXEC_INFO"] = orjson.dumps(self._exec_info()).decode()
        argv = [self.command, *(str(a) for a in self._spec.get("args") or ())]
        try:
            # A session of its own, so a plugin that hangs is killed with every process it started (a
            # shell script's children would otherwise hold the output pipe open).
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env, start_new_session=True
            )
        except OSError as exc:
            hint = self._spec.get("installHint")
            raise CredentialPluginError(
                f"exec plugin {self.command}: cannot run it ({exc})" + (f"\n\n{hint}" if hint else "")
            ) from exc
        try:
            out, _ = proc.communicate(timeout=self._timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise CredentialPluginError(
                f"exec plugin {self.command} gave no credential within {self._timeout:g} s: killed"
            ) from None
        if proc.returncode != 0:
            raise CredentialPluginError(f"exec plugin {self.command} failed with exit code {proc.returncode}")
        return self._issue(out)

    def _exec_info(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"interactive": False}
        if self._cluster is not None:
            spec["cluster"] = exec_cluster(self._cluster)
        return {"apiVersion": self._api_version, "kind": "ExecCredential", "spec": spec}

    def _issue(self, out: bytes) -> _Issued:
        try:
            credential = orjson.loads(out)
        except orjson.JSONDecodeError as exc:
            raise CredentialPluginError(
                f"exec plugin {self.command}: its output is not JSON: {exc}"
            ) from None
        if not isinstance(credential, dict) or credential.get("kind") != "ExecCredential":
            raise CredentialPluginError(f"exec plugin {self.command}: its output is not an ExecCredential")
        if credential.get("apiVersion") != self._api_version:
            raise CredentialPluginError(
                f"exec plugin {self.command} is configured for {self._api_version} and answered"
                f" {credential.get('apiVersion')!r}"
            )
        status = credential.get("status")
        if not isinstance(status, dict):
            raise CredentialPluginError(f"exec plugin {self.command}: its answer has no status")
        token = status.get("token")
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if bool(cert) != bool(key):
            raise CredentialPluginError(
                f"exec plugin {self.command}: a client certificate needs its key and a key its certificate"
            )
        if not token and not cert:
            raise CredentialPluginError(f"exec plugin {self.command} gave neither a token nor a certificate")
        if cert and key:
            self.cert_file = write_private(str(cert).encode(), self.cert_file)
            self.key_file = write_private(str(key).encode(), self.key_file)
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return _Issued(headers, _expiry(self.command, status.get("expirationTimestamp")))


def exec_cluster(cluster: Mapping[str, Any]) -> dict[str, Any]:
    """The cluster as KUBERNETES_EXEC_INFO shows it to a plugin that asks (provideClusterInfo)."""
    shown: dict[str, Any] = {"server": cluster.get("server")}
    for key in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.get(key) is not None:
            shown[key] = cluster[key]
    if cluster.get("certificate-authority-data"):
        shown["certificate-authority-data"] = cluster["certificate-authority-data"]
    elif cluster.get("certificate-authority"):
        ca = Path(str(cluster["certificate-authority"])).read_bytes()
        shown["certificate-authority-data"] = base64.b64encode(ca).decode()
    for item in cluster.get("extensions") or ():
        if isinstance(item, dict) and item.get("name") == EXEC_CLUSTER_EXTENSION:
            shown["config"] = item.get("extension")
    return shown


def _expiry(command: str, stamp: object) -> float | None:
    if not stamp:
        return None
    try:
        return datetime.datetime.fromisoformat(str(stamp)).timestamp()
    except ValueError:
        raise CredentialPluginError(
            f"exec plugin {command}: expirationTimestamp {stamp!r} is not an RFC 3339 time"
        ) from None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=REAP_S)
    except subprocess.TimeoutExpired:
        # A process that left our session still holds the pipe: stop reading it.
        if proc.stdout is not None:
            proc.stdout.close()
        proc.wait(timeout=REAP_S)


class Bounded(Generic[T]):
    """`source()` run on a thread of its own, waited for at most `timeout`. A run still going when the
    next call comes is waited for again rather than started twice: a hung plugin holds one thread, never
    every caller's."""

    def __init__(self, source: Callable[[], T], what: str, timeout: float = PLUGIN_TIMEOUT_S) -> None:
        self._source = source
        self._what = what
        self._timeout = timeout
        self._lock = threading.Lock()
        self._running: concurrent.futures.Future[T] | None = None

    def __call__(self) -> T:
        with self._lock:
            running = self._running
            if running is None or running.done():
                running = self._running = concurrent.futures.Future()
                threading.Thread(
                    target=self._run, args=(running,), name="kube-credential-plugin", daemon=True
                ).start()
        try:
            return running.result(timeout=self._timeout)
        except TimeoutError:
            raise CredentialPluginError(
                f"{self._what} gave no credential within {self._timeout:g} s"
            ) from None

    def _run(self, future: concurrent.futures.Future[T]) -> None:
        try:
            future.set_result(self._source())
        except BaseException as exc:  # handed to the caller waiting on the future
            future.set_exception(exc)
