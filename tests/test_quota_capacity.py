"""Σ nominal over ClusterQueues and Cohorts, and the chips of the nodes a flavor selects."""

from __future__ import annotations

from decimal import Decimal

from quota_fixtures import cluster_queue, cohort

from webhook.kueue.clusterqueue import parse_cluster_queue
from webhook.kueue.cohort import parse_cohort
from webhook.quota.capacity import capacity, matching_nodes, nominal_by_flavor, nominal_sum, per_unit, topology_chips
from webhook.quota.objects import NodeInfo

TPU = "google.com/tpu"


def _queues() -> list:  # type: ignore[type-arg]
    return [
        parse_cluster_queue(
            cluster_queue(
                "team-a", [[("tpu7x", {TPU: ("256", "128", None)}), ("cpu", {TPU: ("0", None, None)})]], "pool"
            )
        ),
        parse_cluster_queue(cluster_queue("team-b", [[("tpu7x", {TPU: ("256", None, None)})]], "pool")),
        parse_cluster_queue(cluster_queue("dev", [[("tpu7x", {TPU: ("64", "256", None)})]], "pool")),
    ]


def test_nominal_sum_counts_queues_and_cohorts_not_limits() -> None:
    pool = parse_cohort(cohort("pool", quotas={"tpu7x": {TPU: ("64", None, None)}}))
    total = nominal_sum(_queues(), [pool], TPU)
    assert total.total == Decimal(640)
    assert total.of("ClusterQueue", "team-a") == 256 and total.of("Cohort", "pool") == 64
    assert total.describe() == "team-a 256, team-b 256, dev 64, Cohort pool 64"
    assert total.describe(limit=2) == "team-a 256, team-b 256, and 2 more"
    assert nominal_sum([], [], TPU).describe() == "none"


def test_nominal_by_flavor_keeps_only_flavors_given_chips() -> None:
    by_flavor = nominal_by_flavor(_queues(), [], TPU)
    assert set(by_flavor) == {"tpu7x"} and by_flavor["tpu7x"].total == 576


def _node(name: str, pool: str, chips: str, **labels: str) -> NodeInfo:
    return NodeInfo(
        name,
        {"cloud.google.com/gke-nodepool": pool, **labels},
        {TPU: Decimal(chips), "cpu": Decimal(208)},
        (),
        False,
    )


def test_capacity_of_the_nodes_a_flavor_selects() -> None:
    nodes = [
        _node("a0", "pool-a", "4", topology="4x4x4"),
        _node("a1", "pool-a", "4", topology="4x4x4"),
        _node("b0", "pool-b", "4", topology="4x4x8"),
        _node("cpu", "cpu-pool", "0"),
    ]
    selected = matching_nodes(nodes, {"topology": "4x4x4"})
    assert [n.name for n in selected] == ["a0", "a1"]
    cap = capacity(selected, TPU, "cloud.google.com/gke-nodepool")
    assert (cap.total, cap.nodes, dict(cap.pools)) == (8, 2, {"pool-a": 8})
    assert cap.describe("chips") == "8 chips on 2 nodes in 1 node pool"
    everything = capacity(nodes, TPU, "cloud.google.com/gke-nodepool")
    assert everything.describe() == "12 on 4 nodes in 2 node pools"  # the CPU pool has no chips
    assert per_unit(nodes, "cpu", TPU) == Decimal(208 * 3) / 12
    assert per_unit([nodes[-1]], "cpu", TPU) is None


def test_topology_chips() -> None:
    assert topology_chips("4x4x8") == 128 and topology_chips("4x4") is None
