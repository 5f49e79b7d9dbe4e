"""What one delete asks of the API server, as one value (metav1.DeleteOptions' fields that we use): the
client's `delete` and the Writes Protocol (kube/calls.py) take it, so neither restates the keywords."""

from __future__ import annotations

from dataclasses import dataclass

from mpioperator.api.objects import Obj


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOptions:
    # Background: the object goes at once and the garbage collector deletes its dependents after it.
    propagation_policy: str | None = "Background"
    # What must still hold of the object for the server to delete it (a 409 Conflict otherwise).
    preconditions: Obj | None = None

    @classmethod
    def if_uid(cls, uid: str | None) -> DeleteOptions:
        """Only the object with this uid, not a new one made under its name since it was read (any, when
        the uid is not known)."""
        return cls(preconditions={"uid": uid} if uid else None)

    def body(self) -> Obj:
        """The DeleteOptions object sent as the request's body."""
        options: Obj = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if self.propagation_policy:
            options["propagationPolicy"] = self.propagation_policy
        if self.preconditions:
            options["preconditions"] = self.preconditions
        return options


# The object, whatever its uid, its dependents deleted in the background.
BACKGROUND = DeleteOptions()
