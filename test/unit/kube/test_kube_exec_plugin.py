"""Exec credential plugins as client-go runs them (ExecCredential v1 and v1beta1), every run bounded: a
plugin that hangs is killed with the processes it started and fails the call that needed it with a
clear error, and the next call runs it again. Tokens are reused until they expire, then asked for again;
the cluster's proxy settings, NO_PROXY included, hold for plugin users as for any other."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.kube.config import load_configuration
from mpioperator.kube.errors import CredentialPluginError, KubeConfigError
from mpioperator.kube.plugins import ExecCredentials
from mpioperator.kube.transport import Transport
from mpioperator.testing.wait import in_thread, wait_for

V1 = "client.authentication.k8s.io/v1"

# Run N of the plugin does plan[N-1]: print a token (expiring in `expires_in` seconds if given), print a
# client certificate, or start a child that sleeps, note its pid, and sleep too.
PLUGIN = """
import datetime, json, os, pathlib, subprocess, sys, time
here = pathlib.Path(sys.argv[1])
runs = here / "runs"
n = int(runs.read_text()) + 1 if runs.exists() else 1
runs.write_text(str(n))
(here / f"exec-info-{n}").write_text(os.environ.get("KUBERNETES_EXEC_INFO", ""))
(here / f"setting-{n}").write_text(os.environ.get("PLUGIN_SETTING", ""))
step = json.loads((here / "plan").read_text())[n - 1]
if step.get("hang"):
    child = subprocess.Popen(["sleep", "600"])
    (here / "child").write_text(str(child.pid))
    time.sleep(600)
