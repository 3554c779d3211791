"""Through the server: real TLS, a live watch cache fed by the test API server."""

from __future__ import annotations

import copy
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from admin_fixtures import CASES as ADMIN_CASES
from admin_fixtures import AdminCase, dynamic_nodes, label, rfc_objects
from builders import job, jobset
from cluster_apiserver import FakeApiServer, free_port, wait_until, write_kubeconfig
from cluster_fixtures import ALL, FAST, OBJECTS, load
from cluster_job_cases import CASES as JOB_CASES
from cluster_job_cases import RULES as CLUSTER_RULES
from cluster_job_cases import ClusterCase
from kueue_cache import fill, kueue_review, rfc_api_server
from support import FIXTURES, RunningServer, load_jobset, review, run_cli

from webhook.admin.admission import KueueRequest, decide_kueue
from webhook.advisor.simulating import answer as advisor_answer
from webhook.cluster import kinds as k
from webhook.cluster.store import ClusterStore
from webhook.cluster.watch import WatchCache, start_watch_cache
from webhook.policy.config import Policy
from webhook.serving import certs
from webhook.serving.app import ServerState
from webhook.serving.tls import TlsSettings
from webhook.simulate import live as simulation
from webhook.wire.reviews import review_response

CLUSTER_STATE = str(FIXTURES / "cluster")
POLICY = Policy()


def serve(cache: WatchCache, tls: TlsSettings, policy: Policy = POLICY) -> RunningServer:
    state = ServerState(policy=policy, cluster=cache)  # registers the cache's gauges itself
    return RunningServer(state, tls).start()


def https(cert_files: certs.CertificateFiles) -> httpx.Client:
    """Our own client: uvicorn waits for open keep-alive connections before it stops."""
    return httpx.Client(verify=ssl.create_default_context(cafile=str(cert_files.ca)), timeout=10)


@pytest.fixture(scope="module")
def client(cert_files: certs.CertificateFiles) -> Iterator[httpx.Client]:
    with https(cert_files) as http:
        yield http


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, tls: TlsSettings, client: httpx.Client) -> Iterator[RunningServer]:
    api = load(FakeApiServer()).start()
    kubeconfig = write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", api.port)
    cache = start_watch_cache(str(kubeconfig), POLICY, FAST)
    wait_until(lambda: not cache.snapshot().unavailable(ALL), what="initial sync")
    server = serve(cache, tls)
    yield server
    client.close()
    server.stop()
    cache.stop()
    api.stop()


def post(client: httpx.Client, server: RunningServer, obj: dict[str, Any], path: str = "/mutate") -> dict[str, Any]:
    response = client.post(server.url + path, json=review(obj))
    assert response.status_code == 200
    answer: dict[str, Any] = response.json()["response"]
    return answer


def test_a_cluster_rule_denies_through_the_server(live: RunningServer, client: httpx.Client) -> None:
    obj = jobset().priority("guaranteed").obj()
    answer = post(client, live, obj, "/validate/production")
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 403
    assert "[guaranteed-balance-exceeded]" in answer["status"]["message"]
    assert "nominal 256 − in use 128 − pending 64" in answer["status"]["message"]


def test_the_tier_comes_from_the_cache(live: RunningServer, client: httpx.Client) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["namespace"] = "orphan-dev"  # dev by its labels; not in the config's map
    del obj["metadata"]["labels"]
    answer = post(client, live, obj)  # plain /mutate: no tier in the path
    assert answer["allowed"] is False
    assert "[local-queue-not-found]" in answer["status"]["message"]


def test_an_admitted_job_gets_its_patch(live: RunningServer, client: httpx.Client) -> None:
    obj = load_jobset("rfc-4.6-static")
    obj["metadata"]["namespace"] = "falcon-jobs"
    del obj["metadata"]["labels"]
    answer = post(client, live, obj, "/mutate/dev")
    assert answer["allowed"] is True
    assert "warnings" not in answer
    assert answer["patchType"] == "JSONPatch"


