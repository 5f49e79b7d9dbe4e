"""NO_PROXY's rules and the choice of proxy variable, as Go's http.ProxyFromEnvironment (client-go's
default) makes them."""

from __future__ import annotations

import pytest

from mpioperator.kube.proxyenv import env_proxy, uses_proxy


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "proxied"),
    [
        ("kube.example.com", "443", "", True),
        ("kube.example.com", "443", "*", False),
        ("kube.example.com", "443", "example.com", False),
        ("example.com", "443", "example.com", False),
        ("kube.example.com", "443", ".example.com", False),
        ("example.com", "443", ".example.com", True),
        ("example.com", "443", "*.example.com", True),
        ("kube.example.com", "443", "*.example.com", False),
        ("badexample.com", "443", "example.com", True),
        ("kube.example.com", "443", " other.org , EXAMPLE.com ", False),
        ("kube.example.com", "6443", "example.com:6443", False),
        ("kube.example.com", "443", "example.com:6443", True),
        ("10.1.2.3", "443", "10.0.0.0/8", False),
        ("11.1.2.3", "443", "10.0.0.0/8", True),
        ("10.1.2.3", "443", "10.1.2.3", False),
        ("10.1.2.3", "6443", "10.1.2.3:443", True),
        ("fd00::1", "443", "fd00::/64", False),
        ("fd00::1", "443", "[fd00::1]:443", False),
        ("fd00::1", "443", "fd00::1", False),
        ("localhost", "443", "", False),
        ("127.0.0.9", "443", "", False),
        ("::1", "443", "", False),
    ],
)
def test_no_proxy_rules_match_as_client_go_matches_them(
    host: str, port: str, no_proxy: str, proxied: bool
) -> None:
    assert uses_proxy(host, port, no_proxy) is proxied


def test_the_proxy_variable_follows_the_scheme_and_upper_case_comes_first() -> None:
    env = {"HTTPS_PROXY": "https-proxy:3128", "https_proxy": "http://lower:1", "HTTP_PROXY": "http://plain:8"}
    assert env_proxy("https://kube.example.com", env) == "http://https-proxy:3128"
    assert env_proxy("http://kube.example.com", env) == "http://plain:8"
    assert env_proxy("https://kube.example.com", {"https_proxy": "http://lower:1"}) == "http://lower:1"
    assert env_proxy("https://kube.example.com", {"HTTP_PROXY": "http://plain:8"}) is None
    assert env_proxy("https://kube.example.com:6443", {**env, "no_proxy": "example.com:6443"}) is None
    # Under CGI a request's Proxy: header becomes HTTP_PROXY: Go refuses it, so do we.
    assert env_proxy("http://kube.example.com", {**env, "REQUEST_METHOD": "GET"}) is None
