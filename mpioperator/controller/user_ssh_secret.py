"""Whether a Secret the user names for SSH (`mpioperator.io/ssh-secret`) can stand in for the one we generate.

Pods mount it exactly as the generated one (builders/podspec.ssh_volume): `ssh-privatekey` as `id_rsa`,
`ssh-publickey` as `id_rsa.pub` and `authorized_keys`. So both keys must be there, the private key in PEM
(any type sshd takes) and the public key an OpenSSH line. The operator only reads the Secret: no owner
reference is added, so neither we nor the garbage collector ever edit or delete it.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from mpioperator.api.objects import Obj
from mpioperator.controller.builders.secret import PRIVATE_KEY, PUBLIC_KEY

REASON_NOT_FOUND = "SSHSecretNotFound"
REASON_KEY_MISSING = "SSHSecretKeyMissing"
REASON_KEY_MALFORMED = "SSHSecretKeyMalformed"
_PUBLIC_KEY_TYPES = ("ssh-", "ecdsa-", "sk-")


@dataclass(frozen=True, slots=True)
class Problem:
    reason: str
    message: str


def _decoded(secret: Obj, key: str) -> str | None:
    value = (secret.get("data") or {}).get(key)
    if value:
        try:
            return base64.b64decode(str(value), validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return None
    text = (secret.get("stringData") or {}).get(key)  # never stored, but harmless to accept
    return str(text) if text else None


def problem(name: str, namespace: str, secret: Obj | None) -> Problem | None:
    """What keeps the Secret from serving as the job's SSH keys, or None when it can."""
    if secret is None:
        return Problem(
            REASON_NOT_FOUND,
            f'Secret "{name}" named by the SSH secret annotation is not in namespace {namespace}',
        )
    for key in (PRIVATE_KEY, PUBLIC_KEY):
        if _decoded(secret, key) is None:
            return Problem(
                REASON_KEY_MISSING,
                f'Secret "{name}" has no key "{key}" (it needs "{PRIVATE_KEY}" and "{PUBLIC_KEY}")',
            )
    private = _decoded(secret, PRIVATE_KEY) or ""
    if "-----BEGIN" not in private or "PRIVATE KEY-----" not in private:
        return Problem(
            REASON_KEY_MALFORMED, f'key "{PRIVATE_KEY}" of Secret "{name}" is not a PEM private key'
        )
    words = (_decoded(secret, PUBLIC_KEY) or "").split()
    if len(words) < 2 or not words[0].startswith(_PUBLIC_KEY_TYPES):
        return Problem(
            REASON_KEY_MALFORMED, f'key "{PUBLIC_KEY}" of Secret "{name}" is not an OpenSSH public key line'
        )
    return None
