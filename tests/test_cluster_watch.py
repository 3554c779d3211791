"""The watch cache against a real HTTP API server (tests/cluster_apiserver.py) with the
real ``kubernetes`` client: sync, events, 410 relist, an absent server, 403 and 404."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from builders import JobSetBuilder, jobset
from cluster_apiserver import FakeApiServer, free_port, wait_until, write_kubeconfig
from cluster_fixtures import ALL, FAST, OBJECTS, load

from webhook.cluster import kinds as k
from webhook.cluster.availability import Availability
from webhook.cluster.store import ClusterStore
from webhook.cluster.watch import WatchCache, WatchSettings, backoff_delay, start_watch_cache
from webhook.engine.decision import AdmissionFacts, decide
from webhook.policy.config import Policy

POLICY = Policy()


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    server = load(FakeApiServer()).start()
    yield server
    server.stop()


def usage(cache: WatchCache) -> tuple[int, int]:
    """team-a's guaranteed chips on tpu7x-4x4x4: (holding quota, waiting)."""
    balance = cache.snapshot().balance("team-a", "tpu7x-4x4x4")
    return balance.holding, balance.waiting


def watch(port: int, tmp_path: Path, settings: WatchSettings = FAST) -> WatchCache:
    return start_watch_cache(str(write_kubeconfig(tmp_path / "kubeconfig", port)), POLICY, settings)


@pytest.fixture
def cache(api: FakeApiServer, tmp_path: Path) -> Iterator[WatchCache]:
    started = watch(api.port, tmp_path)
    wait_until(lambda: not started.snapshot().unavailable(ALL), what="initial sync")
    yield started
    started.stop()


def guaranteed_job(replicas: int) -> dict[str, Any]:
    return jobset().priority("guaranteed").replicas(replicas).obj()


def rules(cache: WatchCache, obj: dict[str, Any]) -> set[str]:
    decision = decide(obj, AdmissionFacts(namespace="kubemaker"), POLICY, cache)
    return {f.rule for f in decision.findings}


def pending_workload(name: str, chips: int) -> dict[str, Any]:
    [template] = [o for o in OBJECTS if o["metadata"]["name"].startswith("jobset-a-pending")]
    obj = copy.deepcopy(template)
    obj["metadata"]["name"] = name
    obj["spec"]["podSets"][0]["count"] = chips // 4
    return obj


def test_initial_sync_lists_in_pages_then_watches(api: FakeApiServer, cache: WatchCache) -> None:
    assert usage(cache) == (128, 64)
    view = cache.snapshot()
    assert view.namespace_labels("kubemaker") == {
        "kubernetes.io/metadata.name": "kubemaker",
        "scheduling.antgroup.com/kueue-tier": "production",
    }
    assert view.static_topologies() == {"4x4x4", "4x4x8", "4x8x8"}
    assert len(cache.counted.entries) == 6
    assert api.list_requests(k.WORKLOADS) == 3  # 6 Workloads, pages of 2
    wait_until(lambda: api.watch_requests(k.WORKLOADS) >= 1, what="a watch")
    query = next(q for path, q in api.requests if path == k.WORKLOADS.path and q.get("watch"))
    assert query["resourceVersion"] == [str(api.version)]


def test_events_move_the_guaranteed_balance(api: FakeApiServer, cache: WatchCache) -> None:
    assert "guaranteed-balance-exceeded" not in rules(cache, guaranteed_job(1))  # 64 of 64 left

    added = pending_workload("jobset-new-guaranteed-aaaaa", 64)
    api.put(k.WORKLOADS, added)
    wait_until(lambda: usage(cache) == (128, 128), what="ADDED")
    assert "guaranteed-balance-exceeded" in rules(cache, guaranteed_job(1))

    admitted = copy.deepcopy(added)
    admitted["status"] = {
        "admission": {
            "clusterQueue": "team-a",
            "podSetAssignments": [
                {
                    "name": "workers",
                    "count": 16,
                    "flavors": {"google.com/tpu": "tpu7x-4x4x4"},
                    "resourceUsage": {"google.com/tpu": "64"},
                }
            ],
        },
        "conditions": [{"type": "QuotaReserved", "status": "True"}],
    }
    api.put(k.WORKLOADS, admitted)
    wait_until(lambda: usage(cache) == (192, 64), what="MODIFIED")

    api.delete(k.WORKLOADS, added["metadata"]["name"], "kubemaker")
    wait_until(lambda: usage(cache) == (128, 64), what="DELETED")
    assert "guaranteed-balance-exceeded" not in rules(cache, guaranteed_job(1))


