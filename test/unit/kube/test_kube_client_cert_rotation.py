"""A client certificate rotated in its files is the one new connections present, for unary calls and
watches alike, and a pair caught half-written does not take the client down. Against a loopback TLS
server that requires client certificates and records which one each connection showed."""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mpioperator.kube.client import KubeClient
from mpioperator.kube.list_options import ListOptions
from mpioperator.kube.resources import NAMESPACES


@dataclass(frozen=True)
class Issued:
    cert_pem: bytes
    key_pem: bytes
    serial: int


class ThrowawayCA:
    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "throwaway test CA")])
        self.cert = (
            self._builder(self.name, self.key.public_key(), x509.random_serial_number())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self.key, hashes.SHA256())
        )
        self.pem = self.cert.public_bytes(serialization.Encoding.PEM)

    def _builder(
        self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey, serial: int
    ) -> x509.CertificateBuilder:
        now = datetime.datetime.now(datetime.UTC)
        return (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.name)
            .public_key(public_key)
            .serial_number(serial)
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
        )

    def issue(self, common_name: str, *, server: bool = False) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        serial = x509.random_serial_number()
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        builder = self._builder(subject, key.public_key(), serial)
        if server:
            san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
            builder = builder.add_extension(san, critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        key_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return Issued(cert.public_bytes(serialization.Encoding.PEM), key_pem, serial)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RecordingServer

    def do_GET(self) -> None:
        assert isinstance(self.connection, ssl.SSLSocket)
        peer = self.connection.getpeercert() or {}
        self.server.presented.append(int(str(peer.get("serialNumber", "0")), 16))
        self.server.alpn.append(self.connection.selected_alpn_protocol())
        if "watch=true" in self.path:
            event = {"type": "ADDED", "object": {"metadata": {"name": "seen", "resourceVersion": "2"}}}
            body = orjson.dumps(event) + b"\n"
        else:
            body = orjson.dumps({"kind": "Namespace", "metadata": {"name": "seen"}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if not self.server.keep_alive:
            # Every connection ends with its answer, so each call is a new connection and a new handshake.
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


class RecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, tls: ssl.SSLContext) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.socket = tls.wrap_socket(self.socket, server_side=True)
        # The serial number of the client certificate each connection presented, in order.
        self.presented: list[int] = []
        # The protocol each connection agreed on by ALPN (the server offers h2 first).
        self.alpn: list[str | None] = []
        # Whether connections stay open after an answer, and how many the clients opened.
        self.keep_alive = False
        self.connections = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections += 1
        super().process_request(request, client_address)

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a refused handshake is the client's failure to see, not the server's to print


@dataclass
class Setup:
    ca: ThrowawayCA
    server: RecordingServer
    cert_file: Path
    key_file: Path
    kubeconfig: Path

    def presented(self, names: dict[Issued, str]) -> list[str]:
        """Which of the named certificates each connection presented, in order."""
        by_serial = {issued.serial: name for issued, name in names.items()}
        return [by_serial.get(serial, f"unknown serial {serial}") for serial in self.server.presented]

    def install(self, issued: Issued) -> None:
        # Written in place, as a careless rotation would. File times are coarse (a few milliseconds), so
        # the certificates are told apart by size too: the rotated one has a longer name.
        self.cert_file.write_bytes(issued.cert_pem)
        self.key_file.write_bytes(issued.key_pem)

    def old_and_new(self) -> tuple[Issued, Issued]:
        """The operator's certificate, installed, and the one it is rotated to later (the longer name)."""
        old, new = self.ca.issue("operator"), self.ca.issue("operator-rotated")
        self.install(old)
        return old, new


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    ca = ThrowawayCA()
    (tmp_path / "ca.crt").write_bytes(ca.pem)
    served = ca.issue("127.0.0.1", server=True)
    (tmp_path / "server.crt").write_bytes(served.cert_pem)
    (tmp_path / "server.key").write_bytes(served.key_pem)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    tls.load_verify_locations(tmp_path / "ca.crt")
    tls.verify_mode = ssl.CERT_REQUIRED
    tls.set_alpn_protocols(["h2", "http/1.1"])
    server = RecordingServer(tls)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": f"https://127.0.0.1:{port}",
                    "certificate-authority": str(tmp_path / "ca.crt"),
                },
            }
        ],
        "users": [
            {
                "name": "u",
                "user": {
                    "client-certificate": str(tmp_path / "client.crt"),
                    "client-key": str(tmp_path / "client.key"),
                },
            }
        ],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump(config))
    try:
        yield Setup(ca, server, tmp_path / "client.crt", tmp_path / "client.key", tmp_path / "kubeconfig")
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextlib.asynccontextmanager
async def client_of(setup: Setup) -> AsyncIterator[KubeClient]:
    client = KubeClient.from_kubeconfig(setup.kubeconfig, protobuf=False)
    try:
        yield client
    finally:
        await client.close()


async def first_event(client: KubeClient) -> None:
    events = client.watch(NAMESPACES, None, ListOptions(resource_version="1", timeout_seconds=30))
    try:
        await anext(events)
    finally:
        await events.aclose()


async def test_calls_after_the_certificate_files_are_rotated_present_the_new_certificate(
    setup: Setup,
) -> None:
    old, new = setup.old_and_new()
    async with client_of(setup) as client:
        await client.get(NAMESPACES, "seen")
        await first_event(client)

        setup.install(new)
        await client.get(NAMESPACES, "seen")
        await first_event(client)

    assert setup.presented({old: "old", new: "new"}) == ["old", "old", "new", "new"]
    assert setup.server.alpn == ["http/1.1"] * 4, "the client offers HTTP/1.1 only"


async def test_a_half_written_pair_keeps_the_previous_certificate_until_the_new_pair_is_whole(
    setup: Setup,
) -> None:
    old, new = setup.old_and_new()
    async with client_of(setup) as client:
        await client.get(NAMESPACES, "seen")

        # The new certificate is in place but its key is not yet: the two do not make a pair.
        setup.cert_file.write_bytes(new.cert_pem)
        await client.get(NAMESPACES, "seen")
        # A key cut short while it is written does not load either.
        setup.key_file.write_bytes(new.key_pem[: len(new.key_pem) // 2])
        await client.get(NAMESPACES, "seen")

        setup.key_file.write_bytes(new.key_pem)
        await client.get(NAMESPACES, "seen")

    assert setup.presented({old: "old", new: "new"}) == ["old", "old", "old", "new"]


async def test_calls_share_one_kept_alive_connection_until_the_files_are_rotated_then_present_the_new(
    setup: Setup,
) -> None:
    setup.server.keep_alive = True
    old, new = setup.old_and_new()
    async with client_of(setup) as client:
        for _ in range(3):
            await client.get(NAMESPACES, "seen")
        setup.install(new)
        for _ in range(2):
            await client.get(NAMESPACES, "seen")

    assert setup.presented({old: "old", new: "new"}) == ["old", "old", "old", "new", "new"]
    assert setup.server.connections == 2, "one connection for each certificate"
