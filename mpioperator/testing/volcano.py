"""Volcano's scheduler as a component of the local cluster, for gang-scheduling e2e tests with Volcano.

The scheduler and its CRDs come from the volcano.sh/volcano Go module (hack/build-volcano-scheduler.sh),
never from copies in this repository. Without Volcano's controller-manager nobody opens the `default`
queue the scheduler creates, and a queue that is not Open admits nothing, so the cluster opens it.
"""

from __future__ import annotations

from pathlib import Path

from mpioperator.testing.binaries import built_executable
from mpioperator.testing.images.versions import pinned
from mpioperator.testing.plane import ControlPlane
from mpioperator.testing.podgroup_crds import module_dir
from mpioperator.testing.wait import wait_for

NAME = "volcano-scheduler"
SCHEDULER_NAME = "volcano"
MODULE = "volcano.sh/volcano"
# The version hack/build-volcano-scheduler.sh builds: the CRDs match the scheduler that reads them.
VERSION = pinned("VOLCANO_SCHEDULER_VERSION")
BIN_ENV = "VOLCANO_SCHEDULER_BIN"
_SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "build-volcano-scheduler.sh"
# The kinds the scheduler lists at start; it waits for every informer, so each CRD must be served.
CRDS = (
    "scheduling.volcano.sh_podgroups.yaml",
    "scheduling.volcano.sh_queues.yaml",
    "topology.volcano.sh_hypernodes.yaml",
    "nodeinfo.volcano.sh_numatopologies.yaml",
    "shard.volcano.sh_nodeshards.yaml",
)
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"

# Volcano's documented default pipeline: admit gangs whose minResources fit (enqueue), then place them
# whole (allocate, with the gang plugin refusing partial placements).
CONFIG = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


def find_scheduler() -> Path:
    """$VOLCANO_SCHEDULER_BIN, else the cached build of hack/build-volcano-scheduler.sh (built if needed)."""
    return built_executable(BIN_ENV, _SCRIPT, what="Volcano's scheduler", kind="Volcano scheduler")


def crd_paths() -> list[Path]:
    bases = module_dir(MODULE, VERSION) / "config" / "crd" / "volcano" / "bases"
    return [bases / name for name in CRDS]


def start(cluster: ControlPlane, binary: Path, root: Path) -> None:
    """Serve Volcano's CRDs, run its scheduler, and open the default queue it creates."""
    for crd in crd_paths():
        cluster.kubectl("apply", "--server-side", "-f", str(crd))
    wait_for(lambda: cluster.rest.get(QUEUES), timeout=30, what="Volcano's Queue kind to be served")
    config = root / "volcano-scheduler.conf"
    config.write_text(CONFIG)
    argv = [
        str(binary),
        f"--kubeconfig={cluster.kubeconfig}",
        f"--scheduler-conf={config}",
        "--leader-elect=false",
        "--listen-address=127.0.0.1:0",
        "--healthz-address=127.0.0.1:0",
        "-v=2",
    ]
    cluster.spawn_component(NAME, argv)
    wait_for(
        lambda: cluster.rest.exists(f"{QUEUES}/default"),
        timeout=60,
        what="Volcano's scheduler to create the default queue",
    )
    cluster.rest.merge_patch(f"{QUEUES}/default/status", {"status": {"state": "Open"}})