def test_watch_expiry_relists(api: FakeApiServer, cache: WatchCache) -> None:
    lists = api.list_requests(k.LOCAL_QUEUES)
    api.expire_watches()
    # changes made while the cache relists are not lost: the list returns them
    api.delete(k.LOCAL_QUEUES, "team-c-queue", "kubemaker")
    wait_until(lambda: api.list_requests(k.LOCAL_QUEUES) > lists, what="a relist")
    wait_until(lambda: cache.snapshot().local_queue("kubemaker", "team-c-queue") is None, what="the deletion")
    wait_until(lambda: not cache.snapshot().unavailable(ALL), what="sync after relist")
    obj = jobset().queue("team-c-queue").obj()
    assert "local-queue-not-found" in rules(cache, obj)


def test_api_server_absent_at_start(tmp_path: Path) -> None:
    port = free_port()
    cache = watch(port, tmp_path)
    try:

        def unreachable() -> bool:
            reasons = cache.snapshot().unavailable(ALL)
            return len(reasons) == len(ALL) and all("unreachable" in r for r in reasons.values())

        wait_until(unreachable, what="unreachable reasons")
        obj = jobset().pod_priority_class("high").obj()
        decision = decide(obj, AdmissionFacts(namespace="kubemaker"), POLICY, cache)
        assert {f.rule for f in decision.violations} == {"pod-priority-class-forbidden"}  # structural
        assert len(decision.skipped) == 7
        assert all("API server unreachable" in w for w in decision.warnings if "skipped" in w)

        api = load(FakeApiServer(port)).start()  # the API server comes up: the cache catches up
        try:
            wait_until(lambda: not cache.snapshot().unavailable(ALL), what="sync after the server came up")
            assert usage(cache) == (128, 64)
        finally:
            cache.stop()
            api.stop()
    finally:
        cache.stop()


def test_forbidden_and_absent_kinds_skip_their_rules(tmp_path: Path) -> None:
    api = load(FakeApiServer())
    api.errors = {"Nodes": 403, "Workloads": 404}
    api.start()
    cache = watch(api.port, tmp_path)
    try:
        # until both refusals are in: a kind still listing is unavailable too ("not synced yet")
        wait_until(
            lambda: (
                {kind: "(40" in why for kind, why in cache.snapshot().unavailable(ALL).items()}
                == {"Nodes": True, "Workloads": True}
            ),
            what="403/404",
        )
        obj = JobSetBuilder(guaranteed_job(3)).queue("team-c-queue").obj()
        decision = decide(obj, AdmissionFacts(namespace="kubemaker"), POLICY, cache)
        # 192 chips never fit team-c (64): exceeds-queue-capacity decides, the balance has nothing to add
        assert set(decision.skipped) == {"exceeds-node-capacity", "insufficient-node-pools"}
        warnings = "\n".join(decision.warnings)
        assert "[exceeds-node-capacity] skipped: cluster state unknown (Nodes: forbidden (403)" in warnings
        # the rules whose kinds are readable still judge
        assert {"resource-not-covered", "exceeds-queue-capacity"} <= {f.rule for f in decision.violations}
        # 64 chips fit team-c's nominal; whether its guaranteed balance holds them needs the Workloads
        obj = JobSetBuilder(guaranteed_job(1)).queue("team-c-queue").obj()
        decision = decide(obj, AdmissionFacts(namespace="kubemaker"), POLICY, cache)
        assert "guaranteed-balance-exceeded" in decision.skipped
        [skip] = [w for w in decision.warnings if w.startswith("[guaranteed-balance-exceeded] skipped")]
        assert "decided by Workloads: absent (404)" in skip
    finally:
        cache.stop()
        api.stop()


