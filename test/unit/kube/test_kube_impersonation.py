"""A kubeconfig user's impersonation (`as`, `as-uid`, `as-groups`, `as-user-extra`) goes out as
client-go's Impersonate-* header fields on every request: whole answers, streams, and through a proxy."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.kube.config import load_configuration
from mpioperator.kube.errors import KubeConfigError
from mpioperator.kube.transport import Transport, decode
from mpioperator.testing.connect_proxy import ConnectProxy, HeaderRecordingServer, serving
from mpioperator.testing.pki import CertificateAuthority

IMPERSONATING = {
    "token": "t",
    "as": "jane",
    "as-uid": "uid-1",
    "as-groups": ["developers", "ops"],
    "as-user-extra": {"scopes": ["view", "edit"], "ünï/key": ["välue"]},
}
EXPECTED = [
    ("Impersonate-User", "jane"),
    ("Impersonate-Uid", "uid-1"),
    ("Impersonate-Group", "developers"),
    ("Impersonate-Group", "ops"),
    ("Impersonate-Extra-scopes", "view"),
    ("Impersonate-Extra-scopes", "edit"),
    # The key percent-encoded (the API server decodes it), the value sent as UTF-8.
    ("Impersonate-Extra-%C3%BCn%C3%AF%2Fkey", "välue"),
]


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return CertificateAuthority(tmp_path / "pki")


@pytest.fixture
def server(ca: CertificateAuthority) -> Iterator[HeaderRecordingServer]:
    pair = ca.issue("server", common_name="kube", dns_names=("kube.test",), ips=("127.0.0.1",), server=True)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pair.cert, pair.key)
    recording = HeaderRecordingServer(tls)
    with serving(recording):
        yield recording


def kubeconfig(
    path: Path, server: str, ca: CertificateAuthority, user: dict[str, Any], **cluster: Any
) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": {"server": server, "certificate-authority": str(ca.cert), **cluster}}
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    return path


def impersonation_seen(fields: list[tuple[str, str]]) -> list[tuple[str, str]]:
    # http.server reads header values as latin-1: what it shows as two characters was one UTF-8 character.
    return [
        (name, value.encode("latin-1").decode()) for name, value in fields if name.startswith("Impersonate-")
    ]


async def test_impersonation_headers_go_with_whole_answers_and_streams(
    tmp_path: Path, ca: CertificateAuthority, server: HeaderRecordingServer
) -> None:
    path = kubeconfig(tmp_path / "config", f"https://127.0.0.1:{server.port}", ca, IMPERSONATING)
    transport = Transport(load_configuration(kubeconfig=path), "test")
    try:
        answer = await transport.request("GET", "/api/v1/namespaces/unary", timeout=30)
        assert decode(answer)["metadata"]["name"] == "seen"
        stream = await transport.open("/api/v1/namespaces/stream", read_timeout=30)
        assert stream.status == 200
        await stream.read()
        stream.release()
    finally:
        await transport.close()
    assert [path for path, _ in server.requests] == ["/api/v1/namespaces/unary", "/api/v1/namespaces/stream"]
    for _, fields in server.requests:
        assert impersonation_seen(fields) == EXPECTED
        assert ("authorization", "Bearer t") in fields


async def test_impersonation_headers_go_through_a_proxy_too(
    tmp_path: Path, ca: CertificateAuthority, server: HeaderRecordingServer
) -> None:
    proxy = ConnectProxy(routes={"kube.test": "127.0.0.1"})
    path = kubeconfig(
        tmp_path / "config", f"https://kube.test:{server.port}", ca, IMPERSONATING, **{"proxy-url": proxy.url}
    )
    with serving(proxy):
        transport = Transport(load_configuration(kubeconfig=path), "test")
        try:
            decode(await transport.request("GET", "/api/v1/namespaces/proxied", timeout=30))
        finally:
            await transport.close()
    assert [t.target for t in proxy.tunnels] == [f"kube.test:{server.port}"]
    ((_, fields),) = server.requests
    assert impersonation_seen(fields) == EXPECTED


async def test_a_user_without_impersonation_sends_no_impersonate_header(
    tmp_path: Path, ca: CertificateAuthority, server: HeaderRecordingServer
) -> None:
    path = kubeconfig(tmp_path / "config", f"https://127.0.0.1:{server.port}", ca, {"token": "t"})
    transport = Transport(load_configuration(kubeconfig=path), "test")
    try:
        decode(await transport.request("GET", "/api/v1/namespaces/plain", timeout=30))
    finally:
        await transport.close()
    ((_, fields),) = server.requests
    assert impersonation_seen(fields) == []


def test_groups_without_a_user_to_impersonate_are_a_config_error(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    path = kubeconfig(tmp_path / "config", "https://kube.test", ca, {"token": "t", "as-groups": ["ops"]})
    with pytest.raises(KubeConfigError, match="as-groups"):
        load_configuration(kubeconfig=path)


def test_an_impersonated_name_holding_a_newline_is_refused_at_load(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    path = kubeconfig(tmp_path / "config", "https://kube.test", ca, {"token": "t", "as": "jane\nX-Evil: 1"})
    with pytest.raises(KubeConfigError, match="Impersonate-User"):
        load_configuration(kubeconfig=path)
