"""Which answers are asked for as protobuf, and the fall-back to JSON when one does not decode.

A resource is asked for protobuf when its projection knows the kind's protobuf message. The server
answers protobuf for built-in kinds and JSON where it has none, so each answer is decoded by its own
Content-Type. A protobuf answer that does not decode, whatever the decoder raises (a field of an
unexpected type, a newer server's change, a time out of range), is logged once and that resource is asked
for JSON from then on: a list page is fetched again as JSON at once, a watch ends and its caller watches
again from its last event. Anything short of that would let one odd object, which anyone allowed to create
it can write, stop an informer for good: it would ask for protobuf again on every retry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import structlog

from mpioperator.api.objects import Obj
from mpioperator.kube import errors
from mpioperator.kube.projection import Projection
from mpioperator.kube.protoapi import PROTOBUF, ProtoProjection, is_protobuf
from mpioperator.kube.resources import Resource

# Protobuf where the server has it (built-in kinds), JSON where it has not (custom resources).
ACCEPT_PROTOBUF = f"{PROTOBUF}, application/json"
# What a protobuf body that does not decode raises: anything. Cancellation and KeyboardInterrupt are not
# Exceptions, so they still go through.
UNDECODED = Exception

log = structlog.get_logger(__name__)


def content_type(headers: Mapping[str, str]) -> str | None:
    for key, value in headers.items():
        if key.lower() == "content-type":
            return value
    return None


class Negotiation:
    def __init__(self, *, enabled: bool = True) -> None:
        self._enabled = enabled
        self._json_only: set[str] = set()

    @property
    def enabled(self) -> bool:
        return self._enabled

    def protobuf(self, res: Resource, projection: Projection | None) -> ProtoProjection | None:
        """The protobuf decoder to ask `res` for, or None for JSON."""
        if not self._enabled or projection is None or res.plural in self._json_only:
            return None
        return projection.protobuf

    def accept(self, res: Resource, projection: Projection | None) -> str | None:
        return ACCEPT_PROTOBUF if self.protobuf(res, projection) is not None else None

    def decode_list(self, res: Resource, proto: ProtoProjection, body: bytes) -> Obj | None:
        """A protobuf list page, or None after falling back (the caller asks again, for JSON)."""
        try:
            return proto.list(body)
        except UNDECODED as exc:
            self.fall_back(res, exc)
            return None

    def frame_decoder(self, res: Resource, proto: ProtoProjection) -> Callable[[bytes], Obj]:
        def decode_frame(frame: bytes) -> Obj:
            try:
                return proto.event(frame)
            except UNDECODED as exc:
                self.fall_back(res, exc)
                # The watch ends here; its caller watches again from the last event it had, as JSON.
                raise errors.ApiError(0, "", f"protobuf watch event did not decode: {exc}") from exc

        return decode_frame

    def fall_back(self, res: Resource, exc: BaseException) -> None:
        if res.plural not in self._json_only:
            self._json_only.add(res.plural)
            log.warning(
                "a protobuf answer did not decode; JSON for this resource from now on",
                resource=res.plural,
                error=f"{type(exc).__name__}: {exc}",
            )

    def is_protobuf(self, headers: Mapping[str, str]) -> bool:
        return is_protobuf(content_type(headers))
