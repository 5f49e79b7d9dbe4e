"""Admission made to refuse on purpose: a ValidatingAdmissionPolicy bound to one namespace, for the tests of
what the controller does when the API server refuses a write."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from mpioperator.testing.rest import RestClient, RestError

ROOT = "/apis/admissionregistration.k8s.io/v1"


@contextlib.contextmanager
def denying_policy(
    rest: RestClient,
    name: str,
    namespace: str,
    rule: dict[str, Any],
    validation: dict[str, Any],
    match_conditions: list[dict[str, Any]] | None = None,
) -> Iterator[None]:
    """While the block runs, policy `name` applies `validation` (an expression that fails, and what the
    denial says) to the requests `rule` matches in `namespace` only (and `match_conditions`, if any)."""
    spec: dict[str, Any] = {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [rule]}}
    if match_conditions:
        spec["matchConditions"] = match_conditions
    spec["validations"] = [validation]
    rest.create(f"{ROOT}/validatingadmissionpolicies", {"metadata": {"name": name}, "spec": spec})
    rest.create(
        f"{ROOT}/validatingadmissionpolicybindings",
        {
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
                },
            },
        },
    )
    try:
        yield
    finally:
        for kind in ("validatingadmissionpolicybindings", "validatingadmissionpolicies"):
            with contextlib.suppress(RestError):
                rest.delete(f"{ROOT}/{kind}/{name}")
