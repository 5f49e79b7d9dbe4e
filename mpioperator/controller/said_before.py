"""The status events a sync recorded before its status write met a Conflict (decisions-local L42).

The events of a status change are recorded before the status is written, so whoever sees the change finds
its event already queued. When the write meets a newer object, the next sync computes from that object; a
change it does not show yet is found again, and its event would be recorded a second time. So the events of
the sync that met the Conflict are remembered, and the next sync of the job leaves out each of them once.
"""

from __future__ import annotations

from collections import OrderedDict

from mpioperator.controller.status import StatusEvent


class SaidBefore:
    def __init__(self, capacity: int = 10_000) -> None:
        self._by_uid: OrderedDict[str, list[StatusEvent]] = OrderedDict()
        self._capacity = capacity

    def keep(self, uid: str, events: list[StatusEvent]) -> None:
        """`events` were recorded for a status that was not written."""
        if not uid or not events:
            return
        self._by_uid[uid] = list(events)
        self._by_uid.move_to_end(uid)
        while len(self._by_uid) > self._capacity:
            self._by_uid.popitem(last=False)

    def unsaid(self, uid: str, events: list[StatusEvent]) -> list[StatusEvent]:
        """`events` without those the job's last conflicted sync recorded already, each left out once."""
        said = self._by_uid.pop(uid, None)
        if not said:
            return events
        left = []
        for event in events:
            if event in said:
                said.remove(event)
            else:
                left.append(event)
        return left
