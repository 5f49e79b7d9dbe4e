"""The SSH Secret: ECDSA P-521 in upstream's encodings, and the key-set check of D5 #6."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mpioperator.controller.builders.secret import has_expected_keys, new_key_pair, new_ssh_secret
from test.unit.controller.jobs import OWNER, reference_job


def test_secret_metadata_type_and_key_names_match_appendix_a() -> None:
    secret = new_ssh_secret(reference_job())
    assert {k: v for k, v in secret.items() if k != "data"} == {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/ssh-auth",
        "metadata": {
            "name": "pi-ssh",
            "namespace": "default",
            "labels": {"app": "pi"},
            "ownerReferences": [OWNER],
        },
    }
    assert sorted(secret["data"]) == ["ssh-privatekey", "ssh-publickey"]


def test_private_key_is_a_sec1_pem_block_of_a_p521_key() -> None:
    private, _ = new_key_pair()
    text = private.decode()
    assert text.startswith("-----BEGIN EC PRIVATE KEY-----\n")
    assert text.endswith("-----END EC PRIVATE KEY-----\n")
    key = serialization.load_pem_private_key(private, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.curve.name == "secp521r1"


def test_public_key_is_one_authorized_keys_line_of_the_same_key() -> None:
    private, public = new_key_pair()
    assert public.startswith(b"ecdsa-sha2-nistp521 AAAA")
    assert public.endswith(b"\n")
    assert public.count(b"\n") == 1
    assert len(public.split(b" ")) == 2  # no comment field
    key = serialization.load_pem_private_key(private, password=None)
    expected = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    assert public == expected + b"\n"


def test_secret_data_is_base64_of_the_pem_and_the_authorized_keys_line() -> None:
    data = new_ssh_secret(reference_job())["data"]
    assert base64.b64decode(data["ssh-privatekey"]).startswith(b"-----BEGIN EC PRIVATE KEY-----")
    assert base64.b64decode(data["ssh-publickey"]).startswith(b"ecdsa-sha2-nistp521 ")


def test_every_secret_gets_a_fresh_key_pair() -> None:
    first = new_ssh_secret(reference_job())["data"]
    second = new_ssh_secret(reference_job())["data"]
    assert first["ssh-privatekey"] != second["ssh-privatekey"]


@pytest.mark.parametrize(
    ("data", "valid"),
    [
        ({"ssh-privatekey": "a", "ssh-publickey": "b"}, True),
        # Values are never inspected, so keys never rotate on their own.
        ({"ssh-privatekey": "", "ssh-publickey": ""}, True),
        ({"ssh-privatekey": "a"}, False),
        ({"ssh-publickey": "b"}, False),
        ({"ssh-privatekey": "a", "ssh-publickey": "b", "extra": "c"}, False),
        ({"id_rsa": "a", "id_rsa.pub": "b"}, False),
        (None, False),
    ],
)
def test_key_set_check_compares_names_only(data: dict[str, str] | None, valid: bool) -> None:
    assert has_expected_keys({"metadata": {"name": "pi-ssh"}, "data": data}) is valid
