"""Kubeconfigs and in-cluster settings become the access kubectl would use: files merged first-wins,
relative paths resolved against the file that names them, inline data preferred, every credential kind
turned into its header, and plugin users handed to the official client."""

from __future__ import annotations

import base64
import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.kube.config import in_cluster_access, load_configuration
from mpioperator.kube.errors import KubeConfigError


def kubeconfig(
    path: Path,
    *,
    clusters: dict[str, dict[str, Any]] | None = None,
    users: dict[str, dict[str, Any]] | None = None,
    contexts: dict[str, dict[str, Any]] | None = None,
    current: str | None = None,
) -> Path:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": c} for n, c in (clusters or {}).items()],
        "users": [{"name": n, "user": u} for n, u in (users or {}).items()],
        "contexts": [{"name": n, "context": c} for n, c in (contexts or {}).items()],
    }
    if current:
        doc["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def one_context(path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    return kubeconfig(
        path,
        clusters={"c": cluster},
        users={"u": user},
        contexts={"ctx": {"cluster": "c", "user": "u"}},
        current="ctx",
    )


def test_merged_files_take_each_name_and_the_current_context_from_the_first_file_that_has_it(
    tmp_path: Path,
) -> None:
    first = kubeconfig(
        tmp_path / "a",
        clusters={"shared": {"server": "https://first:6443"}},
        contexts={"mine": {"cluster": "shared", "user": "me"}},
        current="mine",
    )
    second = kubeconfig(
        tmp_path / "b",
        clusters={"shared": {"server": "https://second:6443"}},
        users={"me": {"token": "from-second"}},
        contexts={"other": {"cluster": "shared", "user": "me"}},
        current="other",
    )
    missing = tmp_path / "absent"
    access = load_configuration(kubeconfig=f"{missing}:{first}:{second}")
    assert access.host == "https://first:6443"
    assert access.credentials() == {"authorization": "Bearer from-second"}


def test_relative_paths_are_resolved_against_the_file_that_names_them(tmp_path: Path) -> None:
    path = one_context(
        tmp_path / "conf" / "config",
        {"server": "https://h:6443/", "certificate-authority": "pki/ca.crt"},
        {"client-certificate": "pki/me.crt", "client-key": "pki/me.key", "tokenFile": "token"},
    )
    (tmp_path / "conf" / "token").write_text("from-file\n")
    access = load_configuration(kubeconfig=path)
    assert access.host == "https://h:6443"
    assert access.ca_file == str(tmp_path / "conf" / "pki" / "ca.crt")
    assert access.cert_file == str(tmp_path / "conf" / "pki" / "me.crt")
    assert access.key_file == str(tmp_path / "conf" / "pki" / "me.key")
    assert access.credentials() == {"authorization": "Bearer from-file"}


def test_inline_data_wins_over_paths_and_client_keys_land_in_private_files(tmp_path: Path) -> None:
    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    path = one_context(
        tmp_path / "config",
        {
            "server": "https://h",
            "certificate-authority": "ignored.crt",
            "certificate-authority-data": b64("CA PEM"),
        },
        {"client-certificate-data": b64("CERT PEM"), "client-key-data": b64("KEY PEM")},
    )
    access = load_configuration(kubeconfig=path)
    assert (access.ca_file, access.ca_data) == (None, "CA PEM")
    assert access.cert_file is not None and access.key_file is not None
    assert Path(access.cert_file).read_text() == "CERT PEM"
    assert Path(access.key_file).read_text() == "KEY PEM"
    assert stat.S_IMODE(Path(access.key_file).stat().st_mode) == 0o600


