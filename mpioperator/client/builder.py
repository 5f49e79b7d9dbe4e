"""A typed builder for `kubeflow.org/v2beta1` MPIJobs: the common job in a few lines, every v2beta1 field
reachable, and the result checked as the operator will check it before anything is sent.

    job = (
        MPIJobBuilder("pi")
        .image("mpioperator/mpi-pi:openmpi")
        .workers(2)
        .launcher_command("mpirun", "-n", "2", "/home/mpiuser/pi")
        .build()
    )

`build()` returns the plain dict the API takes (the project passes objects as dicts everywhere), so
anything the builder does not name can still be set on the result.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal, Self

from mpioperator.api import constants as api
from mpioperator.api.defaults import set_defaults
from mpioperator.api.validation import validate_mpijob
from mpioperator.client.annotations import AnnotationSetters
from mpioperator.client.errors import InvalidMPIJob

Obj = dict[str, Any]
MPIImplementation = Literal["OpenMPI", "Intel", "MPICH"]
CleanPodPolicy = Literal["None", "Running", "All"]
LauncherCreationPolicy = Literal["AtStartup", "WaitForWorkersReady"]
RestartPolicy = Literal["Never", "OnFailure"]
ReplicaType = Literal["Launcher", "Worker"]
GPU_RESOURCE = "nvidia.com/gpu"


@dataclass
class _Replica:
    """What the builder knows about one replica type; rendered into a PodTemplateSpec by `template()`."""

    container: str
    replicas: int
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: dict[str, Obj] = field(default_factory=dict)  # by name: the whole EnvVar
    limits: dict[str, str] = field(default_factory=dict)
    requests: dict[str, str] = field(default_factory=dict)
    restart_policy: RestartPolicy | None = None
    run_as_user: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    raw_template: Obj | None = None

    def spec(self, default_image: str | None) -> Obj:
        out: Obj = {"replicas": self.replicas, "template": self.template(default_image)}
        if self.restart_policy is not None:
            out["restartPolicy"] = self.restart_policy
        return out

    def template(self, default_image: str | None) -> Obj:
        if self.raw_template is not None:
            return copy.deepcopy(self.raw_template)
        container: Obj = {"name": self.container, "image": self.image or default_image}
        if self.command is not None:
            container["command"] = list(self.command)
        if self.args is not None:
            container["args"] = list(self.args)
        if self.env:
            container["env"] = [copy.deepcopy(v) for v in self.env.values()]
        resources = {k: v for k, v in (("limits", self.limits), ("requests", self.requests)) if v}
        if resources:
            container["resources"] = copy.deepcopy(resources)
        if self.run_as_user is not None:
            container["securityContext"] = {"runAsUser": self.run_as_user}
        pod_spec: Obj = {"containers": [container]}
        if self.node_selector:
            pod_spec["nodeSelector"] = dict(self.node_selector)
        template: Obj = {"spec": pod_spec}
        metadata = {k: dict(v) for k, v in (("labels", self.labels), ("annotations", self.annotations)) if v}
        if metadata:
            template["metadata"] = metadata
        return template


class MPIJobBuilder(AnnotationSetters):
    """Builds one MPIJob. Each setter returns the builder; `build()` checks and returns the object.
    The setters of the operator's `mpioperator.io/` annotations are AnnotationSetters'.

    `image`, `env`, `run_as_user`, `resources` and `pod_annotation` without `replica=` apply to the
    launcher and the workers alike; `launcher(...)` and `worker(...)` set one side only."""

    def __init__(self, name: str, *, namespace: str | None = None) -> None:
        self._name = name
        self._namespace = namespace
        self._labels: dict[str, str] = {}
        self._annotations: dict[str, str] = {}
        self._spec: Obj = {}
        self._run_policy: Obj = {}
        self._scheduling: Obj = {}
        self._image: str | None = None
        self._replicas: dict[str, _Replica] = {
            api.LAUNCHER: _Replica("launcher", 1),
            api.WORKER: _Replica("worker", 1),
        }

    # -- both replica types -----------------------------------------------------------------------------
    def image(self, image: str) -> Self:
        """The container image of the launcher and the workers (each may override it)."""
        self._image = image
        return self

    def env(
        self,
        name: str,
        value: str | None = None,
        *,
        value_from: Obj | None = None,
        replica: ReplicaType | None = None,
    ) -> Self:
        """An environment variable: a plain `value`, or `value_from` (an EnvVarSource as the API takes it:
        `{"secretKeyRef": {"name": ..., "key": ...}}`, `{"fieldRef": {"fieldPath": ...}}`, ...)."""
        if (value is None) == (value_from is None):
            raise InvalidMPIJob(self._name, f"env {name}: give a value or value_from, not both or neither")
        var: Obj = {"name": name}
        if value is not None:
            var["value"] = value
        else:
            var["valueFrom"] = copy.deepcopy(value_from)
        for replica_spec in self._sides(replica):
            replica_spec.env[name] = var
        return self

    def run_as_user(self, uid: int, *, replica: ReplicaType | None = None) -> Self:
        for replica_spec in self._sides(replica):
            replica_spec.run_as_user = uid
        return self

    def resources(
        self,
        *,
        cpu: str | None = None,
        memory: str | None = None,
        gpus: int | None = None,
        requests: dict[str, str] | None = None,
        replica: ReplicaType | None = None,
    ) -> Self:
        """Limits per container (cpu "500m", memory "1Gi", GPUs as nvidia.com/gpu); `requests` when they
        should differ from the limits (Kubernetes uses the limits otherwise)."""
        limits = {"cpu": cpu, "memory": memory, GPU_RESOURCE: None if gpus is None else str(gpus)}
        for replica_spec in self._sides(replica):
            replica_spec.limits.update({k: v for k, v in limits.items() if v is not None})
            replica_spec.requests.update(requests or {})
        return self

    def pod_label(self, key: str, value: str, *, replica: ReplicaType | None = None) -> Self:
        for replica_spec in self._sides(replica):
            replica_spec.labels[key] = value
        return self

    def pod_annotation(self, key: str, value: str, *, replica: ReplicaType | None = None) -> Self:
        for replica_spec in self._sides(replica):
            replica_spec.annotations[key] = value
        return self

    def node_selector(self, key: str, value: str, *, replica: ReplicaType | None = None) -> Self:
        for replica_spec in self._sides(replica):
            replica_spec.node_selector[key] = value
        return self

    # -- one replica type --------------------------------------------------------------------------------
    def workers(self, replicas: int) -> Self:
        self._replicas[api.WORKER].replicas = replicas
        return self

    def launcher_command(self, *argv: str) -> Self:
        """The launcher's command line (usually `mpirun ...`), replacing the image's entrypoint."""
        return self.launcher(command=list(argv))

    def worker_command(self, *argv: str) -> Self:
        """The workers' command line (an sshd for Open MPI images that do not start one themselves)."""
        return self.worker(command=list(argv))

    def launcher(
        self,
        *,
        image: str | None = None,
        command: list[str] | None = None,
        args: list[str] | None = None,
        restart_policy: RestartPolicy | None = None,
        template: Obj | None = None,
    ) -> Self:
        """The launcher's own settings; `template` replaces its whole PodTemplateSpec."""
        return self._set(api.LAUNCHER, image, command, args, restart_policy, template)

    def worker(
        self,
        *,
        image: str | None = None,
        command: list[str] | None = None,
        args: list[str] | None = None,
        restart_policy: RestartPolicy | None = None,
        template: Obj | None = None,
    ) -> Self:
        """The workers' own settings; `template` replaces their whole PodTemplateSpec."""
        return self._set(api.WORKER, image, command, args, restart_policy, template)

    def without_workers(self) -> Self:
        """A launcher-only job (with `run_launcher_as_worker`, the launcher is the only rank's host)."""
        self._replicas.pop(api.WORKER, None)
        return self

    # -- the job -------------------------------------------------------------------------------------------
    def label(self, key: str, value: str) -> Self:
        return self._put(self._labels, key, value)

    def annotation(self, key: str, value: str) -> Self:
        return self._put(self._annotations, key, value)

    def slots_per_worker(self, slots: int) -> Self:
        return self._put(self._spec, "slotsPerWorker", slots)

    def implementation(self, implementation: MPIImplementation) -> Self:
        return self._put(self._spec, "mpiImplementation", implementation)

    def ssh_auth_mount_path(self, path: str) -> Self:
        return self._put(self._spec, "sshAuthMountPath", path)

    def launcher_creation_policy(self, policy: LauncherCreationPolicy) -> Self:
        return self._put(self._spec, "launcherCreationPolicy", policy)

    def run_launcher_as_worker(self, enabled: bool = True) -> Self:
        return self._put(self._spec, "runLauncherAsWorker", enabled)

    def clean_pod_policy(self, policy: CleanPodPolicy) -> Self:
        return self._put(self._run_policy, "cleanPodPolicy", policy)

    def ttl_seconds_after_finished(self, seconds: int) -> Self:
        return self._put(self._run_policy, "ttlSecondsAfterFinished", seconds)

    def active_deadline_seconds(self, seconds: int) -> Self:
        return self._put(self._run_policy, "activeDeadlineSeconds", seconds)

    def backoff_limit(self, retries: int) -> Self:
        return self._put(self._run_policy, "backoffLimit", retries)

    def suspend(self, suspended: bool = True) -> Self:
        return self._put(self._run_policy, "suspend", suspended)

    def managed_by(self, controller: str) -> Self:
        return self._put(self._run_policy, "managedBy", controller)

    def scheduling(
        self,
        *,
        min_available: int | None = None,
        queue: str | None = None,
        priority_class: str | None = None,
        schedule_timeout_seconds: int | None = None,
        min_resources: dict[str, str] | None = None,
    ) -> Self:
        """runPolicy.schedulingPolicy, read by the gang schedulers (`--gang-scheduling`)."""
        values = {
            "minAvailable": min_available,
            "queue": queue,
            "priorityClass": priority_class,
            "scheduleTimeoutSeconds": schedule_timeout_seconds,
            "minResources": None if min_resources is None else dict(min_resources),
        }
        self._scheduling.update({k: v for k, v in values.items() if v is not None})
        return self

    def build(self) -> Obj:
        """The MPIJob as a dict; raises InvalidMPIJob naming every problem the operator would report."""
        metadata: Obj = {"name": self._name}
        if self._namespace:
            metadata["namespace"] = self._namespace
        if self._labels:
            metadata["labels"] = dict(self._labels)
        if self._annotations:
            metadata["annotations"] = dict(self._annotations)
        spec = copy.deepcopy(self._spec)
        run_policy = copy.deepcopy(self._run_policy)
        if self._scheduling:
            run_policy["schedulingPolicy"] = copy.deepcopy(self._scheduling)
        if run_policy:
            spec["runPolicy"] = run_policy
        spec["mpiReplicaSpecs"] = {kind: r.spec(self._image) for kind, r in self._replicas.items()}
        job: Obj = {"apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": metadata, "spec": spec}
        problems = self._missing_images(job) + [str(e) for e in validate_mpijob(set_defaults(job))]
        if problems:
            raise InvalidMPIJob(self._name, aggregate_message_of(problems))
        return job

    # -- helpers -------------------------------------------------------------------------------------------
    def _put(self, where: Obj | dict[str, str], key: str, value: Any) -> Self:
        where[key] = value
        return self

    def _sides(self, replica: ReplicaType | None) -> list[_Replica]:
        if replica is None:
            return list(self._replicas.values())
        return [self._replica(replica)]

    def _replica(self, replica: ReplicaType) -> _Replica:
        if replica not in self._replicas:
            raise InvalidMPIJob(self._name, f"{replica} was removed by without_workers()")
        return self._replicas[replica]

    def _set(
        self,
        replica: ReplicaType,
        image: str | None,
        command: list[str] | None,
        args: list[str] | None,
        restart_policy: RestartPolicy | None,
        template: Obj | None,
    ) -> Self:
        side = self._replica(replica)
        if image is not None:
            side.image = image
        if command is not None:
            side.command = list(command)
        if args is not None:
            side.args = list(args)
        if restart_policy is not None:
            side.restart_policy = restart_policy
        if template is not None:
            side.raw_template = copy.deepcopy(template)
        return self

    @staticmethod
    def _missing_images(job: Obj) -> list[str]:
        missing = []
        for kind, replica in job["spec"]["mpiReplicaSpecs"].items():
            containers = ((replica.get("template") or {}).get("spec") or {}).get("containers") or ()
            for i, container in enumerate(containers):
                if not container.get("image"):
                    path = f"spec.mpiReplicaSpecs[{kind}].template.spec.containers[{i}].image"
                    missing.append(f"{path}: Required value: set image() or {kind.lower()}(image=...)")
        return missing


def aggregate_message_of(problems: list[str]) -> str:
    """Several problems in one line, as the API server lists them."""
    return problems[0] if len(problems) == 1 else "[" + ", ".join(dict.fromkeys(problems)) + "]"


__all__ = [
    "CleanPodPolicy",
    "LauncherCreationPolicy",
    "MPIImplementation",
    "MPIJobBuilder",
    "ReplicaType",
    "RestartPolicy",
]
