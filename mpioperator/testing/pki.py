"""Credentials for a throw-away cluster: the service-account signing key, an admin token, kubeconfigs, and
a CA for the real node's certificates."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# Long enough for any test session or demo; the back-dating absorbs a clock that steps between processes.
_VALIDITY = datetime.timedelta(days=7)
_CLOCK_SKEW = datetime.timedelta(minutes=5)


def write_service_account_key(path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def write_admin_token(path: Path) -> str:
    """A static token in system:masters, which bypasses RBAC: for the harness and the components only."""
    token = secrets.token_hex(24)
    path.write_text(f'{token},admin,admin-uid,"system:masters"\n')
    path.chmod(0o600)
    return token


def kubeconfig(*, server: str, ca_file: Path, token: str, namespace: str = "default") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": "user", "user": {"token": token}}],
        "contexts": [
            {"name": "local", "context": {"cluster": "local", "user": "user", "namespace": namespace}}
        ],
        "current-context": "local",
    }


def inline_kubeconfig(
    *, server: str, ca_pem: bytes, token: str, namespace: str = "default"
) -> dict[str, object]:
    """A kubeconfig that names no file: the CA as data, the token inline. Read by a process that cannot
    see this machine's files, or that refuses them (MultiKueue reads a worker's kubeconfig from a Secret,
    and refuses CA files, token files, exec plugins and skipped TLS checks)."""
    config = kubeconfig(server=server, ca_file=Path(), token=token, namespace=namespace)
    config["clusters"] = [
        {
            "name": "local",
            "cluster": {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()},
        }
    ]
    return config


def write_kubeconfig(
    path: Path, *, server: str, ca_file: Path, token: str, namespace: str = "default"
) -> Path:
    path.write_text(
        yaml.safe_dump(kubeconfig(server=server, ca_file=ca_file, token=token, namespace=namespace))
    )
    path.chmod(0o600)
    return path


@dataclass(frozen=True)
class Pair:
    """A certificate and its key, PEM files on disk."""

    cert: Path
    key: Path


class CertificateAuthority:
    """A throw-away cluster CA: it signs the node's client and serving certificates and the API server's
    kubelet client certificate, so every TLS hop between the API server and a kubelet is verified."""

    def __init__(self, directory: Path, name: str = "mpioperator-local-ca") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self._key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _CLOCK_SKEW)
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )
        self.cert = directory / "ca.crt"
        self.cert.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(
        self,
        name: str,
        *,
        common_name: str,
        organizations: tuple[str, ...] = (),
        ips: tuple[str, ...] = (),
        dns_names: tuple[str, ...] = (),
        server: bool = False,
    ) -> Pair:
        """A leaf for a client (default) or a server (with its IP and DNS names), written as NAME.crt/key."""
        key = ec.generate_private_key(ec.SECP256R1())
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
        attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name(attributes))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _CLOCK_SKEW)
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        alternative_names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns_names]
        alternative_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        if alternative_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        pair = Pair(self.directory / f"{name}.crt", self.directory / f"{name}.key")
        pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        pair.key.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        pair.key.chmod(0o600)
        return pair


def write_cert_kubeconfig(path: Path, *, server: str, ca_file: Path, client: Pair) -> Path:
    """A kubeconfig that authenticates with a client certificate (a node's identity)."""
    config = kubeconfig(server=server, ca_file=ca_file, token="")
    config["users"] = [
        {"name": "user", "user": {"client-certificate": str(client.cert), "client-key": str(client.key)}}
    ]
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path
