"""Static mode's placement in the simulator (``webhook.simulate.placement`` and the engine's placement
step): quota that fits still waits, ``TopologyPlacementFailed``, when too few whole node pools of the
job's topology have every host free, and victims must free pools as well as quota.

The states are read as ``check --cluster-state`` reads them (``state_from_objects``), so the
Workloads' ``topologyAssignment`` goes through the store's one Workload reader and its domain index.

Kueue's behaviour restated (kubernetes-sigs/kueue):
- ``pkg/scheduler/flavorassigner/flavorassigner.go`` (``assignFlavors``): when the quota fits,
  ``FindTopologyAssignmentsForWorkload`` runs on the current usage; a failure turns the podSet's
  mode to Preempt; then (Preempt) it runs again ``WithSimulateEmpty``: a failure there is NoFit
  ``TopologyPlacementFailed`` (here: the topology has fewer usable pools than slices), else the TAS
  podSets' resources all need preemption (``updateModeForTASRequests``).
- ``pkg/scheduler/preemption/preemption.go`` (``workloadFits``): a candidate set fits only when the
  quota fits and ``FindTopologyAssignmentsForWorkload`` succeeds with them gone; the candidates are
  the quota's (``withinClusterQueue``, ``reclaimWithinCohort``), so a pool held by a Workload the
  policies do not let the job preempt stays held.

Where we differ, and why:
- A static slice takes a whole node pool (RFC-0033 4.6): a pool is free when no admitted Workload's
  ``topologyAssignment`` names it or one of its hosts; Kueue counts free capacity per host
  (``tas_flavor_snapshot.go``), which for a slice of all of a pool's hosts is the same answer.
- A pool counts whole while it has a schedulable host, at the size its topology declares, as the
  capacity rules count it (``webhook.cluster.nodes``): hosts missing from it (incremental
  provisioning) or NotReady are not checked, and pods not managed by Kueue on its hosts are not seen.
- When no victim set frees enough pools the answer is ``wait`` ``TopologyPlacementFailed``; Kueue's
  condition then carries the preemption's message, its reason being the same pending state.
"""

from __future__ import annotations

from typing import Any

import pytest
from simulate_builders import (
    NAMESPACE,
    NODEPOOL_LABEL,
    admitted,
    cluster_queue,
    finished,
    local_queue,
    node,
    on_hosts,
    on_pools,
    pending_document,
    placed,
    static_job,
    tpu_flavor,
)

from webhook.cluster.statefiles import state_from_objects
from webhook.policy.config import Policy
from webhook.simulate.live import live, simulate_object
from webhook.simulate.result import Result

TPU = "google.com/tpu"
FLAVOR = "tpu7x-4x4x4"
POLICY = Policy()
POOLS = ("p1", "p2", "p3", "p4")


def _holding(name: str, queue: str, where: Any, priority: int = 0, chips: str = "64") -> dict[str, Any]:
    """An admitted Workload of ``queue`` on 4x4x4 placed by ``where`` (a topologyAssignment)."""
    return placed(admitted(name, queue, {TPU: chips}, FLAVOR, priority, namespace=NAMESPACE), where)


def _others(*pools: str) -> list[dict[str, Any]]:
    """One Workload of queue ``other`` on each of ``pools``."""
    return [_holding(f"o{pool[1:]}", "other", on_pools(pool)) for pool in pools]


def _cluster(*workloads: dict[str, Any], nodes: Any = None, team: str = "256") -> list[dict[str, Any]]:
    """ClusterQueues team (preempts lower priority in itself) and other, no cohort; four 4x4x4 pools."""
    return [
        tpu_flavor(),
        cluster_queue("team", {FLAVOR: {TPU: team}}, within="LowerPriority"),
        cluster_queue("other", {FLAVOR: {TPU: "256"}}),
        local_queue("team", "team"),
        local_queue("other", "other"),
        pending_document("bystander", "other", {TPU: "4"}),
        *([node(pool) for pool in POOLS] if nodes is None else nodes),
        *workloads,
    ]


def _answer(objects: list[dict[str, Any]], slices: int = 1, priority: int = 100, policy: Policy = POLICY) -> Result:
    store = state_from_objects(objects, policy)
    return simulate_object(live(store.snapshot(), policy), static_job("job", "team", slices, priority))


def _wait(free: str, held: str, why: str = "no preemption Kueue would make frees enough of them", n: int = 1) -> str:
    pools = f"{n} whole node pool{'s' if n != 1 else ''}"
    return (
        f"needs {pools} of 4x4x4 (flavor {FLAVOR}) with every host free; {free} free"
        + (f"; held by {held}" if held else "")
        + f"; {why}"
    )


HELD_3 = "default/o1 (1 pool), default/o2 (1 pool), default/o3 (1 pool)"

