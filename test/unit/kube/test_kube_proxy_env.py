"""Proxies from the environment as client-go takes them: HTTPS_PROXY for https servers, NO_PROXY's rules,
loopback never proxied, a cluster's proxy-url first; for kubeconfigs and in-cluster alike. The requests
go through a real CONNECT proxy on loopback that alone knows where the server's name leads."""

from __future__ import annotations

import base64
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from mpioperator.kube import errors
from mpioperator.kube.config import in_cluster_access, load_configuration
from mpioperator.kube.transport import Transport, decode
from mpioperator.testing.connect_proxy import ConnectProxy, HeaderRecordingServer, serving
from mpioperator.testing.pki import CertificateAuthority

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


@dataclass
class Site:
    ca: CertificateAuthority
    server: HeaderRecordingServer
    proxy: ConnectProxy

    def kubeconfig(self, path: Path, server: str, **cluster: object) -> Path:
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "c",
                    "cluster": {"server": server, "certificate-authority": str(self.ca.cert), **cluster},
                }
            ],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "ctx",
        }
        path.write_text(yaml.safe_dump(doc))
        return path


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    ca = CertificateAuthority(tmp_path / "pki")
    # Names only the proxy can reach: kube.test resolves nowhere, 10.96.0.1 is a service IP.
    pair = ca.issue("server", common_name="kube", dns_names=("kube.test",), ips=("10.96.0.1",), server=True)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pair.cert, pair.key)
    server = HeaderRecordingServer(tls)
    proxy = ConnectProxy(routes={"kube.test": "127.0.0.1", "10.96.0.1": "127.0.0.1"})
    with serving(server), serving(proxy):
        yield Site(ca, server, proxy)


async def get_namespace(transport: Transport) -> str:
    try:
        return str(
            decode(await transport.request("GET", "/api/v1/namespaces/seen", timeout=30))["metadata"]["name"]
        )
    finally:
        await transport.close()


async def test_a_kubeconfig_server_is_reached_through_https_proxy_from_the_environment(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", site.proxy.url)
    path = site.kubeconfig(tmp_path / "config", f"https://kube.test:{site.server.port}")
    access = load_configuration(kubeconfig=path)
    assert access.proxy == site.proxy.url
    assert await get_namespace(Transport(access, "test")) == "seen"
    assert [t.target for t in site.proxy.tunnels] == [f"kube.test:{site.server.port}"]
    assert [path for path, _ in site.server.requests] == ["/api/v1/namespaces/seen"]


async def test_a_user_and_password_in_the_proxy_url_are_sent_to_the_proxy(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", site.proxy.url.replace("://", "://jane:s%40cret@"))
    path = site.kubeconfig(tmp_path / "config", f"https://kube.test:{site.server.port}")
    assert await get_namespace(Transport(load_configuration(kubeconfig=path), "test")) == "seen"
    (tunnel,) = site.proxy.tunnels
    expected = "Basic " + base64.b64encode(b"jane:s@cret").decode()
    assert {k.lower(): v for k, v in tunnel.headers.items()}["proxy-authorization"] == expected


async def test_no_proxy_naming_the_server_sends_the_request_past_the_proxy(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("https_proxy", site.proxy.url)
    monkeypatch.setenv("no_proxy", "other.example,.test")
    path = site.kubeconfig(tmp_path / "config", f"https://kube.test:{site.server.port}")
    access = load_configuration(kubeconfig=path)
    assert access.proxy is None
    # Straight to kube.test, a name no resolver knows: the client tried on its own and the proxy saw nothing.
    with pytest.raises(errors.ApiError) as failed:
        await get_namespace(Transport(access, "test"))
    assert failed.value.status == 0
    assert site.proxy.tunnels == []


async def test_a_clusters_proxy_url_wins_over_the_environment_and_no_proxy(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # the discard port: nothing proxies there
    monkeypatch.setenv("NO_PROXY", "kube.test")
    path = site.kubeconfig(
        tmp_path / "config", f"https://kube.test:{site.server.port}", **{"proxy-url": site.proxy.url}
    )
    assert await get_namespace(Transport(load_configuration(kubeconfig=path), "test")) == "seen"
    assert [t.target for t in site.proxy.tunnels] == [f"kube.test:{site.server.port}"]


async def test_in_cluster_the_service_address_is_reached_through_https_proxy(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("sa-token")
    (account / "ca.crt").write_bytes(site.ca.cert.read_bytes())
    env = {
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "KUBERNETES_SERVICE_PORT": str(site.server.port),
        "HTTPS_PROXY": site.proxy.url,
        "NO_PROXY": "kube.test,.cluster.local",
    }
    access = in_cluster_access(16, environ=env, account=account)
    assert access.proxy == site.proxy.url
    assert await get_namespace(Transport(access, "test")) == "seen"
    assert [t.target for t in site.proxy.tunnels] == [f"10.96.0.1:{site.server.port}"]
    ((_, fields),) = site.server.requests
    assert ("authorization", "Bearer sa-token") in fields


async def test_a_loopback_server_is_never_proxied(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", site.proxy.url)
    path = site.kubeconfig(
        tmp_path / "config", f"https://127.0.0.1:{site.server.port}", **{"tls-server-name": "kube.test"}
    )
    access = load_configuration(kubeconfig=path)
    assert access.proxy is None
    assert await get_namespace(Transport(access, "test")) == "seen"
    assert site.proxy.tunnels == []


def proxy_of(transport: Transport) -> str | None:
    return transport.access.proxy


async def test_a_host_override_chooses_the_environments_proxy_again(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", site.proxy.url)
    path = site.kubeconfig(
        tmp_path / "config", f"https://kube.test:{site.server.port}", **{"tls-server-name": "kube.test"}
    )
    transport = Transport(load_configuration(kubeconfig=path), "test")
    assert proxy_of(transport) == site.proxy.url
    # As --master does: the new host is loopback, which is never proxied.
    transport.override_host(f"https://127.0.0.1:{site.server.port}")
    assert proxy_of(transport) is None
    # Streams and whole answers alike go straight to the server.
    stream = await transport.open("/api/v1/namespaces/stream", read_timeout=30)
    assert stream.status == 200
    await stream.read()
    stream.release()
    assert await get_namespace(transport) == "seen"
    assert site.proxy.tunnels == []


async def test_an_https_proxy_is_trusted_through_the_clusters_ca_as_client_go_trusts_it(
    site: Site, tmp_path: Path
) -> None:
    # The proxy's certificate is signed by the cluster's CA, which no system trust store holds.
    pair = site.ca.issue("proxy", common_name="proxy", ips=("127.0.0.1",), server=True)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(pair.cert, pair.key)
    proxy = ConnectProxy(routes={"kube.test": "127.0.0.1"}, tls=tls)
    with serving(proxy):
        path = site.kubeconfig(
            tmp_path / "config", f"https://kube.test:{site.server.port}", **{"proxy-url": proxy.url}
        )
        assert await get_namespace(Transport(load_configuration(kubeconfig=path), "test")) == "seen"
    assert proxy.url.startswith("https://")
    assert [t.target for t in proxy.tunnels] == [f"kube.test:{site.server.port}"]
