"""Our extensions' controller side, each a `Feature` (controller/feature.py), built and ordered here.

The order is the order the sync asks them at each hook: the exec launch agent first (its RBAC grants come
before anything deletes or rolls a pod), the whole-job restart, a worker lost without one (after the
restart, which takes the job when its policy restarts it), the conveniences, the gang's PodGroup, the
hostfile of pod IPs, and the worker roll last (it describes the status after debug mode has).
"""

from __future__ import annotations

from mpioperator.controller.feature import Feature, FeaturePorts
from mpioperator.controller.features.conveniences import ConveniencesFeature
from mpioperator.controller.features.elastic_bounds import ElasticBoundsFeature
from mpioperator.controller.features.exec_agent import ExecAgentFeature
from mpioperator.controller.features.last_words import LastWordsFeature
from mpioperator.controller.features.launcher_log import LauncherLogFeature
from mpioperator.controller.features.pod_groups import PodGroupsFeature
from mpioperator.controller.features.pod_ip_hostfile import PodIPHostfileFeature
from mpioperator.controller.features.restarts import RestartsFeature
from mpioperator.controller.features.worker_loss import WorkerLossFeature
from mpioperator.controller.features.worker_roll import WorkerRollFeature


def default_features(ports: FeaturePorts) -> list[Feature]:
    return [
        ElasticBoundsFeature(ports),
        ExecAgentFeature(ports),
        RestartsFeature(ports),
        WorkerLossFeature(ports),
        ConveniencesFeature(ports),
        PodGroupsFeature(ports),
        PodIPHostfileFeature(ports),
        WorkerRollFeature(ports),
        LastWordsFeature(ports),
        LauncherLogFeature(ports),
    ]
