"""The quota picture from a real store: nominal, in use, borrowed, lent and pending per flavor.

The cohort is RFC-0033's ``tpu-pool`` (team-a and team-b, 256 tpu7x chips each); usage
comes from admitted Workloads as Kueue writes them (``status.admission``), pending from
Workloads waiting in a LocalQueue.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from explain_builders import TPU, rfc_example_one
from quota_fixtures import cluster_queue, cohort, q, store
from simulate_builders import local_queue

from webhook.quota.picture import Amounts, CohortQuota, QueueQuota

D = Decimal


def _admitted(name: str, queue: str, chips: int) -> dict[str, Any]:
    workload = rfc_example_one().name(name).uid(name).obj()
    workload["status"]["admission"] = {
        "clusterQueue": queue,
        "podSetAssignments": [{"name": "workers", "flavors": {TPU: "tpu7x"}, "resourceUsage": {TPU: str(chips)}}],
    }
    return workload


def _pending(name: str, local_queue: str, pods: int, chips_per_pod: int) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {TPU: str(chips_per_pod)}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team-b-ns", "uid": name, "creationTimestamp": "2026-12-01T08:00:00Z"},
        "spec": {
            "queueName": local_queue,
            "podSets": [{"name": "main", "count": pods, "template": {"spec": {"containers": [container]}}}],
        },
    }


def test_a_borrowing_team_borrows_what_the_other_lends_and_waiting_work_is_pending() -> None:
    state = store(
        cluster_queue("team-a", [[("tpu7x", {TPU: q("256")})]], cohort="tpu-pool"),
        cluster_queue("team-b", [[("tpu7x", {TPU: q("256")})]], cohort="tpu-pool"),
        cohort("tpu-pool"),
        local_queue("team-b-queue", "team-b", namespace="team-b-ns"),
        _admitted("a-big", "team-a", 320),
        _admitted("b-small", "team-b", 64),
        _pending("b-waiting", "team-b-queue", 4, 16),
    )
    picture = state.snapshot().quota_picture()
    assert picture.cluster_queues == {
        "team-a": QueueQuota("team-a", "tpu-pool", {"tpu7x": {TPU: Amounts(D(256), D(320), D(64), D(0), D(0))}}),
        "team-b": QueueQuota("team-b", "tpu-pool", {"tpu7x": {TPU: Amounts(D(256), D(64), D(0), D(64), D(64))}}),
    }
    assert picture.cohorts == {"tpu-pool": CohortQuota("tpu-pool", None, {})}


def test_the_cohorts_own_quota_covers_borrowing_first_and_lending_limits_cap_what_is_lent() -> None:
    state = store(
        cluster_queue("team-a", [[("tpu7x", {TPU: q("100")})]], cohort="tpu-pool"),
        cluster_queue("team-b", [[("tpu7x", {TPU: q("100", None, "30")})]], cohort="tpu-pool"),
        cluster_queue("team-c", [[("tpu7x", {TPU: q("100")})]], cohort="tpu-pool"),
        cohort("tpu-pool", quotas={"tpu7x": {TPU: q("20")}}),
        _admitted("a-big", "team-a", 170),
    )
    queues = state.snapshot().quota_picture().cluster_queues
    # 70 borrowed, 20 of it the cohort's own; 50 from team-b (30 lendable) and team-c (100): 1/2.6 each
    lent = {name: queues[name].flavors["tpu7x"][TPU].lent for name in ("team-a", "team-b", "team-c")}
    assert lent["team-a"] == 0
    assert lent["team-b"] + lent["team-c"] == D(50)
    assert lent["team-b"] / lent["team-c"] == D("0.3")
    assert queues["team-b"].flavors["tpu7x"][TPU].lending_limit == D(30)


def test_a_queue_in_no_cohort_lends_nothing_and_the_picture_is_memoized_per_snapshot() -> None:
    state = store(cluster_queue("solo", [[("tpu7x", {TPU: q("64")})]]), _admitted("s", "solo", 32))
    snapshot = state.snapshot()
    picture = snapshot.quota_picture()
    assert picture.cluster_queues["solo"] == QueueQuota(
        "solo", None, {"tpu7x": {TPU: Amounts(D(64), D(32), D(0), D(0), D(0))}}
    )
    assert snapshot.quota_picture() is picture
