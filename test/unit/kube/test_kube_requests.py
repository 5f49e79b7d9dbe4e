from __future__ import annotations

import socket
from typing import Any

import pytest

from mpioperator.kube.client import DEFAULT_USER_AGENT
from mpioperator.kube.config import load_configuration
from mpioperator.kube.resources import (
    CONFIG_MAPS,
    JOBS,
    MPIJOBS,
    NAMESPACES,
    Resource,
    stamp_kind,
    stamp_list,
)
from mpioperator.kube.session import KEEPALIVE_IDLE_S
from mpioperator.kube.transport import Transport
from test.unit.kube.test_kube_watch_stream import CHUNKED_HEAD, OneAnswer


@pytest.mark.parametrize(
    ("res", "ns", "name", "sub", "expected"),
    [
        (CONFIG_MAPS, "ns", None, None, "/api/v1/namespaces/ns/configmaps"),
        (CONFIG_MAPS, None, None, None, "/api/v1/configmaps"),
        (CONFIG_MAPS, "ns", "cm", None, "/api/v1/namespaces/ns/configmaps/cm"),
        (JOBS, "ns", "j", "status", "/apis/batch/v1/namespaces/ns/jobs/j/status"),
        (MPIJOBS, "ns", None, None, "/apis/kubeflow.org/v2beta1/namespaces/ns/mpijobs"),
        (NAMESPACES, "ignored", "a", None, "/api/v1/namespaces/a"),
    ],
)
def test_paths_follow_the_api_layout(
    res: Resource, ns: str | None, name: str | None, sub: str | None, expected: str
) -> None:
    assert res.path(ns, name, sub) == expected


def explicit_transport(**kwargs: Any) -> Transport:
    cfg = load_configuration(host="https://127.0.0.1:6443/", **kwargs)
    return Transport(cfg, "ua/1")


async def test_explicit_configuration_sends_the_bearer_token_and_user_agent() -> None:
    transport = explicit_transport(token="s3cret", ca_file="/tmp/ca.crt", pool_size=40)
    await transport._fresh_auth()
    headers = {k.lower(): v for k, v in dict(transport._headers("application/json")).items()}
    assert headers["authorization"] == "Bearer s3cret"
    assert headers["user-agent"] == "ua/1"
    assert headers["content-type"] == "application/json"
    assert transport.access.ca_file == "/tmp/ca.crt"


async def test_the_session_holds_at_most_the_pool_size() -> None:
    transport = explicit_transport(pool_size=40)
    session = transport._session_now()
    assert session.connector is not None and session.connector.limit == 40
    await transport.close()


async def test_a_streams_connection_probes_the_peer_when_idle() -> None:
    def answer(conn: socket.socket) -> None:
        conn.sendall(CHUNKED_HEAD)

    server = OneAnswer(answer)
    transport = Transport(load_configuration(host=server.host), "ua/1")
    try:
        response = await transport.open("/api/v1/configmaps", query={"watch": "true"}, read_timeout=30)
        assert response.connection is not None and response.connection.transport is not None
        sock = response.connection.transport.get_extra_info("socket")
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == KEEPALIVE_IDLE_S
        response.close()
    finally:
        await transport.close()
        server.close()


def test_default_user_agent_names_the_operator_and_its_version() -> None:
    assert DEFAULT_USER_AGENT.startswith("mpi-operator/")
    assert DEFAULT_USER_AGENT.endswith("(python)")


async def test_a_json_patch_that_is_not_a_list_is_refused_before_sending() -> None:
    transport = explicit_transport()
    with pytest.raises(ValueError, match="list"):
        await transport.request(
            "PATCH", "/api/v1/x", body={"a": 1}, content_type="application/json-patch+json"
        )


def test_list_items_get_kind_and_api_version() -> None:
    listed = stamp_list(JOBS, {"kind": "JobList", "items": [{"metadata": {"name": "a"}}, {"metadata": {}}]})
    assert [(i["kind"], i["apiVersion"]) for i in listed["items"]] == [("Job", "batch/v1")] * 2


def test_stamping_keeps_a_kind_the_server_already_set() -> None:
    obj = {"kind": "Other", "apiVersion": "x/v9"}
    stamp_kind(CONFIG_MAPS)(obj)
    assert obj == {"kind": "Other", "apiVersion": "x/v9"}


def test_an_empty_list_stays_as_the_server_sent_it() -> None:
    assert stamp_list(CONFIG_MAPS, {"items": None}) == {"items": None}