def test_a_kubeconfig_that_cannot_be_loaded_leaves_every_kind_unknown(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("not: [a kubeconfig")
    cache = start_watch_cache(str(bad), POLICY, FAST)
    reasons = cache.snapshot().unavailable(ALL)
    assert set(reasons) == ALL
    assert all(r.startswith("cluster configuration could not be loaded") for r in reasons.values())


def test_staleness_bound() -> None:
    now = [100.0]
    availability = Availability(["Nodes"], stale_after=60, clock=lambda: now[0])
    assert availability.reason("Nodes") == "not synced yet (initial list in progress)"
    availability.listed("Nodes")
    availability.watching("Nodes")
    assert availability.reason("Nodes") is None and availability.age("Nodes") == 0
    availability.broken("Nodes", "API server unreachable: connection refused")
    now[0] += 60
    assert availability.reason("Nodes") is None  # within the bound the last state stands
    assert availability.age("Nodes") == 60
    now[0] += 1
    assert availability.reason("Nodes") == (
        "stale: watch broken for 61s (bound 60s): API server unreachable: connection refused"
    )
    availability.broken("Nodes", "forbidden (403): …", fatal=True)
    assert availability.reason("Nodes") == "forbidden (403): …"
    availability.listed("Nodes")
    availability.watching("Nodes")
    assert availability.reason("Nodes") is None


def test_seconds_since_the_last_event() -> None:
    now = [100.0]
    availability = Availability(["Workloads"], stale_after=60, clock=lambda: now[0])
    availability.listed("Workloads")
    availability.watching("Workloads")
    assert availability.since_event("Workloads") is None  # listed, no event yet
    availability.event("Workloads")
    now[0] += 42
    assert availability.since_event("Workloads") == 42
    assert availability.reason("Workloads") is None  # a silent open watch is still current


# --- faults of a real API server --------------------------------------------------------


def test_a_drop_resumes_from_the_last_version_seen_not_a_relist(api: FakeApiServer, cache: WatchCache) -> None:
    lists = api.list_requests(k.LOCAL_QUEUES)
    queue = next(o for o in OBJECTS if o["kind"] == "LocalQueue")
    event_version = api.put(k.LOCAL_QUEUES, queue)
    wait_until(lambda: cache.versions["LocalQueues"] == str(event_version), what="the event's version")
    # a change to another kind moves the global version; a LocalQueues bookmark carries it
    namespace = next(o for o in OBJECTS if o["kind"] == "Namespace")
    bookmark_version = api.put(k.NAMESPACES, namespace)
    wait_until(lambda: cache.versions["LocalQueues"] == str(bookmark_version), what="a bookmark")
    watches = api.watch_requests(k.LOCAL_QUEUES)
    api.drop_watches()
    wait_until(lambda: api.watch_requests(k.LOCAL_QUEUES) > watches, what="a re-watch")
    assert api.watch_queries(k.LOCAL_QUEUES)[-1]["resourceVersion"] == [str(bookmark_version)]
    assert api.list_requests(k.LOCAL_QUEUES) == lists
    wait_until(lambda: not cache.snapshot().unavailable(ALL), what="healthy again")


def test_an_expired_continue_token_falls_back_to_one_full_list(tmp_path: Path) -> None:
    api = load(FakeApiServer())
    api.expire_continue = 1000  # every continued page: 410
    api.start()
    cache = watch(api.port, tmp_path)
    try:
        wait_until(lambda: not cache.snapshot().unavailable(ALL), what="sync through full lists")
        assert len(cache.counted.entries) == 6
        queries = api.list_queries(k.WORKLOADS)
        # page one, its continue page (410), then one unpaged list: no tight relisting
        assert [q.get("limit") for q in queries] == [["2"], ["2"], None]
    finally:
        cache.stop()
        api.stop()


def test_a_403_on_a_rewatch_clears_when_the_watch_succeeds(api: FakeApiServer, cache: WatchCache) -> None:
    lists = api.list_requests(k.NODES)
    api.errors = {"Nodes": 403}

    # Drop until it shows: a watch still being opened when the first drop comes would
    # otherwise run its whole timeout (10-20 s here) before the 403 could be seen.
    def forbidden_after_a_drop() -> bool:
        api.drop_watches()
        return "forbidden (403)" in cache.snapshot().unavailable(ALL).get("Nodes", "")

    wait_until(forbidden_after_a_drop, what="the 403")
    api.errors = {}
    wait_until(lambda: not cache.snapshot().unavailable(ALL), what="the 403 cleared by a good watch")
    assert api.list_requests(k.NODES) == lists  # resumed, not relisted


def test_watches_that_end_at_once_are_backed_off(api: FakeApiServer, cache: WatchCache) -> None:
    """A server that accepts watches and closes them empty at once (522 watches in 3 s
    across the kinds before). With backoff from 0.05 s to 0.2 s a kind makes a handful."""
    api.short_watches = True
    api.drop_watches()
    before = api.watch_requests(k.WORKLOADS)
    wait_until(lambda: api.watch_requests(k.WORKLOADS) >= before + 3, what="a few short watches")
    counted = api.watch_requests(k.WORKLOADS)
    threading.Event().wait(1.0)
    assert api.watch_requests(k.WORKLOADS) - counted <= 15


def test_watch_timeouts_are_randomised(api: FakeApiServer, cache: WatchCache) -> None:
    wait_until(lambda: all(api.watch_requests(kind) >= 1 for kind in k.KINDS), what="a watch per kind")
    timeouts = [int(q["timeoutSeconds"][0]) for kind in k.KINDS for q in api.watch_queries(kind)]
    assert all(FAST.watch_seconds <= t <= 2 * FAST.watch_seconds for t in timeouts)
    assert len(set(timeouts)) > 1


def nominal(cache: WatchCache, queue: str) -> int | None:
    """The queue's TPU nominal quota on the 4x4x4 flavor, as the cache holds it."""
    info = cache.snapshot().cluster_queue(queue)
    quota = info.quota("tpu7x-4x4x4", "google.com/tpu") if info is not None else None
    return int(quota.nominal) if quota is not None else None


def test_a_hung_api_server_makes_the_kinds_unknown_then_known_again(tmp_path: Path) -> None:
    """SIGSTOP on the API server: connections stay open, nothing comes. The cache kept
    "synced, age 0" on frozen data for 450 s before; now two bookmark intervals of
    silence make every kind unknown, and the change made meanwhile arrives on resume."""
    api = load(FakeApiServer())
    api.bookmark_interval = 0.05
    api.start()
    settings = replace(FAST, bookmark_interval=0.5)  # silent after 1 s
    cache = watch(api.port, tmp_path, settings)
    try:
        wait_until(lambda: not cache.snapshot().unavailable(ALL), what="initial sync")
        threading.Event().wait(1.5)  # past the silence bound: bookmarks keep quiet kinds current
        assert cache.snapshot().unavailable(ALL) == {}
        assert nominal(cache, "team-a") == 256
        api.hang()
        queue = copy.deepcopy(next(o for o in OBJECTS if o["metadata"]["name"] == "team-a"))
        queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 8
        api.put(k.CLUSTER_QUEUES, queue)
        wait_until(lambda: len(cache.snapshot().unavailable(ALL)) == len(ALL), what="every kind unknown")
        reason = cache.snapshot().unavailable(ALL)["ClusterQueues"]
        assert reason.startswith("silent: no event or bookmark for ") and "the API server may be hung" in reason
        api.resume()
        wait_until(lambda: not cache.snapshot().unavailable(ALL), what="known again")
        wait_until(lambda: nominal(cache, "team-a") == 8, what="the change made while hung")
    finally:
        api.resume()
        cache.stop()
        api.stop()


def test_backoff_is_spread() -> None:
    assert backoff_delay(2.0, lambda: 0.0) == 1.0
    assert backoff_delay(2.0, lambda: 0.999) == pytest.approx(2.998)


def test_a_relist_that_fails_midway_changes_nothing() -> None:
    """A relist replaces the kind in one step: a list that breaks between pages leaves the
    objects as they were, not half new and half old."""
    store = ClusterStore(POLICY)
    queues = [o for o in OBJECTS if o["kind"] == "LocalQueue"]
    store.replace(k.LOCAL_QUEUES, queues)
    before = dict(store.local_queues)

    def pages() -> Iterator[dict[str, Any]]:
        yield {"metadata": {"name": "new-queue", "namespace": "kubemaker"}, "spec": {"clusterQueue": "team-a"}}
        raise ConnectionError("the connection broke between pages")

    with pytest.raises(ConnectionError):
        store.replace(k.LOCAL_QUEUES, pages())
    assert store.local_queues == before


def test_silence_makes_a_kind_unknown_until_it_hears_again() -> None:
    now = [100.0]
    availability = Availability(["Nodes"], stale_after=60, clock=lambda: now[0], silent_after=120)
    availability.listed("Nodes")
    availability.watching("Nodes")
    now[0] += 120
    assert availability.reason("Nodes") is None
    now[0] += 1
    assert availability.reason("Nodes") == (
        "silent: no event or bookmark for 121s (bound 120s), the API server may be hung"
    )
    assert availability.age("Nodes") == 121
    availability.bookmark("Nodes")
    assert availability.reason("Nodes") is None and availability.since_event("Nodes") is None
    now[0] += 121
    availability.broken("Nodes", "API server unreachable: read timed out")  # the read timeout
    assert availability.reason("Nodes") == (
        "silent: no event or bookmark for 121s (bound 120s), the API server may be hung; "
        "last error: API server unreachable: read timed out"
    )
    availability.watching("Nodes")  # a server that accepts a watch is not hung
    assert availability.reason("Nodes") is None
    availability.broken("Nodes", "forbidden (403): …", fatal=True)
    assert availability.reason("Nodes") == "forbidden (403): …"
    availability.watching("Nodes")  # a watch the API server accepted: the 403 is over
    assert availability.reason("Nodes") is None


def test_a_relist_redoes_only_what_changed() -> None:
    """A relist of 100,000 Workloads must not hold the lock while re-indexing all of them:
    objects whose resourceVersion is the one held are skipped."""
    store = ClusterStore(POLICY)
    workloads = [copy.deepcopy(o) for o in OBJECTS if o["kind"] == "Workload"]
    for version, obj in enumerate(workloads, start=1):
        obj["metadata"]["resourceVersion"] = str(version)
    store.replace(k.WORKLOADS, workloads, atomic=False)  # a first list, in chunks
    held = dict(store.counted.entries)
    assert len(held) == len(workloads)
    changed = copy.deepcopy(workloads[0])
    changed["metadata"]["resourceVersion"] = "99"
    changed["spec"]["priorityClassRef"]["name"] = "best-effort"
    store.replace(k.WORKLOADS, [changed, *workloads[1:]])
    key = (changed["metadata"]["namespace"], changed["metadata"]["name"])
    assert store.counted.entries[key] is not held[key]  # re-read
    assert all(store.counted.entries[other] is held[other] for other in held if other != key)  # kept as they were
    store.replace(k.WORKLOADS, workloads[2:])  # two gone
    assert set(store.counted.entries) == set(held) - {
        key,
        (workloads[1]["metadata"]["namespace"], workloads[1]["metadata"]["name"]),
    }
