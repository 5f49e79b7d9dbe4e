"""The SSH key pair pods use to reach each other: ECDSA P-521 in upstream's formats."""

from __future__ import annotations

import base64

from mpioperator.api.names import secret_name
from mpioperator.api.objects import Obj
from mpioperator.api.ownership import child_metadata

PRIVATE_KEY = "ssh-privatekey"
PUBLIC_KEY = "ssh-publickey"
SSH_AUTH_TYPE = "kubernetes.io/ssh-auth"


def new_key_pair() -> tuple[bytes, bytes]:
    """(PEM "EC PRIVATE KEY" with the SEC1 DER, authorized_keys line with a newline)."""
    # Imported here, not at the top: a new leader's time to ready includes every import, and no key is
    # made before its caches are synced (decisions-local L18).
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"


def new_ssh_secret(job: Obj) -> Obj:
    private, public = new_key_pair()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": SSH_AUTH_TYPE,
        "metadata": child_metadata(job, secret_name(job)),
        "data": {
            PRIVATE_KEY: base64.b64encode(private).decode(),
            PUBLIC_KEY: base64.b64encode(public).decode(),
        },
    }


def has_expected_keys(secret: Obj) -> bool:
    """Upstream compares only the sorted key names, never the values, so keys never rotate."""
    return sorted((secret.get("data") or {}).keys()) == [PRIVATE_KEY, PUBLIC_KEY]