CASES = [
    ("a free pool: admit", _cluster(*_others("p1")), 1, ("admit", "", "fits now in ClusterQueue team on " + FLAVOR)),
    (
        "every pool of the topology held: wait",
        _cluster(*_others(*POOLS)),
        1,
        ("wait", "TopologyPlacementFailed", _wait("0 of 4", HELD_3)),
    ),
    (
        "quota fits two slices, one pool free: wait",
        _cluster(*_others("p1", "p2", "p3")),
        2,
        ("wait", "TopologyPlacementFailed", _wait("1 of 4", HELD_3, n=2)),
    ),
    (
        "a finished Workload's pool is free",
        _cluster(*_others("p1", "p2", "p3"), finished(_holding("done", "other", on_pools("p4")))),
        1,
        ("admit", "", "fits now in ClusterQueue team on " + FLAVOR),
    ),
    (
        "hosts named by hostname count for their pool",
        _cluster(*_others("p1", "p2", "p3"), _holding("by-host", "other", on_hosts("p4", 0))),
        1,
        (
            "wait",
            "TopologyPlacementFailed",
            _wait("0 of 4", "default/by-host (1 pool), default/o1 (1 pool), default/o2 (1 pool)"),
        ),
    ),
    (
        "v1beta1's domains are read too",
        _cluster(
            *_others("p1", "p2", "p3"),
            _holding("old", "other", {"levels": [NODEPOOL_LABEL], "domains": [{"values": ["p4"], "count": 16}]}),
        ),
        1,
        (
            "wait",
            "TopologyPlacementFailed",
            _wait("0 of 4", "default/o1 (1 pool), default/o2 (1 pool), default/o3 (1 pool)"),
        ),
    ),
    (
        "a pool whose only host is cordoned holds no slice",
        _cluster(*_others("p1", "p2", "p3"), nodes=[*(node(p) for p in POOLS[:3]), node("p4", cordoned=True)]),
        1,
        ("wait", "TopologyPlacementFailed", _wait("0 of 3", HELD_3)),
    ),
    (
        "more slices than the topology has pools: not even with every Workload gone",
        _cluster(team="512"),
        5,
        ("wait", "TopologyPlacementFailed", _wait("4 of 4", "", "not even with every Workload gone", n=5)),
    ),
    (
        "no Nodes in the state: unknown, never a promised start",
        _cluster(*_others("p1"), nodes=[]),
        1,
        (
            "unknown",
            "",
            "Nodes are not in the state: whether it finds 1 whole node pool of 4x4x4 with every host free is unknown",
        ),
    ),
    (
        "a topologyAssignment that cannot be read: unknown",
        _cluster(_holding("odd", "other", {"levels": [NODEPOOL_LABEL], "slices": "p4"})),
        1,
        (
            "unknown",
            "",
            "the topologyAssignment of default/odd cannot be read: which node pools it holds, and so whether the "
            "job finds 1 whole node pool of 4x4x4 with every host free, is unknown",
        ),
    ),
]


@pytest.mark.parametrize(("objects", "slices", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_placement_in_static_mode(objects: list[dict[str, Any]], slices: int, expected: tuple[str, str, str]) -> None:
    result = _answer(objects, slices)
    assert (result.outcome, result.reason, result.message) == expected
    assert result.preemptions == ()


def test_a_victim_that_frees_a_pool_is_preempted() -> None:
    """Three pools held by queue other (which team may not preempt), the fourth by a lower-priority
    Workload of team itself: the quota fits, the placement does not; Kueue preempts that one."""
    result = _answer(_cluster(*_others("p1", "p2", "p3"), _holding("low", "team", on_pools("p4"), priority=0)))
    assert (result.outcome, result.reason) == ("preempt", "")
    assert [(v.workload, v.reason) for v in result.preemptions] == [("default/low", "InClusterQueue")]


def test_a_pool_held_by_higher_priority_is_not_freed() -> None:
    result = _answer(_cluster(*_others("p1", "p2", "p3"), _holding("high", "team", on_pools("p4"), priority=1000)))
    assert (result.outcome, result.reason, result.message) == (
        "wait",
        "TopologyPlacementFailed",
        _wait("0 of 4", "default/high (1 pool), default/o1 (1 pool), default/o2 (1 pool)"),
    )


def test_quota_preemption_takes_the_victim_whose_pool_the_job_needs_too() -> None:
    """Quota 128 held by two lower-priority Workloads of team on p1 and p2, p3 and p4 held by other:
    one victim is enough for both the quota and a pool, and Kueue's order picks the first (by UID)."""
    objects = _cluster(
        *_others("p3", "p4"),
        _holding("low1", "team", on_pools("p1")),
        _holding("low2", "team", on_pools("p2")),
        team="128",
    )
    result = _answer(objects)
    assert (result.outcome, [(v.workload, v.reason) for v in result.preemptions]) == (
        "preempt",
        [("default/low1", "InClusterQueue")],
    )


def test_the_wait_names_the_pools_and_their_holders_in_json_text_and_line() -> None:
    result = _answer(_cluster(*_others(*POOLS)))
    assert result.to_json()["holders"] == {
        "flavor": FLAVOR,
        "resource": "nodePools",
        "clusterQueues": [],
        "workloads": [{"name": f"default/o{i}", "clusterQueue": "other", "amount": 1} for i in range(1, 5)],
    }
    assert result.text().splitlines()[4:6] == [
        "  node pools of 4x4x4 (tpu7x-4x4x4): needs 1, 0 of 4 free",
        "  held by: default/o1 (other, 1 pool), default/o2 (other, 1 pool), default/o3 (other, 1 pool),"
        " default/o4 (other, 1 pool)",
    ]
    assert result.warning() == (
        "[simulate] will wait: needs 1 free 4x4x4 node pool, 0 of 4 free; held by default/o1, default/o2, default/o3"
    )


def test_dynamic_mode_does_not_check_placement() -> None:
    """Dynamic mode's sub-slice placement is not simulated: quota and preemption only."""
    result = _answer(_cluster(*_others(*POOLS)), policy=Policy(mode="dynamic"))
    assert (result.outcome, result.message) == ("admit", "fits now in ClusterQueue team on " + FLAVOR)