def test_cluster_settings_for_verification_server_name_and_proxy_are_kept(tmp_path: Path) -> None:
    path = one_context(
        tmp_path / "config",
        {
            "server": "https://10.0.0.1",
            "insecure-skip-tls-verify": True,
            "tls-server-name": "api.example",
            "proxy-url": "http://proxy:3128",
        },
        {"username": "admin", "password": "pw"},
    )
    access = load_configuration(kubeconfig=path)
    assert (access.verify, access.tls_server_name, access.proxy) == (
        False,
        "api.example",
        "http://proxy:3128",
    )
    assert access.credentials() == {"authorization": "Basic " + base64.b64encode(b"admin:pw").decode()}


def test_explicit_host_token_and_ca_override_the_kubeconfig(tmp_path: Path) -> None:
    path = one_context(tmp_path / "config", {"server": "https://h"}, {"token": "old"})
    access = load_configuration(kubeconfig=path, host="https://other/", token="new", ca_file="/ca.crt")
    assert access.host == "https://other"
    assert access.credentials() == {"authorization": "Bearer new"}
    assert access.ca_file == "/ca.crt"


def test_a_user_with_an_exec_plugin_gets_the_token_the_plugin_prints(tmp_path: Path) -> None:
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": "from-plugin"},
    }
    plugin = tmp_path / "plugin.py"
    plugin.write_text(f"print({json.dumps(json.dumps(credential))})\n")
    exec_ = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "command": sys.executable,
        "args": [str(plugin)],
        "interactiveMode": "Never",
    }
    path = one_context(tmp_path / "config", {"server": "https://h"}, {"exec": exec_})
    access = load_configuration(kubeconfig=path)
    assert access.host == "https://h"
    assert access.credentials() == {"authorization": "Bearer from-plugin"}


def test_a_context_naming_an_unknown_cluster_is_a_config_error(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "config", contexts={"ctx": {"cluster": "gone"}}, current="ctx")
    with pytest.raises(KubeConfigError, match="cluster 'gone' not found"):
        load_configuration(kubeconfig=path)


def test_in_cluster_access_reads_the_service_environment_and_rotates_the_token(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t0")
    access = in_cluster_access(
        8, {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, tmp_path
    )
    assert access.host == "https://[fd00::1]:443"
    assert access.ca_file == str(tmp_path / "ca.crt")
    assert access.pool_size == 8
    (tmp_path / "token").write_text("t1")
    assert access.credentials() == {"authorization": "Bearer t1"}


def test_outside_a_cluster_in_cluster_access_says_why(tmp_path: Path) -> None:
    with pytest.raises(KubeConfigError, match="KUBERNETES_SERVICE_HOST"):
        in_cluster_access(8, {}, tmp_path)
    with pytest.raises(KubeConfigError, match="no service-account token"):
        in_cluster_access(8, {"KUBERNETES_SERVICE_HOST": "h", "KUBERNETES_SERVICE_PORT": "1"}, tmp_path)


@pytest.mark.parametrize("value", ["false", "true", "False", 0, 1])
@pytest.mark.parametrize(
    "user", [{"token": "t"}, {"exec": {"apiVersion": "v1", "command": "true"}}], ids=["token", "plugin"]
)
def test_a_tls_flag_that_is_not_a_yaml_boolean_is_an_error_naming_the_field(
    tmp_path: Path, value: object, user: dict[str, Any]
) -> None:
    # client-go decodes the flag into a bool, so a quoted "false" fails the file: it must not turn
    # verification off, as Python's truth of the string "false" would.
    path = one_context(tmp_path / "config", {"server": "https://h", "insecure-skip-tls-verify": value}, user)
    with pytest.raises(KubeConfigError, match="cluster 'c': insecure-skip-tls-verify must be true or false"):
        load_configuration(kubeconfig=path)


@pytest.mark.parametrize(("value", "verify"), [(False, True), (True, False), (None, True)])
def test_a_tls_flag_written_as_a_yaml_boolean_is_taken_as_written(
    tmp_path: Path, value: object, verify: bool
) -> None:
    path = one_context(tmp_path / "config", {"server": "https://h", "insecure-skip-tls-verify": value}, {})
    assert load_configuration(kubeconfig=path).verify is verify
