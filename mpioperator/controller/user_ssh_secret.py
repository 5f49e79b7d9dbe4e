"""Whether a Secret the user names for SSH (`mpioperator.io/ssh-secret`) can stand in for the one we generate.

Pods mount it at the generated one's paths (builders/podspec.ssh_volume): `ssh-privatekey` as `id_rsa`,
`ssh-publickey` as `id_rsa.pub` and `authorized_keys`. A Secret made for Kubeflow's openmpi prototype names
its keys after those files instead (`id_rsa`, `id_rsa.pub`, `authorized_keys`), and is mounted key by key;
without `authorized_keys` its `id_rsa.pub` stands in. Either way the private and the public key must be
there, the private key in PEM (any type sshd takes) and the public key an OpenSSH line. The operator only
reads the Secret: no owner reference is added, so neither we nor the garbage collector ever edit or delete it.

The Secret cache keeps key names, never values (controller/secret_cache.py): whether the Secret exists and
has both keys is read there, and its values are read from the API server, once per resourceVersion.
"""

from __future__ import annotations

import base64
import binascii
from collections import OrderedDict
from dataclasses import dataclass

from mpioperator.api.objects import Obj
from mpioperator.controller.builders.podspec import UPSTREAM_KEYS, SSHKeys
from mpioperator.controller.builders.secret import PRIVATE_KEY, PUBLIC_KEY
from mpioperator.controller.errors import SyncError
from mpioperator.controller.ports import Writer
from mpioperator.kube import errors
from mpioperator.kube.resources import SECRETS

REASON_NOT_FOUND = "SSHSecretNotFound"
REASON_KEY_MISSING = "SSHSecretKeyMissing"
REASON_KEY_MALFORMED = "SSHSecretKeyMalformed"
_PUBLIC_KEY_TYPES = ("ssh-", "ecdsa-", "sk-")
# The key names of the openmpi prototype's Secret (its README makes it with `--from-file=id_rsa=...`).
PROTOTYPE_PRIVATE_KEY = "id_rsa"
PROTOTYPE_PUBLIC_KEY = "id_rsa.pub"
PROTOTYPE_AUTHORIZED_KEYS = "authorized_keys"


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


def _not_found(name: str, namespace: str) -> Problem:
    return Problem(
        REASON_NOT_FOUND,
        f'Secret "{name}" named by the SSH secret annotation is not in namespace {namespace}',
    )


def _key_missing(name: str, key: str) -> Problem:
    return Problem(
        REASON_KEY_MISSING,
        f'Secret "{name}" has no key "{key}" (it needs "{PRIVATE_KEY}" and "{PUBLIC_KEY}", '
        f'or "{PROTOTYPE_PRIVATE_KEY}" and "{PROTOTYPE_PUBLIC_KEY}")',
    )


def key_names(secret: Obj | None) -> SSHKeys:
    """Which of the Secret's keys the pods mount, from its key names: the prototype's only when it has
    neither of upstream's, so a Secret with both sets is read as upstream's."""
    data = (secret or {}).get("data") or {}
    if PRIVATE_KEY in data or PUBLIC_KEY in data:
        return UPSTREAM_KEYS
    if PROTOTYPE_PRIVATE_KEY not in data and PROTOTYPE_PUBLIC_KEY not in data:
        return UPSTREAM_KEYS
    authorized = PROTOTYPE_AUTHORIZED_KEYS if PROTOTYPE_AUTHORIZED_KEYS in data else PROTOTYPE_PUBLIC_KEY
    return SSHKeys(PROTOTYPE_PRIVATE_KEY, PROTOTYPE_PUBLIC_KEY, authorized)


def key_problem(name: str, namespace: str, cached: Obj | None) -> Problem | None:
    """What the cached Secret (key names, no values) shows is wrong, or None when its values need a look."""
    if cached is None:
        return _not_found(name, namespace)
    keys = key_names(cached)
    for key in (keys.private, keys.public):
        if key not in (cached.get("data") or {}):
            return _key_missing(name, key)
    return None


def problem(name: str, namespace: str, secret: Obj | None) -> Problem | None:
    """What keeps the Secret (whole, as the API server sends it) from serving as the job's SSH keys, or
    None when it can."""
    if secret is None:
        return _not_found(name, namespace)
    keys = key_names({"data": {**(secret.get("stringData") or {}), **(secret.get("data") or {})}})
    for key in (keys.private, keys.public):
        if _decoded(secret, key) is None:
            return _key_missing(name, key)
    private = _decoded(secret, keys.private) or ""
    if "-----BEGIN" not in private or "PRIVATE KEY-----" not in private:
        return Problem(
            REASON_KEY_MALFORMED, f'key "{keys.private}" of Secret "{name}" is not a PEM private key'
        )
    words = (_decoded(secret, keys.public) or "").split()
    if len(words) < 2 or not words[0].startswith(_PUBLIC_KEY_TYPES):
        return Problem(
            REASON_KEY_MALFORMED, f'key "{keys.public}" of Secret "{name}" is not an OpenSSH public key line'
        )
    return None


class UserSecretChecks:
    """The verdict on each user-named Secret, its values read from the API server once per version.

    Only verdicts are kept, never a value; the newest `capacity` of them."""

    def __init__(self, reader: Writer, capacity: int = 10_000) -> None:
        self._reader = reader
        self._capacity = capacity
        self._verdicts: OrderedDict[tuple[str, str], tuple[tuple[str, str], Problem | None]] = OrderedDict()

    async def problem(self, name: str, namespace: str, cached: Obj | None) -> Problem | None:
        """What keeps the Secret `cached` stands for from serving as SSH keys, or None when it can."""
        found = key_problem(name, namespace, cached)
        if found is not None or cached is None:
            return found
        key = (namespace, name)
        known = self._verdicts.get(key)
        if known is not None and known[0] == _version(cached):
            self._verdicts.move_to_end(key)
            return known[1]
        try:
            secret = await self._reader.get(SECRETS, name, namespace)
        except errors.NotFound:
            return _not_found(name, namespace)  # deleted since the cache saw it
        except errors.ApiError as exc:
            raise SyncError(f"reading SSH Secret {name}: {exc.server_message}") from exc
        verdict = problem(name, namespace, secret)
        self._verdicts[key] = (_version(secret), verdict)
        self._verdicts.move_to_end(key)
        while len(self._verdicts) > self._capacity:
            self._verdicts.popitem(last=False)
        return verdict


def _version(secret: Obj) -> tuple[str, str]:
    meta = secret.get("metadata") or {}
    return str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
