"""The proxy the environment names for a server, chosen as client-go chooses it (Go's
`http.ProxyFromEnvironment`): HTTPS_PROXY for https servers, HTTP_PROXY for http ones (upper case before
lower case, the first non-empty wins), and none where NO_PROXY matches or the server is loopback.

NO_PROXY is a comma-separated list; each entry is `*` (no proxy at all), an IP or CIDR (`10.0.0.1`,
`10.0.0.0/8`, `::1`), or a domain: `example.com` matches itself and every name under it, `.example.com`
and `*.example.com` only the names under it; any of them with `:port` to match that port only. The
server's port is its URL's, else 443 or 80. Names are compared as written (Go also converts
internationalised names to their ASCII form; cluster servers are ASCII names or IPs).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Mapping
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def env_proxy(server: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The proxy URL to reach `server` (a URL) through, or None to connect directly."""
    env = os.environ if environ is None else environ
    url = urlsplit(server)
    if url.scheme == "https":
        proxy = _first(env, "HTTPS_PROXY", "https_proxy")
    elif url.scheme == "http":
        # Under CGI, HTTP_PROXY can be set by a request's `Proxy:` header (httpoxy): Go refuses it there.
        proxy = None if env.get("REQUEST_METHOD") else _first(env, "HTTP_PROXY", "http_proxy")
    else:
        proxy = None
    if not proxy:
        return None
    host = (url.hostname or "").lower()
    port = str(url.port or (443 if url.scheme == "https" else 80))
    if not uses_proxy(host, port, _first(env, "NO_PROXY", "no_proxy") or ""):
        return None
    return _with_scheme(proxy)


def uses_proxy(host: str, port: str, no_proxy: str) -> bool:
    """Whether a request to host:port goes through the proxy, given NO_PROXY's value."""
    if host == "localhost":
        return False
    ip = _ip(host)
    if ip is not None and ip.is_loopback:
        return False
    return not any(rule.matches(host, port, ip) for rule in _rules(no_proxy))


class _Rule:
    # A plain class: a dataclass costs a millisecond to define, paid by every start-up in a pod.
    __slots__ = ("address", "everything", "exact", "network", "port", "suffix")

    def __init__(
        self,
        *,
        everything: bool = False,
        network: Network | None = None,
        address: Address | None = None,
        suffix: str = "",
        exact: bool = False,
        port: str = "",
    ) -> None:
        self.everything = everything
        self.network = network
        self.address = address
        # A domain with its leading dot; `exact` when written without one, so it also matches itself.
        self.suffix = suffix
        self.exact = exact
        self.port = port

    def matches(self, host: str, port: str, ip: Address | None) -> bool:
        if self.everything:
            return True
        if self.network is not None:
            return ip is not None and ip in self.network
        if self.address is not None:
            found = ip is not None and ip == self.address
        else:
            found = host.endswith(self.suffix) or (self.exact and host == self.suffix[1:])
        return found and (not self.port or self.port == port)


def _rules(no_proxy: str) -> list[_Rule]:
    rules: list[_Rule] = []
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return [_Rule(everything=True)]
        if "/" in entry:
            # Not a CIDR: as a domain holding a slash it could match no host name either.
            with contextlib.suppress(ValueError):
                rules.append(_Rule(network=ipaddress.ip_network(entry, strict=False)))
            continue
        host, port = _split_host_port(entry)
        ip = _ip(host)
        if ip is not None:
            rules.append(_Rule(address=ip, port=port))
            continue
        if not host:
            continue
        if host.startswith("*."):
            host = host[1:]
        exact = not host.startswith(".")
        rules.append(_Rule(suffix=host if not exact else f".{host}", exact=exact, port=port))
    return rules


def _split_host_port(entry: str) -> tuple[str, str]:
    """`host:port`, `[v6]:port` or a bare host (an IPv6 address without brackets included)."""
    if entry.startswith("["):
        end = entry.find("]")
        if end > 0 and entry[end + 1 : end + 2] == ":":
            return entry[1:end], entry[end + 2 :]
        return entry, ""
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, port
    return entry, ""


def _ip(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _first(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        if env.get(name):
            return env[name]
    return None


def _with_scheme(proxy: str) -> str:
    # Go takes `proxy:3128` and `10.0.0.1:3128` as http:// proxies.
    url = urlsplit(proxy)
    if not url.scheme or not url.netloc:
        return f"http://{proxy}"
    return proxy
