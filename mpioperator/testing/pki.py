"""Credentials for a throw-away cluster: the service-account signing key, an admin token, a kubeconfig."""

from __future__ import annotations

import secrets
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


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


def write_kubeconfig(
    path: Path, *, server: str, ca_file: Path, token: str, namespace: str = "default"
) -> Path:
    path.write_text(
        yaml.safe_dump(kubeconfig(server=server, ca_file=ca_file, token=token, namespace=namespace))
    )
    path.chmod(0o600)
    return path
