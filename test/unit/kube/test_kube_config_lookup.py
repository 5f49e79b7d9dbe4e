"""The kubeconfig is found as kubectl finds it, the context's namespace is read from it, and a missing or
broken kubeconfig is one KubeConfigError naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from mpioperator.kube.config import context_namespace, kubeconfig_path, load_configuration
from mpioperator.kube.errors import KubeConfigError


def write_kubeconfig(path: Path, *, current: str = "team-a") -> Path:
    cluster = {"name": "local", "cluster": {"server": "https://127.0.0.1:6443"}}
    contexts = [
        {"name": "team-a", "context": {"cluster": "local", "user": "me", "namespace": "team-a"}},
        {"name": "plain", "context": {"cluster": "local", "user": "me"}},
    ]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": "me", "user": {"token": "t"}}],
        "contexts": contexts,
        "current-context": current,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def test_explicit_path_wins_over_the_environment() -> None:
    assert kubeconfig_path("/a/config", {"KUBECONFIG": "/b/config"}) == "/a/config"


def test_environment_wins_over_the_home_default() -> None:
    assert kubeconfig_path(None, {"KUBECONFIG": "/b/config:/c/config"}) == "/b/config:/c/config"


def test_home_default_when_nothing_is_set() -> None:
    assert kubeconfig_path(None, {}) == os.path.expanduser("~/.kube/config")


def test_current_context_namespace_is_read(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "config")
    assert context_namespace(path) == "team-a"


def test_named_context_without_namespace_gives_none(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "config")
    assert context_namespace(path, "plain") is None


def test_unknown_context_names_the_context_and_the_file(tmp_path: Path) -> None:
    path = write_kubeconfig(tmp_path / "config")
    with pytest.raises(KubeConfigError, match=f"context 'nope' not found in kubeconfig {path}"):
        context_namespace(path, "nope")


def test_missing_kubeconfig_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent"
    with pytest.raises(KubeConfigError, match=f"cannot read kubeconfig {missing}"):
        context_namespace(missing)
    with pytest.raises(KubeConfigError, match=f"cannot load kubeconfig {missing}"):
        load_configuration(kubeconfig=missing)
