"""Flavor assignment against Kueue's own test table (``webhook.quota.flavorassigner``).

From kubernetes-sigs/kueue ``pkg/scheduler/flavorassigner/flavorassigner_test.go``,
``TestAssignFlavors``: 18 cases on flavor order, eligibility (labels, affinity, taints),
multiple podSets, borrowing, uncovered and zero requests, and the ``pods`` resource (each
case names its Kueue test; inputs and expected outcome restated in our words, no code
copied).

Where we differ on purpose, the case says so: Kueue judges "does it fit now" (usage
counts, the answer may be Preempt), we judge "could it ever fit" (usage zero), so a case
Kueue answers Preempt (waiting or preempting would let it in) is a fit for us.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from quota_fixtures import CQ, affinity, cluster_queue, cohort, demand, jobset, pod, q, store

from webhook.cluster import kinds as k
from webhook.quota.flavorassigner import BeyondNominal, Exceeded, beyond_nominal, uncovered_requests
from webhook.quota.podsets import PodSetDemand, podset_demand
from webhook.quota.resource_node import NominalFit

# ---------------------------------------------------------------- flavorassigner_test.go, TestAssignFlavors

TAINT = {"key": "instance", "value": "spot", "effect": "NoSchedule"}
TOLERATION = {"key": "instance", "operator": "Equal", "value": "spot", "effect": "NoSchedule"}
FLAVORS: dict[str, dict[str, Any]] = {
    "default": {},
    "one": {"nodeLabels": {"type": "one"}},
    "two": {"nodeLabels": {"type": "two"}},
    "b_one": {"nodeLabels": {"b_type": "one"}},
    "b_two": {"nodeLabels": {"b_type": "two"}},
    "tainted": {"nodeTaints": [TAINT]},
    "taint_and_toleration": {"nodeTaints": [TAINT], "tolerations": [TOLERATION]},
    "label-x-a": {"nodeLabels": {"x": "a"}},
    "label-xy-b": {"nodeLabels": {"x": "b", "y": "k"}},
}


#: (Kueue case, queues, podSets, expected per podSet: resource -> flavor, or "nofit"; our note where we differ)
ASSIGN: list[tuple[str, list[dict[str, Any]], list[PodSetDemand], list[dict[str, str] | str], str]] = [
    (
        "single flavor, fits",
        [cluster_queue(CQ, [[("default", {"cpu": q("1"), "memory": q("2Mi")})]])],
        [demand("main", 1, pod({"cpu": "1", "memory": "1Mi"}))],
        [{"cpu": "default", "memory": "default"}],
        "",
    ),
    (
        "single flavor, fits tainted flavor",
        [cluster_queue(CQ, [[("tainted", {"cpu": q("4")})]])],
        [demand("main", 1, pod({"cpu": "1"}, tolerations=[TOLERATION]))],
        [{"cpu": "tainted"}],
        "",
    ),
    (
        "single flavor, fits tainted flavor with toleration",
        [cluster_queue(CQ, [[("taint_and_toleration", {"cpu": q("4")})]])],
        [demand("main", 1, pod({"cpu": "1"}))],
        [{"cpu": "taint_and_toleration"}],
        "",
    ),
    (
        "single flavor, used resources, doesn't fit",
        [cluster_queue(CQ, [[("default", {"cpu": q("4")})]])],
        [demand("main", 1, pod({"cpu": "2"}))],
        [{"cpu": "default"}],
        "differs on purpose: Kueue answers Preempt (3 of 4 CPUs in use); with usage zero it fits",
    ),
    (
        "multiple resource groups, fits",
        [
            cluster_queue(
                CQ,
                [
                    [("one", {"cpu": q("2")}), ("two", {"cpu": q("4")})],
                    [("b_one", {"memory": q("1Gi")}), ("b_two", {"memory": q("5Gi")})],
                ],
            )
        ],
        [demand("main", 1, pod({"cpu": "3", "memory": "10Mi"}))],
        [{"cpu": "two", "memory": "b_one"}],
        "",
    ),
    (
        "multiple resources in a group, doesn't fit",
        [
            cluster_queue(
                CQ,
                [[("one", {"cpu": q("2"), "memory": q("1Gi")}), ("two", {"cpu": q("4"), "memory": q("5Mi")})]],
            )
        ],
        [demand("main", 1, pod({"cpu": "3", "memory": "10Mi"}))],
        ["nofit"],
        "",
    ),
    (
        "multiple flavors, fits while skipping tainted flavor",
        [cluster_queue(CQ, [[("tainted", {"cpu": q("4")}), ("two", {"cpu": q("4")})]])],
        [demand("main", 1, pod({"cpu": "3"}))],
        [{"cpu": "two"}],
        "",
    ),
    (
        "multiple flavors, fits a node selector",
        [cluster_queue(CQ, [[("one", {"cpu": q("4")}), ("two", {"cpu": q("4")})]])],
        [
            demand(
                "main",
                1,
                pod(
                    {"cpu": "1"},
                    nodeSelector={"type": "two", "ignored1": "foo"},
                    affinity=affinity([("ignored2", "In", ["bar"])]),
                ),
            )
        ],
        [{"cpu": "two"}],
        "",
    ),
    (
        "multiple flavors, fits with node affinity",
        [
            cluster_queue(
                CQ,
                [[("one", {"cpu": q("4"), "memory": q("1Gi")}), ("two", {"cpu": q("4"), "memory": q("1Gi")})]],
            )
        ],
        [
            demand(
                "main",
                1,
                pod(
                    {"cpu": "1", "memory": "1Mi"},
                    nodeSelector={"ignored1": "foo"},
                    affinity=affinity([("type", "In", ["two"])]),
                ),
            )
        ],
        [{"cpu": "two", "memory": "two"}],
        "",
    ),
    (
        "multiple flavors, node affinity fits any flavor",
        [cluster_queue(CQ, [[("one", {"cpu": q("4")}), ("two", {"cpu": q("4")})]])],
        [
            demand(
                "main",
                1,
                pod({"cpu": "1"}, affinity=affinity([("ignored2", "In", ["bar"])], [("cpuType", "In", ["two"])])),
            )
        ],
        [{"cpu": "one"}],
        "",
    ),
    (
        "multiple flavors with different label keys, selector only uses flavor's own keys",
        [cluster_queue(CQ, [[("label-x-a", {"cpu": q("4")}), ("label-xy-b", {"cpu": q("4")})]])],
        [demand("main", 1, pod({"cpu": "1"}, nodeSelector={"x": "a", "y": "g"}))],
        [{"cpu": "label-x-a"}],
        "",
    ),
    (
        "labelless flavor in group with labeled flavor, workload uses labeled selector",
        [cluster_queue(CQ, [[("default", {"cpu": q("4")}), ("two", {"cpu": q("4")})]])],
        [demand("main", 1, pod({"cpu": "1"}, nodeSelector={"type": "two"}))],
        [{"cpu": "default"}],
        "",
    ),
    (
        "multiple flavors, doesn't fit node affinity",
        [cluster_queue(CQ, [[("one", {"cpu": q("4")}), ("two", {"cpu": q("4")})]])],
        [demand("main", 1, pod({"cpu": "1"}, affinity=affinity([("type", "In", ["three"])])))],
        ["nofit"],
        "",
    ),
    (
        "multiple specs, fit different flavors",
        [cluster_queue(CQ, [[("one", {"cpu": q("4")}), ("two", {"cpu": q("10")})]])],
        [demand("driver", 1, pod({"cpu": "5"})), demand("worker", 1, pod({"cpu": "3"}))],
        [{"cpu": "two"}, {"cpu": "one"}],
        "",
    ),
    (
        "multiple specs, fits borrowing",
        [
            cluster_queue(CQ, [[("default", {"cpu": q("2", "98"), "memory": q("2Gi")})]], "test-cohort"),
            cluster_queue("secondary", [[("default", {"cpu": q("198"), "memory": q("198Gi")})]], "test-cohort"),
        ],
        [
            demand("driver", 1, pod({"cpu": "4", "memory": "1Gi"})),
            demand("worker", 1, pod({"cpu": "6", "memory": "4Gi"})),
        ],
        [{"cpu": "default", "memory": "default"}, {"cpu": "default", "memory": "default"}],
        "",
    ),
    (
        "not enough space to borrow",
        [
            cluster_queue(CQ, [[("one", {"cpu": q("1")})]], "test-cohort"),
            cluster_queue("secondary", [[("one", {"cpu": q("10", None, "0")})]], "test-cohort"),
        ],
        [demand("main", 1, pod({"cpu": "2"}))],
        ["nofit"],
        "",
    ),
    (
        "num pods fit",
        [cluster_queue(CQ, [[("default", {"pods": q("3"), "cpu": q("10")})]])],
        [demand("main", 3, pod({"cpu": "1"}))],
        [{"cpu": "default", "pods": "default"}],
        "",
    ),
    (
        "num pods don't fit",
        [cluster_queue(CQ, [[("default", {"pods": q("2"), "cpu": q("10")})]])],
        [demand("main", 3, pod({"cpu": "1"}))],
        ["nofit"],
        "",
    ),
]


@pytest.mark.parametrize(
    ("name", "queues", "podsets", "expected", "difference"), ASSIGN, ids=[case[0] for case in ASSIGN]
)
def test_flavor_assignment_as_kueue_does_it(
    name: str,
    queues: list[dict[str, Any]],
    podsets: list[PodSetDemand],
    expected: list[dict[str, str] | str],
    difference: str,
) -> None:
    """Kueue: pkg/scheduler/flavorassigner/flavorassigner_test.go, TestAssignFlavors, case ``name``."""
    state = store(*queues, flavors=FLAVORS)
    assignment = state.assign(CQ, podsets)
    got: list[dict[str, str] | str] = [dict(p.flavors) if p.status == "fit" else p.status for p in assignment.podsets]
    assert got == expected, difference


def test_uncovered_resources_are_left_to_resource_not_covered() -> None:
    """Kueue TestAssignFlavors "resource not listed in clusterQueue" (NoFit: "resource example.com/gpu
    unavailable in ClusterQueue") and "zero resource request not in clusterQueue should succeed"."""
    state = store(cluster_queue(CQ, [[("one", {"cpu": q("4")})]]), flavors=FLAVORS)
    [gpu] = state.assign(CQ, [demand("main", 1, pod({"example.com/gpu": "2"}))]).podsets
    assert gpu.uncovered == ("example.com/gpu",)  # the resource-not-covered rule refuses it
    state = store(cluster_queue(CQ, [[("default", {"cpu": q("4")})]]), flavors=FLAVORS)
    [zero] = state.assign(CQ, [demand("main", 1, pod({"cpu": "1", "example.com/gpu": "0"}))]).podsets
    assert (zero.status, dict(zero.flavors), zero.uncovered) == ("fit", {"cpu": "default"}, ())


def test_a_missing_flavor_object_is_unknown_not_a_refusal() -> None:
    """Kueue TestAssignFlavors "flavor not found": Kueue reports it; we cannot judge what follows."""
    state = store(cluster_queue(CQ, [[("nonexistent", {"cpu": q("1")}), ("two", {"cpu": q("4")})]]), flavors=FLAVORS)
    [result] = state.assign(CQ, [demand("main", 1, pod({"cpu": "8"}))]).podsets
    assert result.status == "unknown"


def test_a_cohort_cycle_makes_the_assignment_unknown() -> None:
    """Kueue refuses a cohort tree with a cycle (ErrCohortHasCycle); we say nothing about it."""
    state = store(
        cluster_queue(CQ, [[("default", {"cpu": q("1")})]], "a"),
        cohort("a", "b"),
        cohort("b", "a"),
        flavors=FLAVORS,
    )
    assert state.assign(CQ, [demand("main", 1, pod({"cpu": "8"}))]).status == "unknown"


def test_a_podset_without_a_topology_request_passes_over_topology_aware_flavors() -> None:
    """Kueue: pkg/scheduler/flavorassigner/tas_flavorassigner.go, checkPodSetAndFlavorMatchForTAS
    ("supports only TopologyAwareScheduling"), unless every flavor of the queue is one (TAS implied)."""
    flavors = {"tas": {"topologyName": "topo"}, "plain": {}}
    state = store(cluster_queue(CQ, [[("tas", {"cpu": q("8")}), ("plain", {"cpu": q("8")})]]), flavors=flavors)
    cpu = pod({"cpu": "1"})
    [plain] = state.assign(CQ, [podset_demand("main", cpu, 1, {"cpu": Decimal(1)})]).podsets
    assert dict(plain.flavors) == {"cpu": "plain"}
    [tas] = state.assign(CQ, [podset_demand("main", cpu, 1, {"cpu": Decimal(1)}, tas=True)]).podsets
    assert dict(tas.flavors) == {"cpu": "tas"}
    only_tas = store(cluster_queue(CQ, [[("tas", {"cpu": q("8")})]]), flavors=flavors)
    [implied] = only_tas.assign(CQ, [podset_demand("main", cpu, 1, {"cpu": Decimal(1)})]).podsets
    assert dict(implied.flavors) == {"cpu": "tas"}


def test_a_podset_no_flavor_holds_says_which_flavors_it_tried() -> None:
    """What exceeds-queue-capacity reads: the first podSet without a flavor, the flavors passed
    over for its labels, and those whose potential quota it exceeds, with the bound."""
    state = store(
        cluster_queue(CQ, [[("one", {"cpu": q("4")}), ("two", {"cpu": q("4")}), ("default", {"cpu": q("6")})]]),
        flavors=FLAVORS,
    )
    small = demand("driver", 1, pod({"cpu": "1"}))
    big = demand("workers", 1, pod({"cpu": "8"}, nodeSelector={"type": "two"}))
    assignment = state.assign(CQ, [small, big, small])
    assert assignment.first_unassigned() == (1, True)
    result = assignment.podsets[1]
    assert [(a.flavor, a.kind) for a in result.passed_over] == [("one", "mismatch")]
    assert result.exceeded == (
        Exceeded("two", "cpu", Decimal(8), Decimal(4), "nominal 4, no cohort to borrow from"),
        Exceeded("default", "cpu", Decimal(8), Decimal(6), "nominal 6, no cohort to borrow from"),
    )
    assert assignment.podsets[2].status == "unknown"  # Kueue stops at the first podSet without a flavor
    assert state.assign(CQ, [small]).first_unassigned() is None


def test_a_flavor_picked_against_an_upper_bound_is_not_certain() -> None:
    """With the Cohorts unknown a borrowingLimit bounds the queue, but Kueue might pick a later flavor."""
    state = store(
        cluster_queue(CQ, [[("one", {"cpu": q("4", "4")}), ("default", {"cpu": q("20")})]], "cohort"),
        flavors=FLAVORS,
    )
    state.availability.mark_absent(k.COHORTS.name, "not watched")
    assignment = state.assign(CQ, [demand("a", 1, pod({"cpu": "6"})), demand("b", 1, pod({"cpu": "19"}))])
    assert assignment.podsets[0].flavors == {"cpu": "one"} and not assignment.podsets[0].exact
    assert assignment.first_unassigned() == (1, False)


def test_uncovered_requests_are_named_once_each() -> None:
    """Kueue: "resource … unavailable in ClusterQueue"; a zero request of one is skipped."""
    spec = {
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1", "example.com/gpu": "1"}}},
            {"name": "b", "resources": {"limits": {"example.com/gpu": "1", "ephemeral-storage": "0"}}},
        ],
        "initContainers": [{"name": "init", "resources": {"requests": {"memory": "1Gi"}}}],
    }
    [podset] = jobset(("workers", 1, 1, spec)).podsets
    found = [(c.name, kind, r) for c, kind, r in uncovered_requests(podset, frozenset({"cpu"}))]
    assert found == [("a", "requests", "example.com/gpu"), ("init", "requests", "memory")]


def test_replicas_beyond_the_nominal_quota_of_the_flavor_one_pod_gets() -> None:
    """What replicas-beyond-nominal asks: a Deployment's pods are admitted one at a time."""
    state = store(
        cluster_queue(CQ, [[("one", {"cpu": q("1")}), ("default", {"cpu": q("10", "90")})]], "c"),
        flavors=FLAVORS,
    )
    info = state.cluster_queue(CQ)
    assert info is not None
    [podset] = jobset(("server", 1, None, pod({"cpu": "4"}))).podsets
    assert beyond_nominal(state, info, podset, 2) is None  # 8 of 10
    beyond = beyond_nominal(state, info, podset, 3)
    assert beyond == BeyondNominal("default", NominalFit(2, (("cpu", Decimal(12), Decimal(10)),)))
    assert beyond_nominal(state, info, podset, 0) is None
    [empty] = jobset(("server", 1, None, {"containers": [{"name": "c"}]})).podsets
    assert beyond_nominal(state, info, empty, 3) is None  # requests nothing: takes no quota
