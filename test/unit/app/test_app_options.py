"""Flags keep upstream's names, spellings and defaults; bad values fail with a one-line message."""

from __future__ import annotations

import pytest

from mpioperator.app.options import Options, OptionsError, parse
from mpioperator.app.startup import make_client
from mpioperator.controller.pod_cache import POD_CACHE_PROJECTION
from mpioperator.kube.resources import PODS


def test_defaults_match_upstream() -> None:
    options = parse([], environ={})
    assert options.threadiness == 2
    assert options.monitoring_port == 0
    assert options.lock_namespace == "mpi-operator"
    assert (options.kube_api_qps, options.kube_api_burst) == (50.0, 100)  # ours (upstream: 5, 10)
    assert (options.controller_queue_rate_limit, options.controller_queue_burst) == (10, 100)
    assert options.gang_scheduling == ""
    assert options.cluster_domain == ""
    assert options.cluster_scoped
    assert (options.lease_duration, options.renew_deadline, options.retry_period) == (15.0, 5.0, 3.0)
    assert options.max_restarts_cap == 100  # ours (whole-job restarts are not upstream's)


def test_go_style_single_dash_and_equals_forms_are_accepted() -> None:
    options = parse(
        ["-alsologtostderr", "-threadiness=4", "--lock-namespace", "kubeflow", "-kubeConfig=/k", "-v=4"],
        environ={},
    )
    assert options.threadiness == 4
    assert options.lock_namespace == "kubeflow"
    assert options.kubeconfig == "/k"
    assert options.verbosity == 4


def test_kubeconfig_env_overrides_the_flag_as_upstream() -> None:
    assert parse(["--kubeConfig=/flag"], environ={"KUBECONFIG": "/env"}).kubeconfig == "/env"


def test_namespace_defaults_to_kubeflow_namespace_env() -> None:
    assert parse([], environ={"KUBEFLOW_NAMESPACE": "team-a"}).namespaces == ("team-a",)
    assert parse(["--namespace=team-b"], environ={"KUBEFLOW_NAMESPACE": "team-a"}).namespaces == ("team-b",)


def test_several_namespaces_may_be_watched() -> None:
    options: Options = parse(["--namespace=b, a,b"], environ={})
    assert options.namespaces == ("a", "b")
    assert not options.cluster_scoped


def test_bare_boolean_and_explicit_false() -> None:
    assert parse(["-version"], environ={}).version is True
    assert parse(["--leader-elect=false"], environ={}).leader_elect is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--threadiness=0"], "invalid value for --threadiness: 0 (must be >= 1)"),
        (["--monitoring-port=70000"], "invalid value for --monitoring-port"),
        (["--kube-api-qps=0"], "invalid value for --kube-api-qps"),
        (["--controller-queue-burst=0"], "invalid value for --controller-queue-burst"),
        (["--leader-elect-lease-duration=4"], "must be greater than --leader-elect-renew-deadline"),
        (["--leader-elect-retry-period=5"], "must be greater than 1.2 x --leader-elect-retry-period"),
        (["--lock-namespace="], "invalid value for --lock-namespace"),
        (["--worker-startup-deadline-seconds=-1"], "invalid value for --worker-startup-deadline-seconds"),
        (["--wait-for-hosts-image= "], "invalid value for --wait-for-hosts-image: must not be empty"),
        (["--max-worker-replicas=0"], "invalid value for --max-worker-replicas: 0 (must be 1-20203"),
        (["--max-worker-replicas=20204"], "invalid value for --max-worker-replicas: 20204 (must be 1-20203"),
        (["--max-restarts-cap=-1"], "invalid value for --max-restarts-cap: -1 (must be 0-2147483647)"),
        (["--max-restarts-cap=2147483648"], "invalid value for --max-restarts-cap"),
        # Past an int64: every job's deadline check would overflow a float.
        (
            ["--worker-startup-deadline-seconds=" + "9" * 400],
            "invalid value for --worker-startup-deadline-seconds",
        ),
    ],
)
def test_values_that_cannot_work_are_refused_with_a_one_line_message(argv: list[str], message: str) -> None:
    with pytest.raises(OptionsError) as err:
        parse(argv, environ={})
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_unknown_flags_are_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exit_:
        parse(["--no-such-flag"], environ={})
    assert exit_.value.code == 2


def test_pods_are_asked_for_as_protobuf_unless_the_content_type_flag_says_json() -> None:
    def accept(argv: list[str]) -> str | None:
        options = parse([*argv, "--master=https://127.0.0.1:1"], environ={})
        client = make_client(options)
        return client._negotiation.accept(PODS, POD_CACHE_PROJECTION)

    assert accept([]) == "application/vnd.kubernetes.protobuf, application/json"
    assert accept(["--kube-api-content-type=application/json"]) is None
    with pytest.raises(SystemExit):
        parse(["--kube-api-content-type=application/yaml"], environ={})


def test_the_launchers_waiter_runs_the_manifests_operator_image_unless_the_flag_names_another() -> None:
    assert parse([], environ={}).host_waiter_image == "mpioperator/mpi-operator-py:latest"
    named = parse(["--wait-for-hosts-image=registry.example/mpi-operator:v1"], environ={})
    assert named.host_waiter_image == "registry.example/mpi-operator:v1"


def test_max_worker_replicas_defaults_to_what_fits_the_cluster_domain_and_may_be_set() -> None:
    assert parse([], environ={}).max_worker_replicas == 2693
    assert parse(["--cluster-domain=cluster.local"], environ={}).max_worker_replicas == 2512
    assert parse(["--max-worker-replicas=100"], environ={}).max_worker_replicas == 100
    assert parse(["--max-worker-replicas=20203"], environ={}).max_worker_replicas == 20203
    assert Options().max_worker_replicas == 2693
