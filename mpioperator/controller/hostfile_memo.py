"""Which version of each job's ConfigMap was last found right, so an unchanged job's sync builds no hostfile.

The hostfile has a line per worker: building it at every sync of a big job, to find it equal to what the
ConfigMap already holds, was the sync's largest cost. A ConfigMap version (its uid and resourceVersion)
found equal to the data made from some inputs stays equal for as long as both are unchanged; any write to
it, ours or anyone's, makes a new version that is compared again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable

from mpioperator.api.objects import Obj
from mpioperator.controller.builders.configmap import Addresses, data_inputs


class VerifiedConfigMaps:
    """Per job (by uid), the inputs and ConfigMap version last found to agree; the newest `capacity` jobs."""

    def __init__(self, capacity: int = 20_000) -> None:
        self._verified: OrderedDict[str, Hashable] = OrderedDict()
        self._capacity = capacity

    @staticmethod
    def inputs(
        job: Obj, running_workers: Iterable[Obj], cached: Obj | None, addresses: Addresses | None = None
    ) -> Hashable | None:
        """What the comparison of `cached` with the job's data depends on; None without a cached one."""
        if cached is None:
            return None
        meta = cached["metadata"]
        version = (meta.get("uid"), meta.get("resourceVersion"))
        if not all(version):
            return None
        return (version, data_inputs(job, running_workers, addresses))

    def verified(self, job: Obj, inputs: Hashable | None) -> bool:
        uid = job["metadata"].get("uid", "")
        return inputs is not None and bool(uid) and self._verified.get(uid) == inputs

    def remember(self, job: Obj, inputs: Hashable | None) -> None:
        uid = job["metadata"].get("uid", "")
        if inputs is None or not uid:
            return
        self._verified[uid] = inputs
        self._verified.move_to_end(uid)
        while len(self._verified) > self._capacity:
            self._verified.popitem(last=False)
