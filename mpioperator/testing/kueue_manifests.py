"""Pure transforms that let Kueue's published manifests run beside a local kube-apiserver.

A local API server has no Service network, so Kueue's webhooks, published as `clientConfig.service`, are
rewritten to `url: https://127.0.0.1:PORT/path` with our own CA as `caBundle`; only the hooks for Kueue's
own objects and the MPIJob integration are kept (the others, pods and batch Jobs above all, would route
every such object in the cluster through Kueue). The configuration file and the command line are built
here too, so that all of this is tested without a Kueue binary.
"""

from __future__ import annotations

import base64
import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

# The integration Kueue manages here (its framework name in the configuration).
MPIJOB_FRAMEWORK = "kubeflow.org/mpijob"
# Where Kueue reads MultiKueue kubeconfig Secrets, and its default.
NAMESPACE = "kueue-system"
# Kueue starts a certificate watcher on this directory whenever internal certificate management is off,
# and exits if it holds no pair, even with metrics off; no flag or configuration field moves it.
METRICS_CERT_DIR = Path("/etc/kueue/metrics/certs")
# Hooks kept: those for Kueue's own kinds, and the MPIJob ones, by the path the webhook server serves.
_KEPT_PATH = re.compile(r"^/(mutate|validate)-(kueue-x-k8s-io-[^/]+|kubeflow-org-v2beta1-mpijob)$")
# WaitForPodsReady as the tests run it. Kueue has it on by default since v0.19, with 30 minutes; for an
# MPIJob its PodsReady is our `Running` condition. The timeout is short enough for a test to see a job that
# never gets there evicted, and long enough that a job whose pods start at once on kwok is never evicted;
# the requeuing backoff (base * 2^(n-1) seconds, plus jitter) is cut to about a second.
PODS_READY_TIMEOUT_SECONDS = 30
REQUEUING_BACKOFF_BASE_SECONDS = 1
REQUEUING_BACKOFF_MAX_SECONDS = 10


def kept_webhook(hook: Mapping[str, Any]) -> bool:
    path = ((hook.get("clientConfig") or {}).get("service") or {}).get("path", "")
    return bool(_KEPT_PATH.match(path))


def webhook_configurations(
    documents: Iterable[Mapping[str, Any] | None], *, port: int, ca_pem: bytes, prefix: str = "kueue-"
) -> list[dict[str, Any]]:
    """Kueue's webhook configurations, filtered to the kept hooks and pointed at 127.0.0.1:`port`."""
    bundle = base64.b64encode(ca_pem).decode()
    out = []
    for document in documents:
        if not document or not document.get("webhooks"):
            continue
        config = copy.deepcopy(dict(document))
        config["metadata"] = {"name": prefix + document["metadata"]["name"]}
        hooks = []
        for hook in config["webhooks"]:
            if not kept_webhook(hook):
                continue
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": bundle}
            hooks.append(hook)
        if hooks:
            config["webhooks"] = hooks
            out.append(config)
    return out


def _merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def configuration(
    *,
    webhook_port: int,
    health_port: int,
    cert_dir: Path,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2) for one local process; `overrides` are merged in.

    VisibilityOnDemand is off: its API server reads a certificate from a hard-wired /visibility directory
    and Kueue exits without it; nothing here uses the visibility API. WaitForPodsReady is on, with the
    short timeout and backoff above; requeuing is unlimited, as Kueue's default.
    """
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "manageJobsWithoutQueueName": False,
        "featureGates": {"VisibilityOnDemand": False},
        "integrations": {"frameworks": [MPIJOB_FRAMEWORK]},
        "waitForPodsReady": {
            "timeout": f"{PODS_READY_TIMEOUT_SECONDS}s",
            "blockAdmission": False,
            "requeuingStrategy": {
                "timestamp": "Eviction",
                "backoffBaseSeconds": REQUEUING_BACKOFF_BASE_SECONDS,
                "backoffMaxSeconds": REQUEUING_BACKOFF_MAX_SECONDS,
            },
        },
    }
    return _merge(config, overrides or {})


def overlay_argv(command: Sequence[str], *, upper: Path, work: Path) -> list[str]:
    """`command` run in a private mount namespace whose /etc is an overlay with `upper` on top.

    `upper` holds kueue/metrics/certs, so Kueue finds its hard-wired metrics pair while the host's /etc is
    untouched. The shell execs the command, so the process stopped later is Kueue itself; the command's
    words are passed as arguments, never spliced into the script.
    """
    script = 'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc && shift 2 && exec "$@"'
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "kueue",
        str(upper),
        str(work),
        *command,
    ]
