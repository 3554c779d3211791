"""The engine's input: the ClusterQueue and Cohort fields it reads, and the state's indexes."""

from __future__ import annotations

from decimal import Decimal

from tests.simulate_builders import admitted, cluster_queue, cohort, pending_document, state
from webhook.kueue.clusterqueue import FlavorFungibility, Preemption, parse_cluster_queue
from webhook.kueue.cohort import parse_cohort


def test_cluster_queue_policies_are_parsed_with_kueue_defaults() -> None:
    bare = parse_cluster_queue(cluster_queue("q", {"f": {"cpu": "1"}}))
    assert (bare.preemption, bare.fungibility, bare.queueing_strategy, bare.stop_policy, bare.fair_weight) == (
        Preemption("Never", "Never", "Never", None),
        FlavorFungibility("MayStopSearch", "TryNextFlavor", None),
        "BestEffortFIFO",
        "None",
        Decimal(1),
    )
    full = parse_cluster_queue(
        cluster_queue(
            "q",
            {"f": {"cpu": "1"}},
            within="LowerOrNewerEqualPriority",
            reclaim="Any",
            borrow_within="LowerPriority",
            threshold=-3,
            when_can_borrow="Borrow",
            when_can_preempt="Preempt",
            strategy="StrictFIFO",
            stop="Hold",
            weight="1500m",
        )
    )
    assert (full.preemption, full.fungibility, full.queueing_strategy, full.stop_policy, full.fair_weight) == (
        Preemption("LowerOrNewerEqualPriority", "Any", "LowerPriority", -3),
        FlavorFungibility("MayStopSearch", "MayStopSearch", None),  # v1beta1's Borrow / Preempt
        "StrictFIFO",
        "Hold",
        Decimal("1.5"),
    )


def test_cohort_weight_is_parsed() -> None:
    assert parse_cohort(cohort("c", weight="0")).fair_weight == 0
    assert parse_cohort(cohort("c")).fair_weight == 1


def test_indexes_by_cluster_queue() -> None:
    st = state(
        [cluster_queue("a", {"f": {"cpu": "1"}}), cluster_queue("b", {"f": {"cpu": "1"}})],
        workloads=[
            admitted("x", "a", {"cpu": "1"}),
            admitted("y", "b", {"cpu": "1"}),
            pending_document("p", "a", {"cpu": "1"}),
            pending_document("off", "a", {"cpu": "1"}, active=False),
            pending_document("lost", "nowhere", {"cpu": "1"}),
        ],
    )
    assert {q: [w.key for w in ws] for q, ws in st.admitted_by_queue.items()} == {"a": ["/x"], "b": ["/y"]}
    assert {q: [w.key for w in ws] for q, ws in st.pending_by_queue.items()} == {"a": ["default/p"]}
