"""The aiohttp session a client's requests go through, set up from a ClusterAccess: its connection
limit, TLS (following its files), proxy and TCP keep-alive on long-lived connections.

It is made on the event loop at the first request (a session belongs to the loop it was made on), so a
client may be built before its loop runs, and a missing CA file fails a request, not start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from mpioperator.kube.access import ClusterAccess
from mpioperator.kube.tlsreload import ReloadingTls

# Idle watches otherwise die silently behind proxies and load balancers: a connection idle for 30 s is
# probed, and dropped after 9 unanswered probes 15 s apart.
KEEPALIVE_IDLE_S, KEEPALIVE_INTERVAL_S, KEEPALIVE_PROBES = 30, 15, 9
# How long an idle connection is kept for the next request. The API server closes its side after 90 s
# (Go's default); coming back within this window costs no new handshake.
IDLE_KEEP_S = 60.0
# What aiohttp reads into a response's buffer before it stops reading the socket (it pauses at twice
# this): a watch whose consumer is behind holds the server back by TCP past that.
READ_BUFFER = 256 * 1024


def tls_context(access: ClusterAccess) -> ssl.SSLContext:
    """TLS as the kubeconfig says: its CA (or the system's), its client certificate, or no verification."""
    context = ssl.create_default_context(cafile=access.ca_file, cadata=access.ca_data)
    if not access.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if access.cert_file:
        context.load_cert_chain(access.cert_file, access.key_file)
    context.set_alpn_protocols(["http/1.1"])
    return context


def reloading_tls(access: ClusterAccess) -> ReloadingTls | None:
    """The TLS context for the next connection to `access.host`, made again when the CA, certificate or
    key file changes; None for plain HTTP."""
    if urlsplit(access.host).scheme != "https":
        return None
    files = [f for f in (access.ca_file, access.cert_file, access.key_file) if f]
    return ReloadingTls(functools.partial(tls_context, access), files)


def probe_when_idle(transport: asyncio.BaseTransport | None) -> None:
    """TCP keep-alive probes on a long-lived connection (a watch, a followed log), so that a peer gone
    silently is found out by the kernel. Unary calls need none: each is bounded by its own timeout."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (
            ("TCP_KEEPIDLE", KEEPALIVE_IDLE_S),
            ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL_S),
            ("TCP_KEEPCNT", KEEPALIVE_PROBES),
        ):
            if hasattr(socket, name):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)


def new_session(pool_size: int) -> aiohttp.ClientSession:
    """A session of at most `pool_size` connections at once (watches hold one each for their life).

    TLS is given per request (`ssl=`, the context `reloading_tls` has now): aiohttp keys its pool by that
    context, so calls share kept-alive connections while the files stay the same, and once a rotated
    certificate or CA makes a new context the next call opens a connection with it; connections already
    open (a watch) keep theirs until they close, and idle ones made with the old context are closed after
    IDLE_KEEP_S."""
    connector = aiohttp.TCPConnector(
        limit=pool_size,
        limit_per_host=0,
        keepalive_timeout=IDLE_KEEP_S,
        # Names are resolved as before, by the system's resolver (/etc/hosts, nsswitch), on a thread;
        # aiohttp would otherwise pick c-ares when aiodns happens to be installed. An IP address (the
        # in-cluster host) is not resolved at all.
        resolver=aiohttp.ThreadedResolver(),
    )
    options: dict[str, Any] = {
        "connector": connector,
        # We never ask for compression (as before): the API server's gzip costs more CPU on both sides
        # than the loopback or cluster network saves.
        "skip_auto_headers": ("Accept-Encoding",),
        # So a body comes as sent: one compressed that we did not ask for is refused by the transport,
        # never inflated (a few KiB of gzip can be gigabytes) where the body cap counts what was sent.
        "auto_decompress": False,
        "read_bufsize": READ_BUFFER,
        # No cookies: the API server sets none, and a jar would be consulted on every request.
        "cookie_jar": aiohttp.DummyCookieJar(),
        # Proxies come from the ClusterAccess, never from the process environment behind its back.
        "trust_env": False,
        # Every answer's status is looked at by the caller: an error answer is a typed error there.
        "raise_for_status": False,
    }
    return aiohttp.ClientSession(**options)
