"""The image catalog and its content keys: every Dockerfile is listed, in an order that builds, and an
image's key changes exactly when something it is built from does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mpioperator.testing import registry
from mpioperator.testing.images import catalog, context, ensure, keys
from mpioperator.testing.images.buildah import qualified, repository_path
from mpioperator.testing.images.versions import REPO_ROOT, parse_versions, pinned


def test_the_catalog_lists_every_dockerfile_under_images_and_the_operators() -> None:
    on_disk = {p.relative_to(REPO_ROOT).as_posix() for p in (REPO_ROOT / "images").rglob("*Dockerfile")}
    listed = {image.dockerfile for image in catalog.CATALOG}
    assert listed == on_disk | {"Dockerfile"}
    assert len({image.name for image in catalog.CATALOG}) == len(catalog.CATALOG)


@pytest.mark.parametrize("image", catalog.CATALOG, ids=lambda image: image.name)
def test_each_entry_names_the_image_its_dockerfile_starts_from(image: catalog.Image) -> None:
    text = image.dockerfile_path.read_text()
    assert context.from_images(text, image.build_args) == [image.base]


@pytest.mark.parametrize("image", catalog.CATALOG, ids=lambda image: image.name)
def test_a_plain_docker_build_of_each_dockerfile_uses_the_pinned_versions(image: catalog.Image) -> None:
    defaults = context.arg_defaults(image.dockerfile_path.read_text())
    pins = parse_versions((REPO_ROOT / "hack/versions.env").read_text())
    for name, value in defaults.items():
        if name in pins:
            assert value == pins[name], (
                f"{image.dockerfile}: ARG {name}={value}, versions.env says {pins[name]}"
            )
    for name, value in image.build_args.items():
        if name in pins:
            assert value == pins[name]


def test_every_base_is_built_before_the_images_on_it() -> None:
    assert catalog.order_problems() == []
    names = [image.name for image in catalog.CATALOG]
    assert names.index("mpioperator/openmpi") < names.index("mpioperator/mpi-pi:openmpi")
    assert names.index(catalog.PYTHON_BASE) < names.index(catalog.OPERATOR)


def test_an_image_listed_before_its_base_or_twice_is_a_problem() -> None:
    child = catalog.Image("a/child", "x", ".", "a/parent")
    parent = catalog.Image("a/parent", "y", ".", catalog.BASE)
    assert catalog.order_problems((parent, child)) == []
    assert catalog.order_problems((child, parent)) == [
        "a/child is built FROM a/parent, which is not listed before it"
    ]
    assert catalog.order_problems((parent, parent)) == ["a/parent is listed twice"]


def test_the_operator_is_built_from_the_top_level_dockerfile_on_the_local_python_base() -> None:
    image = catalog.by_name(catalog.OPERATOR)
    text = image.dockerfile_path.read_text()
    # As written, the Dockerfile starts from Docker Hub's python image, as a user's docker build would.
    assert context.from_images(text) == [f"python:{pinned('PYTHON_VERSION')}-slim"]
    assert image.build_args == {"PYTHON_BASE": catalog.PYTHON_BASE}
    assert not catalog.by_name(catalog.PYTHON_BASE).push


def test_images_whose_build_runs_pip_and_only_those_get_the_hosts_ca_mounted(tmp_path: Path) -> None:
    uses_pip = {image.name for image in catalog.CATALOG if image.uses_pip}
    assert uses_pip == {
        "mpioperator/mpich",
        "mpioperator/intel",
        "mpioperator/openmpi5",
        "mpioperator/mpi-pi:intel",
        catalog.OPERATOR,
        "mpioperator/horovod:0.28.1-tf2.15",
        catalog.PYTORCH,
        catalog.DEEPSPEED,
        *(f"mpioperator/mpi4py:{mpi}" for mpi in ("openmpi", "openmpi5", "mpich", "intel")),
    }
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm\n# pip install in a comment\nRUN echo pipe\n")
    assert not catalog.Image("t", str(tmp_path / "Dockerfile"), str(tmp_path), catalog.BASE).uses_pip


def _image(
    tmp_path: Path, dockerfile: str, files: dict[str, str], args: dict[str, str] | None = None
) -> catalog.Image:
    for relative, content in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(content)
    (tmp_path / "Dockerfile").write_text(dockerfile)
    return catalog.Image("t/image", str(tmp_path / "Dockerfile"), str(tmp_path), catalog.BASE, args or {})


def test_the_key_changes_with_a_copied_context_file_and_not_with_one_the_build_never_reads(
    tmp_path: Path,
) -> None:
    image = _image(
        tmp_path,
        "FROM debian:bookworm\nCOPY src /src\nCOPY --from=x /a /b\n",
        {
            "src/a.c": "1",
            "src/__pycache__/a.pyc": "c",
            "unused.txt": "u",
            ".dockerignore": "**/__pycache__\n",
        },
    )
    key = ensure.image_key(image, "base1")
    assert ensure.image_key(image, "base1") == key
    (tmp_path / "unused.txt").write_text("changed")
    (tmp_path / "src/__pycache__/a.pyc").write_text("ignored")
    assert ensure.image_key(image, "base1") == key
    (tmp_path / "src/a.c").write_text("2")
    assert ensure.image_key(image, "base1") != key


def test_the_key_changes_with_the_dockerfile_the_build_args_and_the_base_image_id(tmp_path: Path) -> None:
    image = _image(tmp_path, "FROM debian:bookworm\nARG V=1\n", {}, {"V": "1"})
    key = ensure.image_key(image, "base1")
    assert ensure.image_key(image, "base2") != key
    other_args = catalog.Image(image.name, image.dockerfile, image.context, image.base, {"V": "2"})
    assert ensure.image_key(other_args, "base1") != key
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm\nARG V=1\nRUN true\n")
    assert ensure.image_key(image, "base1") != key


def test_operator_image_inputs_are_the_copied_package_files_without_caches_or_the_test_harness() -> None:
    files = context.context_files((REPO_ROOT / "Dockerfile").read_text(), REPO_ROOT)
    assert {"setup.cfg", "pyproject.toml", "README.md", "mpioperator/__init__.py"} <= set(files)
    assert not any("__pycache__" in f or f.startswith("mpioperator/testing/") for f in files)
    assert not any(f.startswith(("test/", "hack/", "docs/")) for f in files)


def test_dockerfile_reading_joins_continuations_skips_comments_and_knows_stage_names() -> None:
    text = (
        "ARG B=debian:bookworm\nFROM $B AS build\n# c\nRUN a \\\n  # inner\n  b\nFROM build\nFROM scratch\n"
    )
    assert context.from_images(text) == ["debian:bookworm"]
    assert context.from_images(text, {"B": "other:1"}) == ["other:1"]
    assert [i.keyword for i in context.instructions(text)] == ["ARG", "FROM", "RUN", "FROM", "FROM"]
    assert context.instructions(text)[2].arguments == "a  b"
    assert context.copy_sources('COPY --chown=1:1 a b /x/\nADD ["c d", "/y"]\nCOPY --from=s /z /z\n') == [
        "a",
        "b",
        "c d",
    ]


def test_dockerignore_excludes_directories_with_their_contents_and_allows_exceptions() -> None:
    rules = context.IgnoreRules.parse("# c\n.venv\n**/__pycache__\ndocs/*.md\n!docs/keep.md\n")
    assert rules.ignored(".venv/bin/python")
    assert rules.ignored("mpioperator/kube/__pycache__/x.pyc")
    assert rules.ignored("__pycache__/y.pyc")
    assert rules.ignored("docs/a.md")
    assert not rules.ignored("docs/keep.md")
    assert not rules.ignored("mpioperator/kube/client.py")


def test_short_names_are_docker_hubs_and_the_mirror_path_drops_the_registry_host() -> None:
    assert qualified("debian:bookworm") == "docker.io/library/debian:bookworm"
    assert qualified("mpioperator/openmpi") == "docker.io/mpioperator/openmpi:latest"
    assert qualified("registry.k8s.io/pause:3.10") == "registry.k8s.io/pause:3.10"
    assert repository_path("mpioperator/mpi-pi:openmpi") == "mpioperator/mpi-pi:openmpi"
    assert repository_path("registry.k8s.io/pause:3.10") == "pause:3.10"


def test_pip_in_the_builds_trusts_the_host_ca_from_a_mount_beside_the_images_own_bundle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", "http://mirror.invalid/simple")
    with ensure.pip_trust(tmp_path) as volumes:
        source, target = volumes[0].split(":")[:2], volumes[1].split(":")[:2]
        conf = Path(target[0]).read_text()
        assert source[1] == "/run/hostca" and target[1] == "/etc/pip.conf"
        assert "index-url = http://mirror.invalid/simple" in conf
        if ensure.HOST_CA_BUNDLE.is_file():
            assert "cert = /run/hostca/ca.crt" in conf
            assert (Path(source[0]) / "ca.crt").read_bytes() == ensure.HOST_CA_BUNDLE.read_bytes()
        assert not any("/etc/ssl" in volume for volume in volumes)
    assert list(tmp_path.iterdir()) == []


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


def test_registry_listens_on_loopback_only_and_stores_in_the_given_directory() -> None:
    config = registry.registry_config(Path("/cache/registry"), 5000)
    assert config["http"] == {"addr": "127.0.0.1:5000"}
    storage = config["storage"]
    assert isinstance(storage, dict)
    assert storage["filesystem"] == {"rootdirectory": "/cache/registry"}


def test_versions_file_pins_the_registry_intel_mpi_and_an_mpich_without_the_finalize_hang() -> None:
    versions = parse_versions((REPO_ROOT / "hack/versions.env").read_text())
    assert versions["REGISTRY_VERSION"].startswith("v3.")
    assert versions["IMPI_VERSION"] == "2021.19.0"
    major, minor = (int(part) for part in versions["MPICH_VERSION"].split(".")[:2])
    assert (major, minor) >= (4, 2)
    assert parse_versions("# c\nA='x'\n\nB = y\n") == {"A": "x", "B": "y"}


def test_a_selection_builds_the_named_images_and_what_they_are_built_from_in_catalog_order() -> None:
    chosen = [image.name for image in catalog.selection(["mpioperator/mpi-pi:openmpi"])]
    assert chosen == ["mpioperator/openmpi", "mpioperator/mpi-pi:openmpi"]
    everything = catalog.selection(None)
    assert everything == catalog.CATALOG
    with pytest.raises(KeyError, match="mpioperator/no-such-image"):
        catalog.selection(["mpioperator/no-such-image"])


def test_the_demo_builds_the_images_its_deployment_and_pi_examples_pull_and_no_training_image() -> None:
    chosen = {image.name for image in catalog.selection(catalog.DEMO_IMAGES)}
    pulled = {catalog.OPERATOR, "registry.k8s.io/pause:3.10"}
    for example in (REPO_ROOT / "examples/v2beta1/pi").glob("pi*.yaml"):
        pulled |= set(re.findall(r"image: (\S+)", example.read_text()))
    assert pulled <= chosen
    assert "mpioperator/horovod:0.28.1-tf2.15" not in chosen
    assert "mpioperator/random-walk" not in chosen
