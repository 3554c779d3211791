"""``webhook.cluster.listing``: the live cluster for ``audit``, paged, against the local API test server."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_apiserver import FakeApiServer, client_for, free_port, write_kubeconfig
from cluster_fixtures import POLICY, load
from support import load_deployment, load_job, load_jobset

from webhook.cluster import kinds as k
from webhook.cluster.client import ClusterConfigError, load_configuration
from webhook.cluster.listing import JUDGED_KINDS, ListError, judged_objects, load_state

JOBSETS, JOBS, DEPLOYMENTS = JUDGED_KINDS


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    server = load(FakeApiServer(kinds=(*JUDGED_KINDS, k.KUEUE_CONFIG))).start()
    try:
        yield server
    finally:
        server.stop()


def jobsets(count: int, namespace: str = "kubemaker") -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        jobset = load_jobset("rfc-4.6-static")
        jobset["metadata"].update(name=f"train-{i}", namespace=namespace, uid=f"uid-{namespace}-{i}")
        out.append(jobset)
    return out


def test_the_kinds_are_the_judged_ones() -> None:
    assert [(kind.kind, kind.api_version, kind.plural) for kind in JUDGED_KINDS] == [
        ("JobSet", "jobset.x-k8s.io/v1alpha2", "jobsets"),
        ("Job", "batch/v1", "jobs"),
        ("Deployment", "apps/v1", "deployments"),
    ]
    assert [kind.path for kind in JUDGED_KINDS] == [
        "/apis/jobset.x-k8s.io/v1alpha2/jobsets",
        "/apis/batch/v1/jobs",
        "/apis/apps/v1/deployments",
    ]


def test_every_object_once_page_by_page(api: FakeApiServer, tmp_path: Path) -> None:
    for obj in jobsets(5):
        api.put(JOBSETS, obj)
    api.put(JOBS, {**load_job("rfc-job-static"), "metadata": {**load_job("rfc-job-static")["metadata"], "uid": "j"}})
    api.put(DEPLOYMENTS, load_deployment("service-deployment"))
    with client_for(api, tmp_path) as api_client:
        objects = list(judged_objects(api_client, page_size=2))
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        *(("JobSet", f"train-{i}") for i in range(5)),
        ("Job", "llm-eval-b7c2"),
        ("Deployment", "eval-gateway"),
    ]
    assert objects[0]["apiVersion"] == "jobset.x-k8s.io/v1alpha2" and objects[0]["metadata"]["uid"] == "uid-kubemaker-0"
    # one list per kind, paged: 5 JobSets in pages of 2 is 3 requests, each kind's first without a token
    queries = api.list_queries(JOBSETS)
    assert [q.get("continue") for q in queries] == [None, ["2"], ["4"]]
    assert all(q["limit"] == ["2"] for q in queries)
    assert api.list_requests(JOBS) == api.list_requests(DEPLOYMENTS) == 1


def test_managed_fields_are_dropped_and_the_rest_kept(api: FakeApiServer, tmp_path: Path) -> None:
    [jobset] = jobsets(1)
    jobset["metadata"]["managedFields"] = [{"manager": "kubectl", "operation": "Update"}]
    jobset["status"] = {"replicatedJobsStatus": []}
    api.put(JOBSETS, jobset)
    with client_for(api, tmp_path) as api_client:
        [listed] = list(judged_objects(api_client))
    assert "managedFields" not in listed["metadata"]
    assert listed["status"] == jobset["status"] and listed["spec"] == jobset["spec"]


def test_namespaces_are_listed_one_by_one(api: FakeApiServer, tmp_path: Path) -> None:
    for obj in [*jobsets(3, "kubemaker"), *jobsets(2, "team-b"), *jobsets(2, "other")]:
        api.put(JOBSETS, obj)
    with client_for(api, tmp_path) as api_client:
        objects = list(judged_objects(api_client, ["team-b", "kubemaker", "team-b"], page_size=2))
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects] == [
        ("team-b", "train-0"),
        ("team-b", "train-1"),
        ("kubemaker", "train-0"),
        ("kubemaker", "train-1"),
        ("kubemaker", "train-2"),
    ]
    assert api.list_requests(JOBSETS) == 1 + 2  # team-b: one page; kubemaker: two; "other" never


def test_an_expired_continue_token_restarts_the_list_without_repeats(api: FakeApiServer, tmp_path: Path) -> None:
    for obj in jobsets(5):
        api.put(JOBSETS, obj)
    api.expire_continue = 1
    with client_for(api, tmp_path) as api_client:
        names = [o["metadata"]["name"] for o in judged_objects(api_client, page_size=2, kinds=[JOBSETS])]
    assert names == [f"train-{i}" for i in range(5)]
    assert [q.get("continue") for q in api.list_queries(JOBSETS)] == [None, ["2"], None, ["2"], ["4"]]


def test_a_kind_not_served_has_nothing_to_judge(api: FakeApiServer, tmp_path: Path) -> None:
    """No JobSet CRD (404): nothing to judge of that kind; the other kinds are still listed."""
    api.errors = {"JobSets": 404}
    api.put(JOBS, load_job("rfc-job-static"))
    with client_for(api, tmp_path) as api_client:
        assert [o["kind"] for o in judged_objects(api_client, ["kubemaker", "other"])] == ["Job"]
    assert api.list_requests(JOBSETS) == 1  # the first namespace's 404 says it for all


@pytest.mark.parametrize("status", [403, 500])
def test_a_judged_kind_that_cannot_be_listed_ends_the_audit(api: FakeApiServer, tmp_path: Path, status: int) -> None:
    api.errors = {"Deployments": status}
    with client_for(api, tmp_path) as api_client, pytest.raises(ListError) as caught:
        list(judged_objects(api_client))
    assert caught.value.kind == "Deployments" and caught.value.status == status
    if status == 403:
        assert "forbidden (403)" in str(caught.value) and "audit's RBAC" in str(caught.value)


def test_the_state_is_the_servers(api: FakeApiServer, tmp_path: Path) -> None:
    from cluster_fixtures import STATE

    running = next(o for o in api.objects[k.WORKLOADS.path].values() if "running-guaranteed-1a2b3" in str(o))
    running = copy.deepcopy(running)
    running["metadata"]["ownerReferences"] = [
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "llm-pretrain-a3f8", "uid": "u1"}
    ]
    api.put(k.WORKLOADS, running)
    with client_for(api, tmp_path) as api_client:
        store, owners = load_state(api_client, POLICY, page_size=2)
    listed, fixtures = store.snapshot(), STATE.snapshot()
    assert listed.unavailable(frozenset(kind.name for kind in k.KINDS)) == {}
    for queue in ("team-a", "team-b"):
        assert listed.balance(queue, "tpu7x-4x4x4") == fixtures.balance(queue, "tpu7x-4x4x4")
    assert listed.namespace_labels("kubemaker") == fixtures.namespace_labels("kubemaker")
    assert owners.of("JobSet", "kubemaker", "llm-pretrain-a3f8", "u1") == (
        ("kubemaker", "jobset-a-running-guaranteed-1a2b3"),
    )
    assert api.list_requests(k.WORKLOADS) > 1  # paged


def test_a_state_kind_that_cannot_be_listed_is_unknown(api: FakeApiServer, tmp_path: Path) -> None:
    api.errors = {"Nodes": 403, "Cohorts": 404}
    with client_for(api, tmp_path) as api_client:
        store, _ = load_state(api_client, POLICY)
    missing = store.snapshot().unavailable(frozenset({"Nodes", "Cohorts", "Workloads"}))
    assert set(missing) == {"Nodes", "Cohorts"}
    assert "forbidden (403)" in missing["Nodes"] and "absent (404)" in missing["Cohorts"]


def test_an_unreachable_or_refusing_server_is_an_error(api: FakeApiServer, tmp_path: Path) -> None:
    from kubernetes import client

    wrong_token = load_configuration(str(write_kubeconfig(tmp_path / "bad", api.port, token="wrong")))
    with client.ApiClient(wrong_token) as api_client, pytest.raises(ListError, match="unauthorized"):
        load_state(api_client, POLICY)
    gone = load_configuration(str(write_kubeconfig(tmp_path / "gone", free_port())))  # nobody listens there
    with client.ApiClient(gone) as api_client, pytest.raises(ListError, match="unreachable"):
        load_state(api_client, POLICY)


def test_configuration_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--kubeconfig; else in a pod the in-cluster config; else $KUBECONFIG; else ~/.kube/config."""
    given = write_kubeconfig(tmp_path / "given", 1111)
    env = write_kubeconfig(tmp_path / "env", 2222)
    home = tmp_path / "home"
    write_kubeconfig((home / ".kube").mkdir(parents=True) or home / ".kube" / "config", 3333)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(env))
    assert load_configuration(str(given)).host.endswith(":1111")
    assert load_configuration(None).host.endswith(":2222")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{env}")  # a list, as kubectl reads it
    assert load_configuration(None).host.endswith(":2222")
    monkeypatch.delenv("KUBECONFIG")
    assert load_configuration(None).host.endswith(":3333")
    (home / ".kube" / "config").unlink()
    with pytest.raises(ClusterConfigError, match="no cluster configuration"):
        load_configuration(None)
    # in a pod (the service host is set): the in-cluster config, which needs the pod's token
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("KUBECONFIG", str(env))
    with pytest.raises(ClusterConfigError, match="could not be loaded"):
        load_configuration(None)
    assert load_configuration(str(given)).host.endswith(":1111")  # an explicit flag still wins


def test_a_kind_read_by_name_lists_that_one_object(api: FakeApiServer, tmp_path: Path) -> None:
    """Kueue's ConfigMap is read by namespace and name, as the watch cache reads it: the other
    ConfigMaps beside it, and the Nodes (the core group's other cluster-wide list), stay out."""
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": POLICY.kueue.config_map, "namespace": POLICY.kueue.namespace},
        "data": {POLICY.kueue.config_key: "fairSharing: {}\n"},
    }
    other = copy.deepcopy(config)
    other["metadata"]["name"] = "something-else"
    api.put(k.KUEUE_CONFIG, config)
    api.put(k.KUEUE_CONFIG, other)
    with client_for(api, tmp_path) as api_client:
        store, _ = load_state(api_client, POLICY, kinds=(k.KUEUE_CONFIG,))
    kept = store.snapshot().kept_documents(k.KUEUE_CONFIG)
    assert [(d["metadata"]["namespace"], d["metadata"]["name"], d["data"]) for d in kept] == [
        (POLICY.kueue.namespace, POLICY.kueue.config_map, config["data"])
    ]
