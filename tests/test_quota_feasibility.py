"""Flavor assignment against Kueue's own test table (``webhook.quota.feasibility``).

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
from quota_fixtures import CQ, affinity, cluster_queue, cohort, demand, jobset, pod, q, snapshot, store

from webhook.cluster import kinds as k
from webhook.kueue.clusterqueue import NominalFit
from webhook.kueue.podset import PodSetDemand, podset_demand
from webhook.quota.feasibility import BeyondNominal, Exceeded, beyond_nominal, uncovered_requests

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
    view = snapshot(*queues, flavors=FLAVORS)
    assignment = view.assign(CQ, podsets)
    got: list[dict[str, str] | str] = [dict(p.flavors) if p.status == "fit" else p.status for p in assignment.podsets]
    assert got == expected, difference


def test_uncovered_resources_are_left_to_resource_not_covered() -> None:
    """Kueue TestAssignFlavors "resource not listed in clusterQueue" (NoFit: "resource example.com/gpu
    unavailable in ClusterQueue") and "zero resource request not in clusterQueue should succeed"."""
    view = snapshot(cluster_queue(CQ, [[("one", {"cpu": q("4")})]]), flavors=FLAVORS)
    [gpu] = view.assign(CQ, [demand("main", 1, pod({"example.com/gpu": "2"}))]).podsets
    assert gpu.uncovered == ("example.com/gpu",)  # the resource-not-covered rule refuses it
    view = snapshot(cluster_queue(CQ, [[("default", {"cpu": q("4")})]]), flavors=FLAVORS)
    [zero] = view.assign(CQ, [demand("main", 1, pod({"cpu": "1", "example.com/gpu": "0"}))]).podsets
    assert (zero.status, dict(zero.flavors), zero.uncovered) == ("fit", {"cpu": "default"}, ())


# ---------------------------------------------------------------- flavorassigner_test.go, TestDeletedFlavors


def test_a_missing_flavor_object_leaves_the_next_flavor_to_decide() -> None:
    """Kueue TestDeletedFlavors "multiple flavors, skip missing ResourceFlavor": the missing flavor is
    NoFit ("flavor deleted-flavor not found") and the next flavor holds the podSet."""
    queue = cluster_queue(CQ, [[("deleted-flavor", {"cpu": q("4")}), ("flavor", {"cpu": q("4")})]])
    view = snapshot(queue, flavors={"flavor": {}})
    assignment = view.assign(CQ, [demand("main", 1, pod({"cpu": "3"}))])
    assert assignment.status == "fit"
    assert dict(assignment.podsets[0].flavors) == {"cpu": "flavor"}


def test_a_missing_flavor_object_alone_is_unknown_not_a_refusal() -> None:
    """Kueue TestDeletedFlavors "flavor not found": NoFit ("flavor deleted-flavor not found").
    Differs on purpose: the ResourceFlavor may yet be created, so the gate says nothing."""
    view = snapshot(cluster_queue(CQ, [[("deleted-flavor", {"cpu": q("4")})]]), flavors={})
    assignment = view.assign(CQ, [demand("main", 1, pod({"cpu": "1"}))])
    assert assignment.status == "unknown"
    assert "flavor 'deleted-flavor': its ResourceFlavor object is not in the cluster state" in assignment.doubt


def test_a_missing_flavor_object_is_still_ruled_out_by_its_quota() -> None:
    """The quota is the ClusterQueue's, known without the flavor object: a podSet beyond it never fits
    there, whatever the flavor would say (Kueue: NoFit on both flavors)."""
    view = snapshot(cluster_queue(CQ, [[("nonexistent", {"cpu": q("1")}), ("two", {"cpu": q("4")})]]), flavors=FLAVORS)
    assignment = view.assign(CQ, [demand("main", 1, pod({"cpu": "8"}))])
    assert assignment.status == "nofit" and assignment.first_unassigned() == 0
    assert [(e.flavor, e.most) for e in assignment.podsets[0].exceeded] == [("nonexistent", 1), ("two", 4)]


def test_a_cohort_cycle_makes_the_assignment_unknown() -> None:
    """Kueue refuses a cohort tree with a cycle (ErrCohortHasCycle); we say nothing about it."""
    view = snapshot(
        cluster_queue(CQ, [[("default", {"cpu": q("1")})]], "a"),
        cohort("a", "b"),
        cohort("b", "a"),
        flavors=FLAVORS,
    )
    assert view.assign(CQ, [demand("main", 1, pod({"cpu": "8"}))]).status == "unknown"


def test_a_podset_without_a_topology_request_passes_over_topology_aware_flavors() -> None:
    """Kueue: pkg/scheduler/flavorassigner/tas_flavorassigner.go, checkPodSetAndFlavorMatchForTAS
    ("supports only TopologyAwareScheduling"), unless every flavor of the queue is one (TAS implied)."""
    flavors = {"tas": {"topologyName": "topo"}, "plain": {}}
    view = snapshot(cluster_queue(CQ, [[("tas", {"cpu": q("8")}), ("plain", {"cpu": q("8")})]]), flavors=flavors)
    cpu = pod({"cpu": "1"})
    [plain] = view.assign(CQ, [podset_demand("main", cpu, 1, {"cpu": Decimal(1)})]).podsets
    assert dict(plain.flavors) == {"cpu": "plain"}
    [tas] = view.assign(CQ, [podset_demand("main", cpu, 1, {"cpu": Decimal(1)}, tas=True)]).podsets
    assert dict(tas.flavors) == {"cpu": "tas"}
    only_tas = snapshot(cluster_queue(CQ, [[("tas", {"cpu": q("8")})]]), flavors=flavors)
    [implied] = only_tas.assign(CQ, [podset_demand("main", cpu, 1, {"cpu": Decimal(1)})]).podsets
    assert dict(implied.flavors) == {"cpu": "tas"}


def test_a_podset_no_flavor_holds_says_which_flavors_it_tried() -> None:
    """What exceeds-queue-capacity reads: the first podSet without a flavor, the flavors passed
    over for its labels, and those whose potential quota it exceeds, with the bound."""
    view = snapshot(
        cluster_queue(CQ, [[("one", {"cpu": q("4")}), ("two", {"cpu": q("4")}), ("default", {"cpu": q("6")})]]),
        flavors=FLAVORS,
    )
    small = demand("driver", 1, pod({"cpu": "1"}))
    big = demand("workers", 1, pod({"cpu": "8"}, nodeSelector={"type": "two"}))
    assignment = view.assign(CQ, [small, big, small])
    assert assignment.status == "nofit" and assignment.first_unassigned() == 1
    result = assignment.podsets[1]
    assert [(a.flavor, a.kind) for a in result.passed_over] == [("one", "mismatch")]
    assert result.exceeded == (
        Exceeded("two", "cpu", Decimal(8), Decimal(4), "nominal 4, no cohort to borrow from"),
        Exceeded("default", "cpu", Decimal(8), Decimal(6), "nominal 6, no cohort to borrow from"),
    )
    assert assignment.podsets[2].status == "fit"  # on its own; the message speaks of the first without a flavor
    assert view.assign(CQ, [small]).first_unassigned() is None


def test_with_the_cohorts_unknown_a_choice_within_the_bounds_is_uncertain_not_refused() -> None:
    """Cohorts unknown: flavor one holds between its nominal 4 and nominal + borrowingLimit 8, default at
    least its nominal 20. ``a`` (6) on one and ``b`` (19) on default might hold: unknown, never a refusal."""
    state = store(
        cluster_queue(CQ, [[("one", {"cpu": q("4", "4")}), ("default", {"cpu": q("20")})]], "cohort"),
        flavors=FLAVORS,
    )
    state.availability.mark_absent(k.COHORTS.name, "not watched")
    view = state.snapshot()
    assignment = view.assign(CQ, [demand("a", 1, pod({"cpu": "6"})), demand("b", 1, pod({"cpu": "19"}))])
    assert assignment.status == "unknown" and assignment.first_unassigned() is None
    assert [dict(p.flavors) for p in assignment.podsets] == [{"cpu": "one"}, {"cpu": "default"}]
    assert assignment.doubt == (
        "podSet 'a': flavor 'one' would need 6 cpu, more than ClusterQueue 'test-clusterqueue' certainly holds "
        "(4, at most 8: nominal 4 + borrowing limit 4, cohort cohort unknown) — decided by Cohorts: not watched"
    )
    # within what is certain (the nominal), it fits for certain: nothing to skip
    assert view.assign(CQ, [demand("a", 1, pod({"cpu": "4"})), demand("b", 1, pod({"cpu": "19"}))]).fits
    # beyond every upper bound, it never fits: an unknown elsewhere does not save it
    assert view.assign(CQ, [demand("a", 1, pod({"cpu": "21"}))]).status == "unknown"  # default: no upper bound
    capped = store(cluster_queue(CQ, [[("one", {"cpu": q("4", "4")})]], "cohort"), flavors=FLAVORS)
    capped.availability.mark_absent(k.COHORTS.name, "not watched")
    assert capped.snapshot().assign(CQ, [demand("a", 1, pod({"cpu": "9"}))]).status == "nofit"


def test_one_resource_bounded_below_the_request_rules_the_flavor_out() -> None:
    """Per resource, per flavor: memory is capped (borrowingLimit 0) below the request, so flavor one is
    out, however much cpu the unknown cohort could lend; the podSet's answer comes from flavor two."""
    queue = cluster_queue(
        CQ,
        [[("one", {"cpu": q("4"), "memory": q("1Gi", "0")}), ("two", {"cpu": q("1", "0"), "memory": q("8Gi", "0")})]],
        "cohort",
    )
    state = store(queue, flavors=FLAVORS)
    state.availability.mark_absent(k.COHORTS.name, "not watched")
    job = [demand("main", 1, pod({"cpu": "2", "memory": "2Gi"}))]
    assignment = state.snapshot().assign(CQ, job)
    assert assignment.status == "nofit"
    assert [(e.flavor, e.resource) for e in assignment.podsets[0].exceeded] == [("one", "memory"), ("two", "cpu")]


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
    view = snapshot(
        cluster_queue(CQ, [[("one", {"cpu": q("1")}), ("default", {"cpu": q("10", "90")})]], "c"),
        flavors=FLAVORS,
    )
    info = view.cluster_queue(CQ)
    assert info is not None
    [podset] = jobset(("server", 1, None, pod({"cpu": "4"}))).podsets
    assert beyond_nominal(view, info, podset, 2) is None  # 8 of 10
    beyond = beyond_nominal(view, info, podset, 3)
    assert beyond == BeyondNominal("default", NominalFit(2, (("cpu", Decimal(12), Decimal(10)),)))
    assert beyond_nominal(view, info, podset, 0) is None
    [empty] = jobset(("server", 1, None, {"containers": [{"name": "c"}]})).podsets
    assert beyond_nominal(view, info, empty, 3) is None  # requests nothing: takes no quota


# ---------------------------------------------------------------- several podSets: any choice Kueue could make

#: (Kueue file and case, queue, podSets, a choice Kueue makes in that case: resource -> flavor per podSet)
#: Each Kueue case sets usage that sends a podSet past the first flavor (``whenCanPreempt: TryNextFlavor``,
#: the default, or a flavor full of an earlier podSet); with usage zero the gate must find that choice too.
TOGETHER: list[tuple[str, dict[str, Any], list[PodSetDemand], list[dict[str, str]]]] = [
    (
        # 3 cpu of 4 used on "one": the launcher needs preemption there; the workers then find "one" past its
        # maximum capacity with the launcher's 2 ("previously considered podsets requests (2) + current podset
        # request (10) > maximum capacity (4)") and take "tainted", which they tolerate.
        "flavorassigner_test.go TestAssignFlavors: each podset requires preemption on a different flavor",
        cluster_queue(CQ, [[("one", {"cpu": q("4")}), ("tainted", {"cpu": q("10")})]]),
        [demand("launcher", 1, pod({"cpu": "2"})), demand("workers", 10, pod({"cpu": "1"}, tolerations=[TOLERATION]))],
        [{"cpu": "one"}, {"cpu": "tainted"}],
    ),
    (
        # 2 cpu of 10 used on "one": the podSet would need preemption there and moves on to "two".
        "flavorassigner_test.go TestAssignFlavors: preempt try next flavor",
        cluster_queue(CQ, [[("one", {"pods": q("10"), "cpu": q("10")}), ("two", {"pods": q("10"), "cpu": q("10")})]]),
        [demand("main", 1, pod({"cpu": "9"}))],
        [{"cpu": "two", "pods": "two"}],
    ),
    (
        # a lower-priority blocker holds on-demand: test-wl (whenCanPreempt TryNextFlavor) is admitted on spot.
        "scheduler_test.go TestSchedule: admit to second flavor when first needs preemption; "
        "WhenCanPreempt: TryNextFlavor",
        cluster_queue(CQ, [[("on-demand", {"cpu": q("1")}), ("spot", {"cpu": q("1")})]]),
        [demand("main", 1, pod({"cpu": "1"}))],
        [{"cpu": "spot"}],
    ),
    (
        # The issue's case: another Workload holds 1 cpu of "one"; "a" would need preemption there and takes
        # "two", and "b", which selects type=one, fits "one" (1 + 1 <= 2). Greedy at usage zero ("a" -> one,
        # then "b" cannot fit) would refuse a job Kueue admits.
        "flavorassigner.go findFlavorForPodSets + shouldTryNextFlavor (the cases above, two podSets)",
        cluster_queue(CQ, [[("one", {"cpu": q("2")}), ("two", {"cpu": q("2")})]]),
        [demand("a", 1, pod({"cpu": "2"})), demand("b", 1, pod({"cpu": "1"}, nodeSelector={"type": "one"}))],
        [{"cpu": "two"}, {"cpu": "one"}],
    ),
]


@pytest.mark.parametrize(("name", "queue", "podsets", "kueue"), TOGETHER, ids=[case[0] for case in TOGETHER])
def test_some_choice_of_flavors_holds_what_kueue_admits(
    name: str, queue: dict[str, Any], podsets: list[PodSetDemand], kueue: list[dict[str, str]]
) -> None:
    """Kueue admits these with the flavors ``kueue``: each podSet could take its flavor, and some choice
    of eligible flavors holds them all at usage zero, so the gate never refuses them."""
    view = snapshot(queue, flavors={**FLAVORS, "on-demand": {}, "spot": {}})
    assignment = view.assign(CQ, podsets)
    assert assignment.status == "fit", name
    for podset, flavors in zip(assignment.podsets, kueue, strict=True):
        assert set(flavors.values()) <= set(podset.options)


def test_the_choice_found_is_kueues_own_at_zero_usage_when_that_one_fits() -> None:
    """Depth first in Kueue's order: the first choice found is the greedy one when it fits (TestAssignFlavors
    "multiple specs, fit different flavors"), else one that Kueue can reach through usage."""
    view = snapshot(cluster_queue(CQ, [[("one", {"cpu": q("2")}), ("two", {"cpu": q("2")})]]), flavors=FLAVORS)
    both = [demand("a", 1, pod({"cpu": "1"})), demand("b", 1, pod({"cpu": "1"}))]
    assert [dict(p.flavors) for p in view.assign(CQ, both).podsets] == [{"cpu": "one"}, {"cpu": "one"}]
    _, _, issue, _ = TOGETHER[3]
    assert [dict(p.flavors) for p in view.assign(CQ, issue).podsets] == [{"cpu": "two"}, {"cpu": "one"}]


def test_no_choice_holds_the_podsets_together() -> None:
    """Each podSet fits flavor one on its own, but both must take it (type=one) and 2 + 1 > 2: Kueue's
    "previously considered podsets requests (2) + current podset request (1) > maximum capacity (2)"."""
    view = snapshot(cluster_queue(CQ, [[("one", {"cpu": q("2")}), ("two", {"cpu": q("2")})]]), flavors=FLAVORS)
    one = {"type": "one"}
    job = [demand("a", 1, pod({"cpu": "2"}, nodeSelector=one)), demand("b", 1, pod({"cpu": "1"}, nodeSelector=one))]
    assignment = view.assign(CQ, job)
    assert assignment.status == "nofit" and assignment.first_unassigned() is None
    assert [p.options for p in assignment.podsets] == [("one",), ("one",)]
    assert assignment.contended == (
        Exceeded("one", "cpu", Decimal(3), Decimal(2), "nominal 2, no cohort to borrow from"),
    )


def test_identical_podsets_over_identical_flavors_are_summed_not_searched() -> None:
    """12 podSets of 1 cpu, 4 flavors of 2: 12 > 8 decides at once, however many choices there are."""
    flavors = {f"f{i}": {} for i in range(4)}
    view = snapshot(cluster_queue(CQ, [[(name, {"cpu": q("2")}) for name in flavors]]), flavors=flavors)
    assert view.assign(CQ, [demand(f"p{i}", 1, pod({"cpu": "1"})) for i in range(12)]).status == "nofit"
    assert view.assign(CQ, [demand(f"p{i}", 1, pod({"cpu": "1"})) for i in range(8)]).status == "fit"


def test_past_the_search_limit_the_answer_is_unknown_never_a_guess() -> None:
    """15 podSets of 2 cpu over 10 flavors of 3: 30 <= 30 passes the sum, yet each flavor holds one podSet
    and no choice fits; finding that out takes more than the search's limit of options: unknown."""
    flavors = {f"f{i}": {} for i in range(10)}
    view = snapshot(cluster_queue(CQ, [[(name, {"cpu": q("3")}) for name in flavors]]), flavors=flavors)
    assignment = view.assign(CQ, [demand(f"p{i}", 1, pod({"cpu": "2"})) for i in range(15)])
    assert assignment.status == "unknown"
    assert "more choices of flavors than the 4096 the gate tries" in assignment.doubt
    assert view.assign(CQ, [demand(f"p{i}", 1, pod({"cpu": "2"})) for i in range(10)]).status == "fit"


# ---------------------------------------------------------------- topology-aware scheduling splits the flavors

TAS_FLAVORS: dict[str, dict[str, Any]] = {
    "flavor-a": {"nodeLabels": {"type": "a"}},
    "flavor-b": {"nodeTaints": [{"key": "key", "value": "val", "effect": "NoSchedule"}]},
    "flavor-tas": {"topologyName": "topology-tas"},
}


def test_a_podset_asking_for_a_topology_gets_no_flavor_without_one() -> None:
    """Kueue TestIsNoFitDueToCapacityAndLimits "TAS not supported": a podSet with a required topology
    request on flavors without ``topologyName`` is NoMatchingFlavor ("Flavor … does not support
    TopologyAwareScheduling", checkPodSetAndFlavorMatchForTAS)."""
    state = store(cluster_queue(CQ, [[("flavor-a", {"cpu": q("2", "4")}), ("flavor-b", {"cpu": q("2", "4")})]]))
    for name, spec in TAS_FLAVORS.items():
        state.apply(k.RESOURCE_FLAVORS, "ADDED", {"metadata": {"name": name}, "spec": spec})
    topology = podset_demand("main", pod({"cpu": "1"}), 1, {"cpu": Decimal(1)}, tas=True)
    assignment = state.snapshot().assign(CQ, [topology])
    assert assignment.status == "nofit"
    assert [(a.flavor, a.kind) for a in assignment.podsets[0].passed_over] == [("flavor-a", "tas"), ("flavor-b", "tas")]


def test_a_podset_asking_for_no_topology_passes_over_the_topology_flavor() -> None:
    """Kueue TestIsNoFitDueToCapacityAndLimits "TAS only flavor mismatch": on a queue of flavor-a, flavor-b
    and flavor-tas, a podSet without a topology request and with nodeSelector type=wrong matches none:
    flavor-a's labels, flavor-b's taint, flavor-tas "supports only TopologyAwareScheduling"."""
    queue = cluster_queue(CQ, [[(name, {"cpu": q("2", "2")}) for name in TAS_FLAVORS]])
    view = snapshot(queue, flavors=TAS_FLAVORS)
    assignment = view.assign(CQ, [demand("main", 1, pod({"cpu": "1"}, nodeSelector={"type": "wrong"}))])
    assert assignment.status == "nofit"
    kinds = [(a.flavor, a.kind) for a in assignment.podsets[0].passed_over]
    assert kinds == [("flavor-a", "mismatch"), ("flavor-b", "taint"), ("flavor-tas", "tas")]


def test_tpu_and_cpu_podsets_route_to_their_flavors_by_topology_request() -> None:
    """RFC-0033's routing table: one resource group, the TAS flavor tpu7x first and cpu-standard (no
    topologyName, no labels, TPU quota 0) last. A TPU podSet asks for a topology, so it is never given
    cpu-standard ("does not support TopologyAwareScheduling"), however large the unknown cohort; a CPU
    podSet asks for none and passes over tpu7x ("supports only TopologyAwareScheduling")."""
    tpu = "google.com/tpu"
    queue = cluster_queue(
        CQ,
        [[("tpu7x", {tpu: q("256", "128"), "cpu": q("100000")}), ("cpu-standard", {tpu: q("0"), "cpu": q("2000")})]],
        "tpu-pool",
    )
    state = store(queue, flavors={"tpu7x": {"topologyName": "tpu7x-topology"}, "cpu-standard": {}})
    state.availability.mark_absent(k.COHORTS.name, "not watched")
    view = state.snapshot()
    worker = podset_demand("workers", pod({tpu: "4"}), 160, {tpu: Decimal(4), "cpu": Decimal(1)}, tas=True)
    head = podset_demand("head", pod({"cpu": "4"}), 1, {"cpu": Decimal(4)})
    assert view.assign(CQ, [head]).podsets[0].flavors == {"cpu": "cpu-standard"}
    small = podset_demand("workers", pod({tpu: "4"}), 16, {tpu: Decimal(4), "cpu": Decimal(1)}, tas=True)
    assert dict(view.assign(CQ, [small, head]).podsets[0].flavors) == {tpu: "tpu7x", "cpu": "tpu7x"}
    big = view.assign(CQ, [worker])  # 640 chips > 256 + 128: never, whatever the cohort holds
    assert big.status == "nofit"
    assert [(a.flavor, a.kind) for a in big.podsets[0].passed_over] == [("cpu-standard", "tas")]
    assert [(e.flavor, e.needed, e.most) for e in big.podsets[0].exceeded] == [("tpu7x", 640, 384)]
