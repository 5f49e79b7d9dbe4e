"""auth-provider users stay the official client's (it refreshes oidc tokens), with the rest of the
cluster read as for any user, and a provider that hangs (an identity provider that never answers) fails
after the plugin bound instead of holding the caller for ever."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mpioperator.kube.config import load_configuration
from mpioperator.kube.errors import KubeConfigError
from mpioperator.testing.wait import in_thread, wait_for


def jwt(exp: float) -> str:
    def part(doc: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'exp': int(exp), 'sub': 'jane'})}.c2ln"


def oidc_kubeconfig(path: Path, id_token: str, issuer: str, **cluster: Any) -> Path:
    provider = {
        "name": "oidc",
        "config": {
            "client-id": "c",
            "client-secret": "s",
            "id-token": id_token,
            "refresh-token": "r",
            "idp-issuer-url": issuer,
        },
    }
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://kube.example.com", **cluster}}],
        "users": [{"name": "u", "user": {"auth-provider": provider, "as": "jane"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture
def silent_issuer() -> Iterator[str]:
    """An identity provider that takes connections (the kernel's backlog) and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def test_a_valid_oidc_token_is_sent_with_the_clusters_settings(tmp_path: Path, silent_issuer: str) -> None:
    token = jwt(time.time() + 3600)
    path = oidc_kubeconfig(tmp_path / "config", token, silent_issuer, **{"tls-server-name": "kube"})
    access = load_configuration(kubeconfig=path)
    assert access.credentials() == {"authorization": f"Bearer {token}"}
    assert access.tls_server_name == "kube"
    assert access.default_headers == (("Impersonate-User", "jane"),)


def test_an_identity_provider_that_never_answers_fails_the_load_after_the_bound(
    tmp_path: Path, silent_issuer: str
) -> None:
    path = oidc_kubeconfig(tmp_path / "config", jwt(time.time() - 3600), silent_issuer)
    outcome = in_thread(lambda: load_configuration(kubeconfig=path, plugin_timeout=1.0))
    wait_for(lambda: outcome, timeout=60, what="the load to give up on the silent identity provider")
    error = outcome.get("error")
    assert isinstance(error, KubeConfigError), outcome
    assert "gave no credential within 1 s" in str(error)


def test_without_the_kubernetes_package_an_auth_provider_kubeconfig_fails_naming_the_extra(
    tmp_path: Path, silent_issuer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = oidc_kubeconfig(tmp_path / "config", jwt(time.time() + 3600), silent_issuer)
    monkeypatch.setitem(sys.modules, "kubernetes", None)  # what an install without the extra has
    with pytest.raises(KubeConfigError) as failed:
        load_configuration(kubeconfig=path)
    assert str(failed.value) == (
        f"kubeconfig {path}: user u authenticates with auth-provider oidc, which needs the official "
        "kubernetes client: pip install 'mpioperator[auth-provider]'"
    )


def test_the_operator_and_the_plugin_start_without_importing_the_kubernetes_package() -> None:
    probe = "import sys, mpioperator.app.main, mpioperator.cli.main; print('kubernetes' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout == "False\n"