status = {k: v for k, v in step.items() if k != "expires_in"}
if "expires_in" in step:
    at = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=step["expires_in"])
    status["expirationTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
print(json.dumps({"apiVersion": sys.argv[2], "kind": "ExecCredential", "status": status}))
"""


def plugin_kubeconfig(
    tmp_path: Path, plan: list[dict[str, Any]], *, api_version: str = V1, **exec_: Any
) -> Path:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "plugin.py").write_text(PLUGIN)
    (tmp_path / "plan").write_text(json.dumps(plan))
    spec = {
        "apiVersion": api_version,
        "command": sys.executable,
        "args": [str(tmp_path / "plugin.py"), str(tmp_path), api_version],
        "interactiveMode": "Never",
        **exec_,
    }
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://kube.example.com:6443"}}],
        "users": [{"name": "u", "user": {"exec": spec}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(doc))
    return path


def runs(tmp_path: Path) -> int:
    return int((tmp_path / "runs").read_text())


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"  # killed, waiting for whoever inherited it to reap it


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_a_plugin_that_hangs_fails_the_load_after_the_bound_and_is_killed_with_its_children(
    tmp_path: Path,
) -> None:
    path = plugin_kubeconfig(tmp_path, [{"hang": True}])
    outcome = in_thread(lambda: load_configuration(kubeconfig=path, plugin_timeout=1.0))
    # The bound is 1 s; the wait is generous for a loaded machine, and without a bound it never ends.
    wait_for(lambda: outcome, timeout=60, what="the load to give up on the hanging plugin")
    error = outcome["error"]
    assert isinstance(error, KubeConfigError)
    assert "gave no credential within 1 s: killed" in str(error)
    child = int((tmp_path / "child").read_text())
    wait_for(lambda: gone(child), timeout=30, what=f"the plugin's child {child} to be killed")


async def test_a_refresh_that_hangs_fails_that_call_and_the_next_call_runs_the_plugin_again(
    tmp_path: Path,
) -> None:
    # Run 1's token expires within the transport's reuse margin, so the first request asks again.
    plan: list[dict[str, Any]] = [
        {"token": "one", "expires_in": 5},
        {"hang": True},
        {"token": "three", "expires_in": 3600},
    ]
    access = load_configuration(kubeconfig=plugin_kubeconfig(tmp_path, plan), plugin_timeout=1.0)
    transport = Transport(access, "test")
    try:
        # The bound is 1 s; the wait is generous for a loaded machine, and without a bound it never ends.
        with pytest.raises(CredentialPluginError):
            await asyncio.wait_for(transport.request("GET", "/api", timeout=5), 60)
        assert access.credentials() == {"authorization": "Bearer three"}
        assert runs(tmp_path) == 3
    finally:
        await transport.close()


def test_callers_waiting_for_a_hung_run_are_bounded_too(tmp_path: Path) -> None:
    # Run 1's token has expired already: every caller needs the new one.
    plan: list[dict[str, Any]] = [
        {"token": "one", "expires_in": -60},
        {"hang": True},
        {"token": "three"},
        {"token": "four"},
    ]
    access = load_configuration(kubeconfig=plugin_kubeconfig(tmp_path, plan), plugin_timeout=1.0)
    outcomes = [in_thread(access.credentials) for _ in range(3)]
    wait_for(lambda: all(outcomes), timeout=60, what="every caller to return")
    errors = [o["error"] for o in outcomes if "error" in o]
    assert errors and all(isinstance(e, CredentialPluginError) for e in errors)
    assert all(o["result"] == {"authorization": "Bearer three"} for o in outcomes if "result" in o)


def test_while_a_renewal_hangs_other_calls_use_the_token_that_still_works(tmp_path: Path) -> None:
    plan: list[dict[str, Any]] = [{"token": "one", "expires_in": 3600}, {"hang": True}, {"token": "three"}]
    path = plugin_kubeconfig(tmp_path, plan)
    spec = yaml.safe_load(path.read_text())["users"][0]["user"]["exec"]
    # Five seconds before run 1's token expires, for as long as the test runs: due for renewal, still valid.
    frozen = time.time() + 3600 - 5
    source = ExecCredentials(spec, None, timeout=15, clock=lambda: frozen)
    assert source() == {"authorization": "Bearer one"}  # run 1
    renewing = in_thread(source)  # run 2, which hangs
    wait_for(lambda: (tmp_path / "child").exists(), timeout=60, what="the renewal to be under way")
    assert source() == {"authorization": "Bearer one"}
    assert renewing == {} and runs(tmp_path) == 2
    wait_for(lambda: renewing, timeout=90, what="the hung renewal to be given up")
    assert isinstance(renewing.get("error"), CredentialPluginError)


def test_a_token_is_reused_until_it_expires_then_asked_for_again(tmp_path: Path) -> None:
    plan: list[dict[str, Any]] = [{"token": "one", "expires_in": 3600}, {"token": "two"}]
    access = load_configuration(kubeconfig=plugin_kubeconfig(tmp_path, plan))
    for _ in range(3):
        assert access.credentials() == {"authorization": "Bearer one"}
    assert runs(tmp_path) == 1
    plan = [{"token": "one", "expires_in": 1}, {"token": "two"}]
    access = load_configuration(kubeconfig=plugin_kubeconfig(tmp_path / "again", plan))
    assert access.credentials() == {"authorization": "Bearer two"}


def test_a_client_certificate_from_the_plugin_is_what_connections_present(tmp_path: Path) -> None:
    plan: list[dict[str, Any]] = [{"clientCertificateData": "CERT PEM\n", "clientKeyData": "KEY PEM\n"}]
    access = load_configuration(
        kubeconfig=plugin_kubeconfig(tmp_path, plan, api_version=V1.replace("v1", "v1beta1"))
    )
    assert access.cert_file is not None and access.key_file is not None
    assert Path(access.cert_file).read_text() == "CERT PEM\n"
    assert Path(access.key_file).read_text() == "KEY PEM\n"
    assert access.credentials() == {}


def test_the_plugin_sees_the_cluster_when_it_asks_and_its_env(tmp_path: Path) -> None:
    plan: list[dict[str, Any]] = [{"token": "one"}]
    path = plugin_kubeconfig(
        tmp_path, plan, provideClusterInfo=True, env=[{"name": "PLUGIN_SETTING", "value": "on"}]
    )
    load_configuration(kubeconfig=path)
    info = json.loads((tmp_path / "exec-info-1").read_text())
    assert info["apiVersion"] == V1
    assert info["spec"]["interactive"] is False
    assert info["spec"]["cluster"]["server"] == "https://kube.example.com:6443"
    assert (tmp_path / "setting-1").read_text() == "on"


def test_an_answer_in_another_api_version_is_refused(tmp_path: Path) -> None:
    path = plugin_kubeconfig(tmp_path, [{"token": "one"}])
    doc = yaml.safe_load(path.read_text())
    doc["users"][0]["user"]["exec"]["args"][2] = "client.authentication.k8s.io/v1beta1"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(
        KubeConfigError, match=r"configured for client\.authentication\.k8s\.io/v1 and answered"
    ):
        load_configuration(kubeconfig=path)


def test_no_proxy_holds_for_a_plugin_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example.com:3128")
    path = plugin_kubeconfig(tmp_path, [{"token": "one"}, {"token": "two"}])
    assert load_configuration(kubeconfig=path).proxy == "http://proxy.example.com:3128"
    monkeypatch.setenv("NO_PROXY", ".example.com")
    assert load_configuration(kubeconfig=path).proxy is None


def test_a_missing_plugin_names_its_install_hint(tmp_path: Path) -> None:
    path = plugin_kubeconfig(tmp_path, [], command=str(tmp_path / "absent"), installHint="install it from x")
    with pytest.raises(KubeConfigError, match="install it from x"):
        load_configuration(kubeconfig=path)
    assert not os.path.exists(tmp_path / "runs")


def test_a_plugin_that_must_be_interactive_is_refused_without_being_run(tmp_path: Path) -> None:
    path = plugin_kubeconfig(tmp_path, [{"token": "one"}], interactiveMode="Always")
    with pytest.raises(KubeConfigError, match="interactiveMode Always"):
        load_configuration(kubeconfig=path)
    assert not (tmp_path / "runs").exists()
