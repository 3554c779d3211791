"""The fake API server answers as kube-apiserver does where the product reads the answer.

Each check is one difference ``tests/e2e/test_e2e_fake_parity.py`` found between the fake
and a real API server, kept here so that the fast tests stay truthful without Go.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_apiserver import FakeApiServer, client_for

from webhook.cluster import kinds as k
from webhook.cluster.client import list_call


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    yield server
    server.stop()


def _namespace(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}}


def _list(api: FakeApiServer, tmp_path: Path, kind: k.Kind, **options: Any) -> dict[str, Any]:
    response = list_call(client_for(api, tmp_path), kind)(**options, _preload_content=False)
    body: dict[str, Any] = json.loads(response.data)
    return body


def test_a_list_is_in_the_stored_keys_order_not_the_order_of_writes(api: FakeApiServer, tmp_path: Path) -> None:
    for name in ("b", "a-b", "a", "c"):
        api.put(k.NAMESPACES, _namespace(name))
    body = _list(api, tmp_path, k.NAMESPACES)
    assert [item["metadata"]["name"] for item in body["items"]] == ["a", "a-b", "b", "c"]


def test_a_paged_list_counts_the_items_left(api: FakeApiServer, tmp_path: Path) -> None:
    for name in "abcde":
        api.put(k.NAMESPACES, _namespace(name))
    first = _list(api, tmp_path, k.NAMESPACES, limit=2)
    assert first["metadata"]["remainingItemCount"] == 3
    last = _list(api, tmp_path, k.NAMESPACES, limit=2, _continue="4")
    assert "remainingItemCount" not in last["metadata"] and "continue" not in last["metadata"]


def test_the_server_assigns_uid_creation_time_and_generation(api: FakeApiServer) -> None:
    api.put(k.NAMESPACES, _namespace("a"))
    api.put(k.WORKLOAD_PRIORITY_CLASSES, {"metadata": {"name": "p"}, "value": 1})
    namespace = api.objects[k.NAMESPACES.path][("", "a")]["metadata"]
    assert namespace["uid"] and namespace["creationTimestamp"] and "generation" not in namespace
    created = dict(api.objects[k.WORKLOAD_PRIORITY_CLASSES.path][("", "p")]["metadata"])
    assert created["generation"] == 1
    api.put(k.WORKLOAD_PRIORITY_CLASSES, {"metadata": {"name": "p", "labels": {"x": "y"}}, "value": 1})
    relabelled = api.objects[k.WORKLOAD_PRIORITY_CLASSES.path][("", "p")]["metadata"]
    assert (relabelled["uid"], relabelled["creationTimestamp"], relabelled["generation"]) == (
        created["uid"],
        created["creationTimestamp"],
        1,
    )
    api.put(k.WORKLOAD_PRIORITY_CLASSES, {"metadata": {"name": "p"}, "value": 2})
    assert api.objects[k.WORKLOAD_PRIORITY_CLASSES.path][("", "p")]["metadata"]["generation"] == 2


def test_a_refusal_is_a_whole_status(api: FakeApiServer, tmp_path: Path) -> None:
    from kubernetes.client.exceptions import ApiException

    api.errors[k.LOCAL_QUEUES.name] = 403
    with pytest.raises(ApiException) as refused:
        _list(api, tmp_path, k.LOCAL_QUEUES)
    body = json.loads(refused.value.body)
    assert {key: body[key] for key in ("metadata", "status", "reason", "details", "code")} == {
        "metadata": {},
        "status": "Failure",
        "reason": "Forbidden",
        "details": {"group": k.KUEUE_GROUP, "kind": "localqueues"},
        "code": 403,
    }


def test_a_custom_resource_list_says_continue_even_when_empty(api: FakeApiServer, tmp_path: Path) -> None:
    assert _list(api, tmp_path, k.COHORTS)["metadata"]["continue"] == ""
    assert "continue" not in _list(api, tmp_path, k.NAMESPACES)["metadata"]


def test_a_refusal_by_name_names_the_object(api: FakeApiServer, tmp_path: Path) -> None:
    from kubernetes.client.exceptions import ApiException

    api.errors[k.KUEUE_CONFIG.name] = 403
    call = list_call(client_for(api, tmp_path), k.KUEUE_CONFIG, ("kueue-system", "kueue-manager-config"))
    with pytest.raises(ApiException) as refused:
        call(_preload_content=False)
    assert json.loads(refused.value.body)["details"] == {"name": "kueue-manager-config", "kind": "configmaps"}


def test_a_group_not_served_is_a_plain_text_404(api: FakeApiServer, tmp_path: Path) -> None:
    from kubernetes.client.exceptions import ApiException

    unserved = k.Kind("Widgets", "Widget", "example.com", "v1", "widgets", False)
    with pytest.raises(ApiException) as refused:
        list_call(client_for(api, tmp_path), unserved)(_preload_content=False)
    assert (refused.value.status, refused.value.body) == (404, "404 page not found\n")


def test_a_nodes_bookmark_is_its_typed_empty_object(api: FakeApiServer, tmp_path: Path) -> None:
    from kubernetes.watch.watch import iter_resp_lines

    api.bookmark_interval = 0.05
    response = list_call(client_for(api, tmp_path), k.NODES)(
        watch=True, allow_watch_bookmarks=True, timeout_seconds=1, _preload_content=False
    )
    events = [json.loads(line) for line in iter_resp_lines(response) if line]  # type: ignore[no-untyped-call]
    mark = next(event["object"] for event in events if event["type"] == "BOOKMARK")
    assert set(mark) == {"kind", "apiVersion", "metadata", "spec", "status"}
    assert mark["status"]["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 0}}


def test_a_watch_from_a_version_long_gone_ends_with_an_expired_status(api: FakeApiServer, tmp_path: Path) -> None:
    from kubernetes.watch.watch import iter_resp_lines

    api.load(
        k.LOCAL_QUEUES, [{"metadata": {"name": "q", "namespace": "a"}}, {"metadata": {"name": "r", "namespace": "a"}}]
    )
    response = list_call(client_for(api, tmp_path), k.LOCAL_QUEUES)(
        watch=True, resource_version="1", timeout_seconds=1, _preload_content=False
    )
    events = [json.loads(line) for line in iter_resp_lines(response) if line]  # type: ignore[no-untyped-call]
    assert [event["type"] for event in events] == ["ERROR"]
    status = events[0]["object"]
    assert {key: status[key] for key in ("kind", "metadata", "status", "reason", "code")} == {
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "reason": "Expired",
        "code": 410,
    }
