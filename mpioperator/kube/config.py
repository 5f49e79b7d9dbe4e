"""One explicit client Configuration per KubeClient, never the library's shared global default."""

from __future__ import annotations

import os

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config


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
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig is not None else None,
            context=context,
            client_configuration=cfg,
        )
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
