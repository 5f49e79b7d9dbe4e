"""Where the operator's access to the cluster comes from: in-cluster, a kubeconfig, or explicit settings.

Our own loader covers what client-go's does for operators and their users: service-account tokens,
kubeconfig tokens, token files, client certificates, basic auth, exec plugins (kube/plugins.py),
impersonation, and proxies from the environment with NO_PROXY (kube/proxyenv.py). The official client,
with its import cost of a tenth of a second or more, is imported only for auth-provider users, whose
plugins (oidc, gcp, azure) it knows how to refresh."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mpioperator.kube import kubeconfig as kubeconfigs
from mpioperator.kube.access import (
    PLUGIN_TIMEOUT_S,
    ClusterAccess,
    Credentials,
    bearer_token,
    bearer_token_file,
)
from mpioperator.kube.errors import CredentialPluginError, KubeConfigError

DEFAULT_KUBECONFIG = "~/.kube/config"
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def kubeconfig_path(
    explicit: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """The kubeconfig kubectl would read: --kubeconfig, else $KUBECONFIG (a list of files, merged), else
    ~/.kube/config. Read at each call, so a changed environment is honoured."""
    if explicit:
        return str(explicit)
    env = os.environ if environ is None else environ
    return env.get("KUBECONFIG") or os.path.expanduser(DEFAULT_KUBECONFIG)


def context_namespace(
    kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None
) -> str | None:
    """The namespace the kubeconfig's context (the current one unless named) sets, None if it sets none."""
    path = kubeconfig_path(kubeconfig)
    try:
        config = kubeconfigs.read(path)
    except (OSError, ValueError) as exc:
        raise KubeConfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    try:
        _, ctx = config.context(context)
    except (LookupError, ValueError) as exc:
        raise KubeConfigError(f"{exc} in kubeconfig {path}") from None
    namespace = ctx.get("namespace")
    return str(namespace) if namespace else None


def load_configuration(
    *,
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    in_cluster: bool = False,
    host: str | None = None,
    token: str | None = None,
    ca_file: str | None = None,
    pool_size: int = 16,
    plugin_timeout: float = PLUGIN_TIMEOUT_S,
    environ: Mapping[str, str] | None = None,
) -> ClusterAccess:
    """In-cluster, kubeconfig (default path when neither host nor path is given) or explicit settings.

    Explicit host/token/CA override what was loaded, so a kubeconfig can be pointed at another server.
    The proxy is the cluster's proxy-url, else the environment's for the final host, as client-go's.
    A credential plugin's run is bounded by `plugin_timeout` seconds."""
    if in_cluster:
        access = in_cluster_access(pool_size)
    elif kubeconfig is not None or host is None:
        path = kubeconfig_path(kubeconfig)
        try:
            access = kubeconfig_access(path, context, pool_size, plugin_timeout)
        except (OSError, ValueError, LookupError) as exc:
            raise KubeConfigError(f"cannot load kubeconfig {path}: {exc}") from exc
        except CredentialPluginError as exc:
            # The plugin's first run is part of loading: a failure then is the kubeconfig's to report.
            raise KubeConfigError(f"cannot load kubeconfig {path}: {exc.message}") from exc
    else:
        access = ClusterAccess(host=host, pool_size=pool_size)  # normalised with the override below
    if host is not None:
        access.host = host.rstrip("/")
    if token is not None:
        access.credentials = bearer_token(token)
    if ca_file is not None:
        access.ca_file, access.ca_data = ca_file, None
    access.choose_proxy(environ)
    return access


def in_cluster_access(
    pool_size: int, environ: Mapping[str, str] | None = None, account: Path = SERVICE_ACCOUNT
) -> ClusterAccess:
    env = os.environ if environ is None else environ
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeConfigError("not in a cluster: KUBERNETES_SERVICE_HOST and _PORT are not set")
    token = account / "token"
    if not token.is_file():
        raise KubeConfigError(f"not in a cluster: no service-account token at {token}")
    server = f"[{host}]" if ":" in host else host
    access = ClusterAccess(
        host=f"https://{server}:{port}",
        ca_file=str(account / "ca.crt"),
        credentials=bearer_token_file(token),
        pool_size=pool_size,
    )
    # client-go's in-cluster config names no proxy: HTTPS_PROXY and NO_PROXY of the pod apply.
    access.choose_proxy(env)
    return access


def kubeconfig_access(
    path: str, context: str | None, pool_size: int, plugin_timeout: float = PLUGIN_TIMEOUT_S
) -> ClusterAccess:
    config = kubeconfigs.read(path)
    access = kubeconfigs.access_for(config, context, pool_size, plugin_timeout)
    provider = config.auth_provider(context)
    if provider is not None:
        try:
            access.credentials = _auth_provider_credentials(path, context, plugin_timeout)
        except ImportError as exc:
            user, name = provider
            raise KubeConfigError(
                f"kubeconfig {path}: user {user} authenticates with auth-provider {name}, which needs the "
                "official kubernetes client: pip install 'mpioperator[auth-provider]'"
            ) from exc
    return access


def _auth_provider_credentials(path: str, context: str | None, timeout: float) -> Credentials:
    """The official client runs and refreshes auth-provider plugins; everything else about the cluster
    (TLS, proxy, impersonation) is read as for any user. The client is an optional extra, imported here
    only: nothing else needs it, and it is the largest dependency by far."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    from mpioperator.kube.plugins import Bounded

    cfg: Any = k8s_client.Configuration()

    def load() -> None:
        try:
            k8s_config.load_kube_config(config_file=path, context=context, client_configuration=cfg)  # type: ignore[no-untyped-call]
        except ConfigException as exc:
            raise ValueError(str(exc)) from exc

    def headers() -> dict[str, str]:
        # auth_settings runs the loader's refresh hook, which asks the provider again once the token expires.
        settings: dict[str, dict[str, Any]] = dict(cfg.auth_settings())
        return {
            str(s["key"]): str(s["value"])
            for s in settings.values()
            if s.get("in") == "header" and s.get("value")
        }

    Bounded(load, f"auth-provider of kubeconfig {path}", timeout)()
    return Bounded(headers, f"auth-provider of kubeconfig {path}", timeout)
