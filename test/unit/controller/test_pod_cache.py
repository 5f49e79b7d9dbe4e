"""The pod cache keeps what the controller reads of a pod, and drops the rest."""

from __future__ import annotations

import orjson

from mpioperator.controller.child_state import pod_ready
from mpioperator.controller.pod_cache import POD_FIELDS, slim_pod
from mpioperator.kube.projection import Projection


def full_pod() -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pi-worker-0",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "42",
            "creationTimestamp": "2026-11-23T10:00:00Z",
            "deletionTimestamp": "2026-11-23T10:05:00Z",
            "labels": {
                "training.kubeflow.org/job-role": "worker",
                "training.kubeflow.org/replica-index": "0",
            },
            "annotations": {"big": "x" * 1000},
            "ownerReferences": [{"kind": "MPIJob", "name": "pi", "uid": "j-1", "controller": True}],
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"containers": [{"name": "worker", "image": "mpi", "env": [{"name": "A", "value": "b"}]}]},
        "status": {
            "phase": "Failed",
            "reason": "Evicted",
            "message": "The node was low on resource: memory.",
            "conditions": [
                {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-23T10:01:00Z"},
            ],
            "containerStatuses": [{"name": "worker", "state": {"terminated": {"exitCode": 137}}}],
        },
    }


def test_slim_pod_keeps_identity_ownership_labels_and_deletion_mark() -> None:
    slim = slim_pod(full_pod())
    meta = slim["metadata"]
    assert meta["name"] == "pi-worker-0" and meta["namespace"] == "ns" and meta["uid"] == "u-1"
    assert meta["resourceVersion"] == "42"
    assert meta["deletionTimestamp"] == "2026-11-23T10:05:00Z"
    assert meta["labels"]["training.kubeflow.org/replica-index"] == "0"
    assert meta["ownerReferences"][0]["uid"] == "j-1"


def test_slim_pod_keeps_phase_reason_message_and_condition_truth() -> None:
    slim = slim_pod(full_pod())
    assert slim["status"]["phase"] == "Failed"
    assert slim["status"]["reason"] == "Evicted"
    assert slim["status"]["message"] == "The node was low on resource: memory."
    assert slim["status"]["conditions"] == [{"type": "Ready", "status": "False"}]
    assert pod_ready(slim) is False


def test_slim_pod_keeps_the_pod_ip_a_hostfile_of_ips_lists_and_no_other_address() -> None:
    pod = full_pod()
    status = pod["status"]
    assert isinstance(status, dict)
    status.update(podIP="10.244.0.7", hostIP="172.18.0.2", podIPs=[{"ip": "10.244.0.7"}])
    slim = slim_pod(pod)
    assert slim["status"]["podIP"] == "10.244.0.7"
    assert "hostIP" not in slim["status"] and "podIPs" not in slim["status"]


def test_slim_pod_of_an_unbound_pod_drops_spec_annotations_and_managed_fields() -> None:
    slim = slim_pod(full_pod())
    assert "spec" not in slim
    assert "annotations" not in slim["metadata"]
    assert "managedFields" not in slim["metadata"]


def test_a_healthy_containers_status_is_dropped_whole() -> None:
    pod = full_pod()
    running = {
        "name": "worker",
        "ready": True,
        "restartCount": 0,
        "image": "mpi",
        "imageID": "sha256:1",
        "state": {"running": {"startedAt": "2026-11-23T10:00:01Z"}},
        "started": True,
    }
    pod["status"] = {"phase": "Running", "containerStatuses": [running], "initContainerStatuses": [running]}
    assert slim_pod(pod)["status"] == {"phase": "Running"}