def test_cluster_gauges_on_metrics(live: RunningServer, client: httpx.Client) -> None:
    text = client.get(live.url + "/metrics").text
    assert 'tpu_admission_cluster_synced{kind="Workloads"} 1.0' in text
    assert 'tpu_admission_cluster_cache_age_seconds{kind="Nodes"} 0.0' in text
    assert text.count('tpu_admission_cluster_synced{kind="Nodes"}') == 1  # registered once
    ages = [line for line in text.splitlines() if line.startswith("tpu_admission_cluster_last_event_age_seconds{")]
    assert len(ages) == len(k.WATCHED) and all(float(line.rsplit(" ", 1)[1]) >= -1.0 for line in ages)


def test_unreachable_api_server_serves_structural_rules_with_warnings(
    tmp_path: Path, tls: TlsSettings, cert_files: certs.CertificateFiles
) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", free_port())  # nothing listens there
    cache = start_watch_cache(str(kubeconfig), POLICY, FAST)
    server = serve(cache, tls)
    client = https(cert_files)
    try:
        assert client.get(server.url + "/readyz").status_code == 200
        obj = jobset().suspend(True).obj()
        answer = post(client, server, obj, "/mutate/production")
        assert answer["allowed"] is False
        assert answer["status"]["message"].startswith("[suspend-forbidden]")
        skipped = [w for w in answer["warnings"] if "skipped: cluster state unknown" in w]
        assert len(skipped) == 7
        metrics = client.get(server.url + "/metrics").text
        assert 'tpu_admission_skipped_checks_total{rule="exceeds-node-capacity"} 1.0' in metrics
        assert 'tpu_admission_cluster_synced{kind="Nodes"} 0.0' in metrics
        assert 'tpu_admission_cluster_cache_age_seconds{kind="Nodes"} -1.0' in metrics
    finally:
        client.close()
        server.stop()
        cache.stop()


def test_a_cluster_rule_denies_a_job_through_the_server(live: RunningServer, client: httpx.Client) -> None:
    obj = job().queue("team-z-queue").obj()
    answer = post(client, live, obj, "/validate/production")
    assert answer["allowed"] is False
    assert answer["status"]["message"].startswith(
        "[local-queue-not-found] metadata.labels[\"kueue.x-k8s.io/queue-name\"]: there is no LocalQueue 'team-z-queue'"
    )


@pytest.mark.parametrize("case", JOB_CASES, ids=lambda c: c.name)
def test_cluster_rules_on_jobs_and_deployments_through_the_server(
    live: RunningServer, client: httpx.Client, case: ClusterCase
) -> None:
    answer = post(client, live, case.object(), f"/mutate/{case.tier}")
    said = answer.get("status", {}).get("message", "") + "\n" + "\n".join(answer.get("warnings", []))
    fired = {rule for rule in CLUSTER_RULES if f"[{rule}] " in said and f"[{rule}] skipped" not in said}
    assert "skipped" not in said  # the cache is synced: every cluster rule ran
    if case.rule is None:
        assert fired == set()
    else:
        assert case.rule in fired
        assert answer["allowed"] is (case.rule == "replicas-beyond-nominal")  # the one warn-level rule


# ---------------------------------------------------------------- the admin guard on /validate-kueue


#: RFC-0033 4.2's objects are for dynamic slices
KUEUE_POLICY = Policy(mode="dynamic")


@pytest.fixture(scope="module")
def kueue_api() -> Iterator[FakeApiServer]:
    api = rfc_api_server().start()
    yield api
    api.stop()


@pytest.fixture(scope="module")
def kueue_live(
    kueue_api: FakeApiServer, tmp_path_factory: pytest.TempPathFactory, tls: TlsSettings, client: httpx.Client
) -> Iterator[tuple[RunningServer, WatchCache]]:
    kubeconfig = write_kubeconfig(tmp_path_factory.mktemp("kueue") / "config", kueue_api.port)
    cache = start_watch_cache(str(kubeconfig), KUEUE_POLICY, FAST)
    wait_until(
        lambda: not cache.snapshot().unavailable(frozenset(kind.name for kind in k.WATCHED)), what="initial sync"
    )
    server = serve(cache, tls, KUEUE_POLICY)
    yield server, cache
    server.stop()
    cache.stop()


