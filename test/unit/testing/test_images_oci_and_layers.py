"""Image documents and layers: digests, config fields, filesystem diffs and whiteouts, cache keys."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mpioperator.testing.images import keys, layers, oci
from mpioperator.testing.images.store import ImageStore, StoredImage

LAYER = oci.Layer(digest="sha256:" + "a" * 64, diff_id="sha256:" + "b" * 64, size=10, comment="base")


def test_canonical_json_is_independent_of_key_order() -> None:
    assert oci.canonical_json({"b": 1, "a": [2, {"d": 3, "c": 4}]}) == b'{"a":[2,{"c":4,"d":3}],"b":1}'
    assert oci.canonical_json({"a": 1, "b": 2}) == oci.canonical_json({"b": 2, "a": 1})


def test_image_config_carries_what_a_runtime_reads_and_the_uncompressed_layer_ids() -> None:
    runtime = oci.RuntimeConfig(
        entrypoint=("/entrypoint.sh",),
        cmd=("/bin/bash",),
        env=("PATH=/usr/bin", "A=b"),
        user="65532:65532",
        working_dir="/home/mpiuser",
        exposed_ports=("2222/tcp",),
    )
    config = oci.image_config(runtime, [LAYER])
    assert config["architecture"] == "amd64"
    assert config["os"] == "linux"
    assert config["config"] == {
        "Entrypoint": ["/entrypoint.sh"],
        "Cmd": ["/bin/bash"],
        "Env": ["PATH=/usr/bin", "A=b"],
        "User": "65532:65532",
        "WorkingDir": "/home/mpiuser",
        "ExposedPorts": {"2222/tcp": {}},
    }
    assert config["rootfs"] == {"type": "layers", "diff_ids": [LAYER.diff_id]}
    assert oci.RuntimeConfig.from_json(config["config"]) == runtime


def test_manifest_names_the_config_by_digest_and_size_and_the_layers_as_stored() -> None:
    config = b'{"x":1}'
    manifest = oci.image_manifest(config, [LAYER])
    assert manifest["schemaVersion"] == 2
    assert manifest["mediaType"] == oci.MANIFEST_MEDIA_TYPE
    assert manifest["config"] == {
        "mediaType": oci.CONFIG_MEDIA_TYPE,
        "digest": oci.sha256_digest(config),
        "size": len(config),
    }
    assert manifest["layers"] == [{"mediaType": oci.LAYER_MEDIA_TYPE, "digest": LAYER.digest, "size": 10}]


def test_stored_image_keeps_its_manifest_digest_through_a_json_round_trip() -> None:
    image = StoredImage("mpioperator/mpi-pi:openmpi", "k", (LAYER,), oci.RuntimeConfig(cmd=("bash",)))
    again = StoredImage.from_json(json.loads(json.dumps(image.to_json())))
    assert again == image
    assert again.manifest_digest == image.manifest_digest
    assert json.loads(image.manifest_bytes)["config"]["digest"] == oci.sha256_digest(image.config_bytes)


@pytest.mark.parametrize(
    ("text", "repository", "tag"),
    [
        ("mpioperator/mpi-pi:openmpi", "mpioperator/mpi-pi", "openmpi"),
        ("docker.io/mpioperator/mpi-pi:intel", "mpioperator/mpi-pi", "intel"),
        ("registry.k8s.io/pause:3.10", "pause", "3.10"),
    ],
)
def test_reference_is_the_repository_path_a_registry_mirror_is_asked_for(
    text: str, repository: str, tag: str
) -> None:
    assert oci.Reference.parse(text) == oci.Reference(repository, tag)


def test_reference_without_a_tag_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a tag"):
        oci.Reference.parse("localhost:5000/pi")


def test_env_set_replaces_in_place_or_appends_and_lookup_takes_the_last() -> None:
    env = ("PATH=/bin", "A=1")
    assert oci.env_set(env, "PATH", "/opt/venv/bin:/bin") == ("PATH=/opt/venv/bin:/bin", "A=1")
    assert oci.env_set(env, "B", "x=y") == ("PATH=/bin", "A=1", "B=x=y")
    assert oci.env_lookup(("A=1", "A=2"), "A") == "2"
    assert oci.env_lookup(env, "C") is None


def _entry(inode: int, mtime: int = 1) -> layers.Entry:
    return layers.Entry(mode=0o100644, uid=0, gid=0, size=1, mtime_ns=mtime, inode=inode)


def test_diff_lists_added_and_rewritten_paths_and_only_the_topmost_removed_one() -> None:
    before = {"etc": _entry(1), "etc/a": _entry(2), "old": _entry(3), "old/x": _entry(4), "same": _entry(5)}
    after = {"etc": _entry(1, mtime=2), "etc/a": _entry(9), "etc/new": _entry(10), "same": _entry(5)}
    change = layers.diff(before, after)
    assert change.changed == ("etc", "etc/a", "etc/new")
    assert change.removed == ("old",)


def test_with_parents_puts_every_directory_before_its_contents() -> None:
    assert layers.with_parents(["a/b/c", "a/d", "e"]) == ["a", "a/b", "a/b/c", "a/d", "e"]


def test_whiteout_names_the_removed_entry_in_its_directory() -> None:
    assert layers.whiteout_name("usr/share/doc") == "usr/share/.wh.doc"
    assert layers.whiteout_name("top") == ".wh.top"


def _tree(root: Path) -> dict[str, tuple[str, str]]:
    """Path -> (kind, content or link target), for comparing two trees."""
    out = {}
    for relative, st in layers.walk(root):
        path = root / relative
        if path.is_symlink():
            out[relative] = ("link", os.readlink(path))
        elif path.is_dir():
            out[relative] = ("dir", oct(st.st_mode & 0o7777))
        else:
            out[relative] = ("file", path.read_text() + oct(st.st_mode & 0o7777))
    return out


@pytest.mark.parametrize("gzip_level", [None, 1])
def test_base_plus_diff_layer_applied_in_order_rebuilds_the_changed_tree(
    tmp_path: Path, gzip_level: int | None
) -> None:
    built = tmp_path / "built"
    (built / "etc/conf.d").mkdir(parents=True)
    (built / "etc/passwd").write_text("root\n")
    (built / "etc/conf.d/gone").write_text("x")
    (built / "bin").mkdir()
    (built / "bin/tool").write_text("#!/bin/sh\n")
    (built / "bin/tool").chmod(0o755)
    (built / "proc").mkdir()
    store = ImageStore(tmp_path / "store")

    def layer_of(paths: list[str], removed: list[str]) -> oci.Layer:
        with store.new_blob() as temporary:
            layer = layers.write_layer(built, paths, removed, temporary, gzip_level=gzip_level, comment="t")
            store.adopt_blob(temporary, layer.digest)
        return layer

    base = layer_of([p for p, _ in layers.walk(built)], [])
    before = layers.snapshot(built)
    (built / "etc/passwd").write_text("root\nmpiuser\n")
    for name in ("gone",):
        (built / "etc/conf.d" / name).unlink()
    (built / "etc/conf.d").rmdir()
    (built / "bin/tool2").write_text("shared")
    os.link(built / "bin/tool2", built / "bin/tool3")
    (built / "bin/sh").symlink_to("tool")
    (built / "proc/1").mkdir()  # a runtime's own file system: never in a layer
    change = layers.diff(before, layers.snapshot(built))
    top = layer_of(layers.with_parents(change.changed), list(change.removed))

    if gzip_level is None:
        assert base.digest == base.diff_id
    else:
        assert base.media_type == oci.LAYER_GZIP_MEDIA_TYPE
        assert base.digest != base.diff_id
    applied = tmp_path / "applied"
    applied.mkdir()
    for layer in (base, top):
        layers.apply_layer(store.blob_path(layer.digest), applied)
    expected = {k: v for k, v in _tree(built).items() if not k.startswith("proc/")}
    assert _tree(applied) == expected
    assert (applied / "bin/tool2").stat().st_ino == (applied / "bin/tool3").stat().st_ino


def test_build_key_changes_with_parent_and_params_and_nothing_else() -> None:
    key = keys.build_key("r", parent="p", params={"a": 1, "b": [1, 2]})
    assert key == keys.build_key("r", parent="p", params={"b": [1, 2], "a": 1})
    assert key != keys.build_key("r", parent="q", params={"a": 1, "b": [1, 2]})
    assert key != keys.build_key("r", parent="p", params={"a": 2, "b": [1, 2]})
    assert key != keys.build_key("s", parent="p", params={"a": 1, "b": [1, 2]})


def test_tree_digest_sees_content_names_and_the_executable_bit(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("1")
    first = keys.tree_digest(tmp_path, ["a"])
    assert keys.tree_digest(tmp_path, ["a"]) == first
    (tmp_path / "a").chmod(0o755)
    executable = keys.tree_digest(tmp_path, ["a"])
    assert executable != first
    (tmp_path / "a").write_text("2")
    assert keys.tree_digest(tmp_path, ["a"]) != executable


def test_store_lookup_needs_the_same_key_and_every_layer_blob(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    digest = store.put_bytes(b"layer")
    layer = oci.Layer(digest, digest, 5)
    image = StoredImage("x:y", "key1", (layer,), oci.RuntimeConfig())
    store.save(image)
    assert store.lookup("x:y", "key1") == image
    assert store.lookup("x:y", "key2") is None
    store.blob_path(digest).unlink()
    assert store.lookup("x:y", "key1") is None
