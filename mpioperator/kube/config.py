"""One explicit client Configuration per KubeClient, never the library's shared global default."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from mpioperator.kube.errors import KubeConfigError

DEFAULT_KUBECONFIG = "~/.kube/config"


def kubeconfig_path(
    explicit: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """The kubeconfig kubectl would read: --kubeconfig, else $KUBECONFIG (a list of files, merged), else
    ~/.kube/config. Read at each call: the library's own default is fixed when it is imported."""
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
        contexts, current = k8s_config.list_kube_config_contexts(config_file=path)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, ValueError) as exc:
        raise KubeConfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    chosen: Any = current
    if context is not None:
        chosen = next((c for c in contexts or () if c.get("name") == context), None)
        if chosen is None:
            raise KubeConfigError(f"context {context!r} not found in kubeconfig {path}")
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
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
) -> k8s_client.Configuration:
    """In-cluster, kubeconfig (default path when neither host nor path is given) or explicit settings.

    Explicit host/token/CA override what was loaded, so a kubeconfig can be pointed at another server.
    """
    cfg = k8s_client.Configuration()
    if in_cluster:
        k8s_config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    elif kubeconfig is not None or host is None:
        try:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=str(kubeconfig) if kubeconfig is not None else None,
                context=context,
                client_configuration=cfg,
            )
        except (ConfigException, OSError, ValueError) as exc:
            where = kubeconfig if kubeconfig is not None else os.environ.get("KUBECONFIG", DEFAULT_KUBECONFIG)
            raise KubeConfigError(f"cannot load kubeconfig {where}: {exc}") from exc
    if host is not None:
        cfg.host = host
    if token is not None:
        # Replaces (not merely adds to) loaded credentials: the library prefers "BearerToken" over
        # "authorization", and a kubeconfig's refresh hook would overwrite the token on every request.
        cfg.api_key = {"BearerToken": f"Bearer {token}"}
        cfg.api_key_prefix = {}
        cfg.refresh_api_key_hook = None
    if ca_file is not None:
        cfg.ssl_ca_cert = ca_file
    # Every open watch pins a connection; the default (cpu_count * 5) churns connections under load.
    cfg.connection_pool_maxsize = pool_size
    # Retries belong to the work queue and the reflector, which know what a retry means.
    cfg.retries = False
    cfg.client_go_retries = False
    # Idle watches otherwise die silently behind proxies and load balancers.
    cfg.keep_alive = True
    return cfg