def kueue_post(client: httpx.Client, server: RunningServer, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(server.url + "/validate-kueue", json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()["response"]
    return answer


def allowed_plainly(answer: dict[str, Any]) -> bool:
    """Allowed, with nothing to say: only ``uid`` and ``allowed`` in the response."""
    return set(answer) == {"uid", "allowed"} and answer["allowed"] is True


def rfc(key: str) -> dict[str, Any]:
    return copy.deepcopy(next(o for o in rfc_objects("dynamic") if label(o) == key))


def with_nominal(obj: dict[str, Any], chips: int) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    changed["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = chips
    return changed


def test_the_cache_watches_every_kind_the_admin_guard_reads(kueue_live: tuple[RunningServer, WatchCache]) -> None:
    _, cache = kueue_live
    held = {kind.name: len(cache.documents.of(kind)) for kind in k.ADMIN_KINDS}
    assert held == {
        "WorkloadPriorityClasses": 3,
        "Topologies": 1,
        "AdmissionChecks": 1,
        "KueueConfigMap": 1,
        "KueueController": 1,
    }


def test_an_edit_past_the_clusters_chips_is_refused_through_the_server(
    kueue_live: tuple[RunningServer, WatchCache], client: httpx.Client
) -> None:
    server, _ = kueue_live
    team_a = rfc("ClusterQueue/team-a")
    answer = kueue_post(client, server, kueue_review(with_nominal(team_a, 320), "UPDATE", team_a))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 403
    message = answer["status"]["message"]
    assert message.startswith("[quota-exceeds-cluster] spec.resourceGroups[0].flavors[0].resources[0].nominalQuota:")
    assert "640 chips (team-a 320, team-b 256, dev 64) > 576 chips on 144 nodes" in message
    assert "cut 64 chips of nominal quota" in message


def test_the_rfcs_objects_pass_through_the_server(
    kueue_live: tuple[RunningServer, WatchCache], client: httpx.Client
) -> None:
    server, _ = kueue_live
    answers = [kueue_post(client, server, kueue_review(obj, "UPDATE", obj)) for obj in rfc_objects("dynamic")]
    assert [(a["allowed"], a.get("warnings")) for a in answers] == [(True, None)] * len(answers)


def test_kueues_configuration_is_judged_through_the_server(
    kueue_live: tuple[RunningServer, WatchCache], client: httpx.Client
) -> None:
    server, _ = kueue_live
    config_map = rfc("Configuration")
    config = yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])
    config["fairSharing"] = {"enable": True}
    config_map["data"]["controller_manager_config.yaml"] = yaml.safe_dump(config)
    answer = kueue_post(client, server, kueue_review(config_map, "UPDATE", rfc("Configuration")))
    assert answer["allowed"] is False
    assert answer["status"]["message"].startswith("[config-rejected-by-kueue]")
    assert "fairSharing.enable" in answer["status"]["message"]


@pytest.mark.parametrize(
    "obj",
    [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other", "namespace": "kueue-system"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}},
    ],
    ids=["another-configmap", "a-pod"],
)
def test_what_the_guard_does_not_judge_passes_the_server(
    kueue_live: tuple[RunningServer, WatchCache], client: httpx.Client, obj: dict[str, Any]
) -> None:
    server, _ = kueue_live
    assert allowed_plainly(kueue_post(client, server, kueue_review(obj)))


@pytest.mark.parametrize(
    ("body", "headers", "status", "reason"),
    [
        (b"{", {"content-type": "application/json"}, 400, "body is not valid JSON"),
        (b"{}", {"content-type": "text/plain"}, 415, "content-type must be application/json"),
        (b'{"kind": "AdmissionReview"}', {"content-type": "application/json"}, 400, "apiVersion must be"),
    ],
    ids=["not-json", "content-type", "no-api-version"],
)
def test_a_malformed_review_is_a_4xx_with_its_reason(
    kueue_live: tuple[RunningServer, WatchCache],
    client: httpx.Client,
    body: bytes,
    headers: Any,
    status: int,
    reason: str,
) -> None:
    server, _ = kueue_live
    response = client.post(server.url + "/validate-kueue", content=body, headers=headers)
    assert response.status_code == status
    assert reason in response.json()["error"]


def test_the_configmap_and_the_controller_are_read_by_name_only(kueue_api: FakeApiServer) -> None:
    queries = {
        kind.name: {
            q.get("fieldSelector", [""])[0] for q in (*kueue_api.list_queries(kind), *kueue_api.watch_queries(kind))
        }
        for kind in (k.KUEUE_CONFIG, k.KUEUE_CONTROLLER)
    }
    assert queries == {
        "KueueConfigMap": {"metadata.name=kueue-manager-config"},
        "KueueController": {"metadata.name=kueue-controller-manager"},
    }
    paths = {path for path in kueue_api.paths if path.endswith(("/configmaps", "/deployments"))}
    assert paths == {"/api/v1/namespaces/kueue-system/configmaps", "/apis/apps/v1/namespaces/kueue-system/deployments"}


def test_a_watch_event_changes_the_answer(tmp_path: Path, tls: TlsSettings, client: httpx.Client) -> None:
    """A tenth cube joins (its 16 Nodes arrive as watch events): the raise that was over the chips fits.
    Then the WorkloadPriorityClass ``default`` goes: a priority class edit is refused for it."""
    api = rfc_api_server().start()
    cache = start_watch_cache(str(write_kubeconfig(tmp_path / "config", api.port)), KUEUE_POLICY, FAST)
    server = None
    try:
        wait_until(
            lambda: not cache.snapshot().unavailable(frozenset(kind.name for kind in k.WATCHED)), what="initial sync"
        )
        server = serve(cache, tls, KUEUE_POLICY)
        team_a = rfc("ClusterQueue/team-a")
        raised = kueue_review(with_nominal(team_a, 320), "UPDATE", team_a)
        assert kueue_post(client, server, raised)["allowed"] is False
        for node in dynamic_nodes(10)[144:]:
            api.put(k.NODES, node)
        wait_until(lambda: len(cache.nodes) == 160, what="the new cube's nodes")
        assert allowed_plainly(kueue_post(client, server, raised))

        api.delete(k.WORKLOAD_PRIORITY_CLASSES, "default")
        wait_until(lambda: len(cache.documents.of(k.WORKLOAD_PRIORITY_CLASSES)) == 2, what="the delete")
        guaranteed = rfc("WorkloadPriorityClass/guaranteed")
        answer = kueue_post(client, server, kueue_review(guaranteed, "UPDATE", guaranteed))
        assert answer["allowed"] is True  # it was already missing before this edit: a warning, not a refusal
        assert any(w.startswith("[wpc-default-missing]") for w in answer["warnings"])
        answer = kueue_post(client, server, kueue_review(guaranteed))
        assert answer["allowed"] is False
        assert answer["status"]["message"].startswith("[wpc-default-missing]")
    finally:
        if server is not None:
            server.stop()
        cache.stop()
        api.stop()


def test_a_remembered_job_answer_follows_the_watch(tmp_path: Path, tls: TlsSettings, client: httpx.Client) -> None:
    """The same JobSet again and again (its cluster answer remembered): a LocalQueue that
    arrives admits it, a guaranteed Workload that takes its queue's chips refuses it again
    for its balance, and the Workload's delete admits it once more."""
    api = load(FakeApiServer()).start()
    cache = start_watch_cache(str(write_kubeconfig(tmp_path / "config", api.port)), POLICY, FAST)
    server = None
    try:
        wait_until(lambda: not cache.snapshot().unavailable(ALL), what="initial sync")
        server = serve(cache, tls)
        obj = jobset().queue("team-z-queue").priority("guaranteed").replicas(1).obj()

        def rules() -> list[str]:
            answer = post(client, server, obj, "/validate/production")
            lines = answer.get("status", {}).get("message", "").splitlines()
            return [line.split("]")[0].strip("[") for line in lines if line]

        assert rules() == rules() == ["local-queue-not-found"]
        queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue"}
        queue |= {"metadata": {"name": "team-z-queue", "namespace": "kubemaker"}, "spec": {"clusterQueue": "team-a"}}
        api.put(k.LOCAL_QUEUES, queue)
        wait_until(lambda: rules() == [], what="the LocalQueue")

        running = next(o for o in OBJECTS if o.get("kind") == "Workload" and "running" in o["metadata"]["name"])
        workload = copy.deepcopy(running)
        workload["metadata"]["name"] = "takes-the-rest"
        workload["spec"]["podSets"][0]["count"] = 64
        api.put(k.WORKLOADS, workload)
        wait_until(lambda: rules() == ["guaranteed-balance-exceeded"], what="the Workload")
        api.delete(k.WORKLOADS, "takes-the-rest", "kubemaker")
        wait_until(lambda: rules() == [], what="its delete")
    finally:
        if server is not None:
            server.stop()
        cache.stop()
        api.stop()


def test_kueue_answers_are_counted_on_their_own_endpoint(
    kueue_live: tuple[RunningServer, WatchCache], client: httpx.Client
) -> None:
    server, _ = kueue_live
    team_a = rfc("ClusterQueue/team-a")
    kueue_post(client, server, kueue_review(with_nominal(team_a, 320), "UPDATE", team_a))
    text = client.get(server.url + "/metrics").text
    assert 'tpu_admission_requests_total{decision="denied",endpoint="validate-kueue"}' in text


@pytest.fixture(scope="module")
def kueue_servers(tls: TlsSettings) -> Iterator[dict[str, tuple[RunningServer, ClusterStore]]]:
    """One server per policy the admin examples use, each over a store the test refills per example."""
    servers: dict[str, tuple[RunningServer, ClusterStore]] = {}
    yield servers
    for server, _ in servers.values():
        server.stop()


@pytest.mark.parametrize("case", ADMIN_CASES, ids=lambda c: c.id)
def test_every_admin_example_answers_through_the_server_as_the_engine_does(
    case: AdminCase,
    kueue_servers: dict[str, tuple[RunningServer, ClusterStore]],
    tls: TlsSettings,
    client: httpx.Client,
) -> None:
    """Each object of each example, over HTTPS against a cache holding the example's cluster:
    the answer is the engine's decision on the wire, byte for byte but the uid."""
    rules = case.policy()
    key = rules.model_dump_json()
    if key not in kueue_servers:
        store = ClusterStore(rules)
        kueue_servers[key] = (RunningServer(ServerState(policy=rules, cluster=store), tls).start(), store)
    server, store = kueue_servers[key]
    inputs = case.inputs()
    fill(store, [*inputs, *(case.cluster() or [])], rules)
    for obj in inputs:
        sent = kueue_review(obj)
        answer = kueue_post(client, server, sent)
        namespace = str(obj["metadata"].get("namespace") or "")
        decision = decide_kueue(KueueRequest("CREATE", namespace, obj), rules, store)
        assert answer == review_response(sent["request"]["uid"], decision)["response"], label(obj)


def test_an_alias_bomb_in_kueues_configmap_is_refused_and_the_next_review_answered(
    kueue_live: tuple[RunningServer, WatchCache], client: httpx.Client
) -> None:
    """~600 bytes of nested aliases in ``controller_manager_config.yaml`` (10^9 nodes expanded):
    refused well inside the API server's timeout, and the guard's one worker is free for the next."""
    server, _ = kueue_live
    levels = ['a0: &a0 ["lol"]'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    config_map = rfc("Configuration")
    config_map["data"]["controller_manager_config.yaml"] = "\n".join([*levels, "x: *a9"]) + "\n"
    answer = kueue_post(client, server, kueue_review(config_map, "UPDATE", rfc("Configuration")))
    assert answer["allowed"] is False
    assert answer["status"]["message"].startswith("[config-rejected-by-kueue]")
    assert "document contains excessive aliasing" in answer["status"]["message"]
    obj = rfc("LocalQueue/kubemaker/team-a-queue")
    assert allowed_plainly(kueue_post(client, server, kueue_review(obj, "UPDATE", obj)))


def test_a_nominal_of_1e30_is_refused_through_the_server(
    kueue_live: tuple[RunningServer, WatchCache], client: httpx.Client
) -> None:
    server, _ = kueue_live
    team_a = rfc("ClusterQueue/team-a")
    answer = kueue_post(client, server, kueue_review(with_nominal(team_a, "1e30"), "UPDATE", team_a))  # type: ignore[arg-type]
    assert answer["allowed"] is False
    assert answer["status"]["message"].startswith("[quota-exceeds-cluster]")


# ---------------------------------------------------------------- the simulator: the [simulate] warning


@pytest.fixture(scope="module")
def simulating(
    tmp_path_factory: pytest.TempPathFactory, tls: TlsSettings, client: httpx.Client
) -> Iterator[RunningServer]:
    """A server whose watch also reads what the simulator reads besides the rules' kinds: the
    WorkloadPriorityClasses (their values) and Kueue's Configuration."""
    api = load(FakeApiServer(kinds=(k.WORKLOAD_PRIORITY_CLASSES, k.KUEUE_CONFIG))).start()
    for obj in OBJECTS:
        if obj["kind"] == "WorkloadPriorityClass":
            api.put(k.WORKLOAD_PRIORITY_CLASSES, obj)
    kubeconfig = write_kubeconfig(tmp_path_factory.mktemp("kube") / "config", api.port)
    cache = start_watch_cache(str(kubeconfig), POLICY, FAST)
    wait_until(lambda: not cache.snapshot().unavailable(ALL), what="initial sync")
    wait_until(lambda: len(cache.snapshot().kept_documents(k.WORKLOAD_PRIORITY_CLASSES)) == 3, what="priorities")
    server = serve(cache, tls)
    yield server
    server.stop()
    cache.stop()
    api.stop()


FITS = "rfc-4.6-static-single"  # 256 chips of tpu7x-4x8x8 in team-b, which has them free


def simulate_lines(answer: dict[str, Any]) -> list[str]:
    return [w for w in answer.get("warnings", []) if w.startswith("[simulate]")]


def lines_counted(server: RunningServer) -> dict[tuple[str, ...], int]:
    return dict(server.state.metrics.simulate_lines.values)


def test_the_validating_call_of_an_admitted_create_says_what_kueue_would_do(
    simulating: RunningServer, client: httpx.Client
) -> None:
    """The line is read as already worked out for the snapshot: the first job of a shape is
    answered without it (counted left out) and hands it on; once it is worked out, the next
    job of that shape carries it (counted read)."""
    before = lines_counted(simulating)
    first = post(client, simulating, load_jobset(FITS), "/validate/production")
    assert first["allowed"] is True
    if not simulate_lines(first):  # this shape's line may be worked out already by an earlier test
        assert lines_counted(simulating).get(("left_out",), 0) == before.get(("left_out",), 0) + 1

    def carried() -> bool:
        answer = post(client, simulating, load_jobset(FITS), "/validate/production")
        return simulate_lines(answer) == ["[simulate] starts now on tpu7x-4x8x8"]

    wait_until(carried, what="the line worked out and read")
    assert lines_counted(simulating).get(("read",), 0) > before.get(("read",), 0)
    text = simulating.state.metrics.render().decode()
    assert 'tpu_admission_simulate_lines_total{outcome="read"}' in text
    mutated = post(client, simulating, load_jobset(FITS), "/mutate/production")
    assert not simulate_lines(mutated)


def test_the_validating_call_never_waits_on_the_simulator(simulating: RunningServer, client: httpx.Client) -> None:
    """The line was worked out on the event loop under the lock a simulation for a user held:
    with that lock held (a long simulation), every validating call waited for it. Now it is
    answered at once, without the line, whatever the simulators are doing."""
    cache = simulating.state.cluster
    assert isinstance(cache, WatchCache)
    snapshot = cache.snapshot()
    simulation.live(snapshot, snapshot.policy)  # the one a simulation uses, and any other there is
    busy = [held for held in snapshot.memo.answers.values() if isinstance(held, simulation.LiveSimulator)]
    for simulator in busy:
        simulator.lock.acquire()
    try:
        shape = load_jobset(FITS)
        shape["spec"]["replicatedJobs"][0]["template"]["metadata"] = {"annotations": {"never": "seen"}}
        answer = client.post(
            simulating.url + "/validate/production", json=review(shape, namespace="kubemaker"), timeout=5
        ).json()["response"]
        assert answer["allowed"] is True and not simulate_lines(answer)
    finally:
        for simulator in busy:
            simulator.lock.release()


def invalid_workload() -> dict[str, Any]:
    """A Workload the API server refuses three times over: a name with NUL and RLO, a negative
    count, a negative TPU request."""
    container = {"name": "c", "resources": {"requests": {"google.com/tpu": "-64"}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "admit-me\x00\u202eevil", "namespace": "kubemaker"},
        "spec": {
            "queueName": "team-b-queue",
            "podSets": [{"name": "main", "count": -1, "template": {"spec": {"containers": [container]}}}],
        },
    }


def test_simulate_refuses_what_the_api_server_refuses_alike_over_http_and_in_the_cli(
    simulating: RunningServer, client: httpx.Client, tmp_path: Path
) -> None:
    """A negative count, a negative TPU request and a name with control characters were
    answered (``admit``, the name echoed raw). Now the same refusal over HTTP (422) and in the
    CLI (an error line), with no control character in either."""
    status, reply = advisor_answer(
        json.dumps(invalid_workload()).encode(), POLICY, simulating.state.cluster, "kubemaker"
    )
    assert status == 422
    error = reply["error"]
    assert error == (
        "the API server would refuse it: "
        'metadata.name: Invalid value: "admit-me\\u0000\\u202eevil": a lowercase RFC 1123 subdomain must consist '
        "of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character; "
        'spec.podSets[0].count: Invalid value: "-1": must be greater than or equal to 0; '
        'spec.podSets[0].template.spec.containers[0].resources.requests[google.com/tpu]: Invalid value: "-64": '
        "must be greater than or equal to 0"
    )
    path = tmp_path / "workload.json"
    path.write_text(json.dumps(invalid_workload()))
    as_json = run_cli("simulate", str(path), "--cluster-state", CLUSTER_STATE, "--output", "json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout) == {"results": [], "errors": [f"{path}:1: {error}"]}
    as_text = run_cli("simulate", str(path), "--cluster-state", CLUSTER_STATE)
    assert as_text.returncode == 1 and f"error: {path}:1: {error}" in as_text.stdout.splitlines()
    for said in (json.dumps(reply, ensure_ascii=False), as_json.stdout, as_json.stderr, as_text.stdout, as_text.stderr):
        assert not any(c in said for c in "\x00\u202e")


def test_a_utf16_body_is_refused_as_the_cli_refuses_a_utf16_file(
    simulating: RunningServer, client: httpx.Client, tmp_path: Path
) -> None:
    """A UTF-16 body was read (``json.loads`` of bytes takes UTF-16) and answered ``admit``,
    while the CLI said the same text in a file is not UTF-8. Both refuse it now, alike."""
    text = json.dumps(load_jobset(FITS)).encode("utf-16")
    assert advisor_answer(text, POLICY, simulating.state.cluster, "kubemaker") == (
        400,
        {"error": "the body is not UTF-8 text (invalid start byte at byte 0)"},
    )
    path = tmp_path / "job.json"
    path.write_bytes(text)
    done = run_cli("simulate", str(path), "--cluster-state", CLUSTER_STATE)
    assert done.returncode == 2
    assert f"{path}: cannot read: not UTF-8 text (invalid start byte at byte 0)" in done.stdout


def test_simulate_before_the_watch_has_synced_is_503_as_explain_is() -> None:
    """Before the first list the answer was ``unknown`` ("WorkloadPriorityClass guaranteed is
    not in the state"); an explanation said 503. Now a simulation says it too."""
    status, reply = advisor_answer(json.dumps(load_jobset(FITS)).encode(), POLICY, ClusterStore(POLICY), "kubemaker")
    assert status == 503
    assert reply == {
        "error": "Workloads cannot be read now: not synced yet (initial list in progress); retry once the watch "
        "has synced"
    }
