"""Push images from the local store to a registry over the distribution HTTP API v2 (plain HTTP).

Every blob is checked with HEAD first and a manifest whose tag already names the same digest is not
sent again, so pushing an unchanged image costs one request. A blob already pushed to another
repository of the same registry is mounted instead of uploaded.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from mpioperator.testing.images.oci import CONFIG_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, Reference, sha256_digest
from mpioperator.testing.images.store import ImageStore, StoredImage

_ACCEPT = ", ".join(
    [
        MANIFEST_MEDIA_TYPE,
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
    ]
)
_BLOCK = 1 << 20


class RegistryError(RuntimeError):
    pass


@dataclass
class PushStats:
    blobs_uploaded: int = 0
    blobs_mounted: int = 0
    blobs_present: int = 0
    bytes_uploaded: int = 0
    manifests_pushed: int = 0
    manifests_present: int = 0
    uploaded: list[str] = field(default_factory=list)

    def summary(self) -> str:
        blobs = f"{self.blobs_uploaded} blobs uploaded ({self.bytes_uploaded / 1e6:.0f} MB)"
        blobs += f", {self.blobs_mounted} mounted, {self.blobs_present} present"
        return f"{blobs}; {self.manifests_pushed} manifests pushed, {self.manifests_present} already there"


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes


class RegistryClient:
    """One keep-alive connection to `host:port`; not thread-safe."""

    def __init__(self, address: str, timeout: float = 300.0):
        self.address = address
        self.timeout = timeout
        self._connection: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | IO[bytes] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        for attempt in (1, 2):
            if self._connection is None:
                self._connection = http.client.HTTPConnection(
                    self.address, timeout=self.timeout, blocksize=_BLOCK
                )
            try:
                self._connection.request(method, path, body=body, headers=headers or {})
                response = self._connection.getresponse()
                data = response.read()
                return Response(response.status, {k.lower(): v for k, v in response.getheaders()}, data)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # A keep-alive connection the server closed; a streamed body cannot be replayed.
                self.close()
                if attempt == 2 or not (body is None or isinstance(body, bytes)):
                    raise
        raise AssertionError("unreachable")

    def _expect(self, response: Response, statuses: Iterable[int], what: str) -> Response:
        if response.status not in set(statuses):
            detail = response.body[:500].decode(errors="replace")
            raise RegistryError(f"{what}: HTTP {response.status} from {self.address}: {detail}")
        return response

    # ------------------------------------------------------------------ reads

    def blob_exists(self, repository: str, digest: str) -> bool:
        response = self.request("HEAD", f"/v2/{repository}/blobs/{digest}")
        return self._expect(response, (200, 404), f"HEAD blob {digest}").status == 200

    def manifest_digest(self, repository: str, reference: str) -> str | None:
        response = self.request(
            "HEAD", f"/v2/{repository}/manifests/{reference}", headers={"Accept": _ACCEPT}
        )
        if self._expect(response, (200, 404), f"HEAD manifest {repository}:{reference}").status == 404:
            return None
        return response.headers.get("docker-content-digest")

    def get_manifest(self, repository: str, reference: str) -> tuple[str, dict[str, Any]]:
        response = self.request("GET", f"/v2/{repository}/manifests/{reference}", headers={"Accept": _ACCEPT})
        self._expect(response, (200,), f"GET manifest {repository}:{reference}")
        return sha256_digest(response.body), json.loads(response.body)

    def get_blob(self, repository: str, digest: str) -> bytes:
        response = self.request("GET", f"/v2/{repository}/blobs/{digest}")
        self._expect(response, (200,), f"GET blob {digest}")
        if sha256_digest(response.body) != digest:
            raise RegistryError(f"blob {digest} from {self.address} does not match its digest")
        return response.body

    # ------------------------------------------------------------------ writes

    def _location(self, response: Response) -> str:
        location = response.headers.get("location")
        if not location:
            raise RegistryError(f"upload from {self.address} has no Location header")
        parsed = urllib.parse.urlsplit(location)
        return parsed.path + (f"?{parsed.query}" if parsed.query else "")

    def mount_blob(self, repository: str, digest: str, source: str) -> bool:
        """Cross-repository mount; False (after cancelling the upload it opened) when not possible."""
        query = urllib.parse.urlencode({"mount": digest, "from": source})
        response = self.request("POST", f"/v2/{repository}/blobs/uploads/?{query}")
        self._expect(response, (201, 202), f"mount {digest} from {source}")
        if response.status == 201:
            return True
        self.request("DELETE", self._location(response))
        return False

    def upload_blob(self, repository: str, digest: str, data: IO[bytes], size: int) -> None:
        """Monolithic upload: one POST for the session, one PUT with the whole blob."""
        started = self._expect(
            self.request("POST", f"/v2/{repository}/blobs/uploads/"), (202,), f"start upload of {digest}"
        )
        location = self._location(started)
        separator = "&" if "?" in location else "?"
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
        put = self.request("PUT", f"{location}{separator}digest={digest}", body=data, headers=headers)
        self._expect(put, (201,), f"upload of {digest}")

    def put_manifest(self, repository: str, tag: str, manifest: bytes) -> str:
        headers = {"Content-Type": MANIFEST_MEDIA_TYPE}
        response = self.request("PUT", f"/v2/{repository}/manifests/{tag}", body=manifest, headers=headers)
        self._expect(response, (201,), f"PUT manifest {repository}:{tag}")
        return response.headers.get("docker-content-digest", sha256_digest(manifest))


def push_image(
    client: RegistryClient,
    store: ImageStore,
    image: StoredImage,
    *,
    stats: PushStats | None = None,
    known: dict[str, str] | None = None,
) -> PushStats:
    """Push `image` under its own name; `known` maps blob digests to a repository that already has them."""
    stats = stats if stats is not None else PushStats()
    known = known if known is not None else {}
    ref = Reference.parse(image.name)
    manifest = image.manifest_bytes
    if client.manifest_digest(ref.repository, ref.tag) == sha256_digest(manifest):
        stats.manifests_present += 1
        for layer in image.layers:
            known.setdefault(layer.digest, ref.repository)
        return stats
    config = image.config_bytes
    config_digest = store.put_bytes(config)
    blobs = [(layer.digest, layer.size) for layer in image.layers] + [(config_digest, len(config))]
    for digest, size in blobs:
        if client.blob_exists(ref.repository, digest):
            stats.blobs_present += 1
        elif (
            digest in known
            and known[digest] != ref.repository
            and client.mount_blob(ref.repository, digest, known[digest])
        ):
            stats.blobs_mounted += 1
        else:
            with store.open_blob(digest) as data:
                client.upload_blob(ref.repository, digest, data, size)
            stats.blobs_uploaded += 1
            stats.bytes_uploaded += size
            stats.uploaded.append(digest)
        known[digest] = ref.repository
    client.put_manifest(ref.repository, ref.tag, manifest)
    stats.manifests_pushed += 1
    return stats


__all__ = ["CONFIG_MEDIA_TYPE", "PushStats", "RegistryClient", "RegistryError", "push_image"]