def test_of_a_container_only_what_says_something_is_wrong_is_kept() -> None:
    pod = full_pod()
    pod["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes"},
            {"type": "Ready", "status": "True", "reason": "ignored", "message": "ignored"},
        ],
        "containerStatuses": [
            {
                "name": "a",
                "ready": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}},
            },
            {
                "name": "b",
                "ready": False,
                "restartCount": 0,
                "image": "x",
                "state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}},
            },
            {
                "name": "c",
                "ready": True,
                "restartCount": 2,
                "state": {"running": {"startedAt": "T2"}},
                "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137, "startedAt": "T0"}},
            },
            {
                "name": "d",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"reason": "Error", "exitCode": 2, "message": "x" * 5000 + "boom"}},
            },
            {
                "name": "e",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"reason": "Completed", "exitCode": 0}},
            },
        ],
    }
    status = slim_pod(pod)["status"]
    assert status["conditions"] == [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes"},
        {"type": "Ready", "status": "True"},
    ]
    b, c, d = status["containerStatuses"]
    assert b == {"state": {"waiting": {"reason": "ErrImagePull", "message": "not found"}}}
    assert c == {
        "restartCount": 2,
        "state": {"running": {"startedAt": "T2"}},
        "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
    }
    assert d["state"]["terminated"]["exitCode"] == 2
    message = d["state"]["terminated"]["message"]
    assert message.endswith("boom") and len(message) == 1024


def test_slim_pods_share_one_copy_of_repeated_label_strings() -> None:
    # Built at run time, as a JSON parser makes them: equal strings that are distinct objects.
    key_1, key_2 = ("".join(["training.kubeflow.org/", "job-role"]) for _ in range(2))
    value_1, value_2 = ("".join(["work", "er"]) for _ in range(2))
    assert key_1 is not key_2 and value_1 is not value_2
    first, second = full_pod(), full_pod()
    first["metadata"]["labels"] = {key_1: value_1}  # type: ignore[index]
    second["metadata"]["labels"] = {key_2: value_2}  # type: ignore[index]
    ((a_key, a_value),) = slim_pod(first)["metadata"]["labels"].items()
    ((b_key, b_value),) = slim_pod(second)["metadata"]["labels"].items()
    assert a_key is b_key
    assert a_value is b_value


def test_slim_pod_of_a_pod_without_status_has_an_empty_status() -> None:
    assert slim_pod({"metadata": {"name": "p"}})["status"] == {}


def test_a_pod_parsed_through_the_projection_slims_to_the_same_cached_pod() -> None:
    line = orjson.dumps({"type": "MODIFIED", "object": full_pod()})
    projected = Projection(POD_FIELDS, "Pod").event(line)["object"]
    assert projected.get("spec", {}) == {}  # of the spec only nodeName is read, and this pod has none
    assert slim_pod(projected) == slim_pod(full_pod())


def test_slim_pod_keeps_the_node_it_is_bound_to_and_why_it_is_disrupted() -> None:
    pod = full_pod()
    pod["spec"] = {"nodeName": "node-c", "containers": [{"name": "worker", "image": "mpi"}]}
    disrupted = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint",
        "lastTransitionTime": "2026-11-23T10:04:00Z",
    }
    pod["status"]["conditions"] = [*pod["status"]["conditions"], disrupted]  # type: ignore[index]

    slim = slim_pod(pod)

    assert slim["spec"] == {"nodeName": "node-c"}
    assert slim["status"]["conditions"][-1] == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "DeletionByTaintManager",
        "message": "Taint manager: deleting due to NoExecute taint",
    }
    # And through the informer's projection, as the pods arrive in JSON.
    projected = Projection(POD_FIELDS, "Pod").list(orjson.dumps({"items": [pod]}))["items"][0]
    assert slim_pod(projected) == slim


def test_pods_share_one_copy_of_each_kubelet_condition_but_not_of_custom_or_explained_ones() -> None:
    def pod_with(*conditions: dict[str, str]) -> dict[str, object]:
        pod = full_pod()
        status: dict[str, object] = pod["status"]  # type: ignore[assignment]
        status["conditions"] = [{**c, "lastTransitionTime": "2026-11-23T10:01:00Z"} for c in conditions]
        return pod

    ready = {"type": "Ready", "status": "True"}
    gate = {"type": "example.com/warmed-up", "status": "True"}
    unplaced = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
    first = slim_pod(pod_with(ready, gate, unplaced))["status"]["conditions"]
    second = slim_pod(pod_with(ready, gate, unplaced))["status"]["conditions"]

    assert first == second == [ready, gate, unplaced]
    assert first[0] is second[0]
    assert first[1] is not second[1]  # a readiness gate's type is the user's, so it is not kept forever
    assert first[2] is not second[2]  # its reason and message are this pod's own
