"""The local registry is CNCF distribution itself: our pushes land, read back by digest, and repeat for free."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mpioperator.testing.images import layers, oci
from mpioperator.testing.images.push import PushStats, RegistryClient, push_image
from mpioperator.testing.images.store import ImageStore, StoredImage
from mpioperator.testing.process import pid_alive
from mpioperator.testing.registry import LocalRegistry


@pytest.fixture(scope="module")
def local_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistry]:
    root = tmp_path_factory.mktemp("registry")
    registry = LocalRegistry(root / "storage", work_dir=root / "work")
    registry.start()
    yield registry
    registry.stop()


def _small_image(store: ImageStore, tree: Path, name: str, files: dict[str, str]) -> StoredImage:
    for relative, content in files.items():
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        (tree / relative).write_text(content)
    paths = layers.with_parents(files)
    with store.new_blob() as temporary:
        layer = layers.write_layer(tree, paths, [], temporary, gzip_level=None, comment="test files")
        store.adopt_blob(temporary, layer.digest)
    runtime = oci.RuntimeConfig(entrypoint=("/bin/hello",), env=("PATH=/bin",), user="1000")
    image = StoredImage(name, "test", (layer,), runtime)
    store.save(image)
    return image


def test_pushed_image_reads_back_by_digest_and_a_second_push_sends_no_blob(
    local_registry: LocalRegistry, tmp_path: Path
) -> None:
    store = ImageStore(tmp_path / "store")
    image = _small_image(
        store, tmp_path / "tree", "mpioperator/hello:v1", {"bin/hello": "#!/bin/sh\necho hi\n"}
    )
    with RegistryClient(local_registry.address) as client:
        first = push_image(client, store, image)
        assert (first.blobs_uploaded, first.manifests_pushed) == (2, 1)  # the layer and the config

        digest, manifest = client.get_manifest("mpioperator/hello", image.manifest_digest)
        assert digest == image.manifest_digest
        assert client.manifest_digest("mpioperator/hello", "v1") == image.manifest_digest
        config = json.loads(client.get_blob("mpioperator/hello", manifest["config"]["digest"]))
        assert config["config"]["Entrypoint"] == ["/bin/hello"]
        assert config["config"]["User"] == "1000"
        layer_bytes = client.get_blob("mpioperator/hello", manifest["layers"][0]["digest"])
        assert layer_bytes == store.blob_path(image.layers[0].digest).read_bytes()

        second = push_image(client, store, image)
        assert second == PushStats(manifests_present=1)


def test_a_layer_already_in_another_repository_is_mounted_not_uploaded(
    local_registry: LocalRegistry, tmp_path: Path
) -> None:
    store = ImageStore(tmp_path / "store")
    shared = _small_image(store, tmp_path / "a", "mpioperator/shared-a:v1", {"etc/shared": "same bytes"})
    other = StoredImage("mpioperator/shared-b:v1", "test", shared.layers, oci.RuntimeConfig(cmd=("true",)))
    store.save(other)
    known: dict[str, str] = {}
    with RegistryClient(local_registry.address) as client:
        push_image(client, store, shared, known=known)
        stats = push_image(client, store, other, known=known)
        assert stats.blobs_mounted == 1
        # Only the new config went over the wire.
        assert stats.uploaded == [store.put_bytes(other.config_bytes)]
        assert client.blob_exists("mpioperator/shared-b", shared.layers[0].digest)


def test_a_name_that_was_never_pushed_is_unknown(local_registry: LocalRegistry) -> None:
    with RegistryClient(local_registry.address) as client:
        assert client.manifest_digest("mpioperator/does-not-exist", "latest") is None


def test_stop_ends_the_registry_process(tmp_path: Path) -> None:
    registry = LocalRegistry(tmp_path / "storage")
    registry.start()
    pid = registry.pid
    assert pid is not None
    assert registry.address.startswith("127.0.0.1:")
    registry.stop()
    assert not pid_alive(pid)
