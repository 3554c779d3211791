"""Differential tests: Kueue's own test tables, restated, against our quota model.

Each case names the kubernetes-sigs/kueue test it comes from (inputs and expected outcome
restated in our words; no code copied). Two tables:

- ``pkg/cache/scheduler/resource_test.go``, ``TestAvailable``: the ``wantPotentiallyAvailable``
  column (the most a ClusterQueue could ever hold), all 8 cases. Their usage inputs only
  affect Kueue's ``available`` column, which we do not model.
- ``pkg/scheduler/flavorassigner/flavorassigner_test.go``, ``TestAssignFlavors``: 18 cases
  on flavor order, eligibility (labels, affinity, taints), multiple podSets, borrowing,
  uncovered and zero requests, and the ``pods`` resource.

Where we differ on purpose, the case says so: Kueue judges "does it fit now" (usage
counts, the answer may be Preempt), we judge "could it ever fit" (usage zero), so a case
Kueue answers Preempt (waiting or preempting would let it in) is a fit for us.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from webhook.cluster import kinds as k
from webhook.cluster.store import ClusterStore
from webhook.kube.quantity import quantity_or_none
from webhook.policy.config import Policy
from webhook.quota.podsets import PodSetDemand, podset_demand
from webhook.quota.resource_node import NominalFit, nominal_fit

KQ = "kueue.x-k8s.io/v1beta2"
#: (nominal, borrowingLimit, lendingLimit), as Kueue's test helper ``Resource(name, nominal, borrowing, lending)``
Q = tuple[str, str | None, str | None]


def cluster_queue(name: str, groups: list[list[tuple[str, dict[str, Q]]]], cohort: str | None = None) -> dict[str, Any]:
    resource_groups = []
    for group in groups:
        covered: list[str] = []
        flavors = []
        for flavor, resources in group:
            entries = []
            for resource, (nominal, borrowing, lending) in resources.items():
                entry: dict[str, Any] = {"name": resource, "nominalQuota": nominal}
                if borrowing is not None:
                    entry["borrowingLimit"] = borrowing
                if lending is not None:
                    entry["lendingLimit"] = lending
                entries.append(entry)
                if resource not in covered:
                    covered.append(resource)
            flavors.append({"name": flavor, "resources": entries})
        resource_groups.append({"coveredResources": covered, "flavors": flavors})
    spec: dict[str, Any] = {"resourceGroups": resource_groups, "namespaceSelector": {}}
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": KQ, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def cohort(name: str, parent: str | None = None, quotas: dict[str, dict[str, Q]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if parent:
        spec["parentName"] = parent
    if quotas:
        spec["resourceGroups"] = cluster_queue("", [list(quotas.items())])["spec"]["resourceGroups"]
    return {"apiVersion": KQ, "kind": "Cohort", "metadata": {"name": name}, "spec": spec}


def store(*objects: dict[str, Any], flavors: dict[str, dict[str, Any]] | None = None) -> ClusterStore:
    state = ClusterStore(Policy())
    for obj in objects:
        state.apply(k.BY_KIND[obj["kind"]], "ADDED", obj)
    for name, spec in (flavors or {}).items():
        state.apply(k.RESOURCE_FLAVORS, "ADDED", {"metadata": {"name": name}, "spec": spec})
    for kind in k.KINDS:
        state.availability.mark_synced(kind.name)
    return state


def q(nominal: str, borrowing: str | None = None, lending: str | None = None) -> Q:
    return (nominal, borrowing, lending)


# ---------------------------------------------------------------- resource_test.go, TestAvailable

POTENTIAL = [
    (
        "base cqs",
        [
            cluster_queue("cq1", [[("red", {"cpu": q("0")})]]),
            cluster_queue("cq2", [[("red", {"cpu": q("5")}), ("blue", {"cpu": q("10")})]]),
        ],
        {("cq1", "red"): 0, ("cq2", "red"): 5, ("cq2", "blue"): 10},
    ),
    (
        "cqs with cohort",
        [
            cluster_queue("cq1", [[("red", {"cpu": q("10")})]], "cohort"),
            cluster_queue("cq2", [[("red", {"cpu": q("10", None, "9")})]], "cohort"),
            cohort("cohort", quotas={"red": {"cpu": q("10")}}),
        ],
        {("cq1", "red"): 29, ("cq2", "red"): 30},
    ),
    (
        "cq borrows from cohort",
        [
            cluster_queue("cq1", [[("red", {"cpu": q("10")})]], "cohort"),
            cohort("cohort", quotas={"red": {"cpu": q("10")}}),
        ],
        {("cq1", "red"): 20},
    ),
    (
        "cq oversubscription spills into cohort",
        [
            cluster_queue("cq1", [[("red", {"cpu": q("10")})]], "cohort"),
            cluster_queue("cq2", [[("red", {"cpu": q("10", "0", "0")})]], "cohort"),
            cohort("cohort", quotas={"red": {"cpu": q("10")}}),
        ],
        {("cq1", "red"): 20, ("cq2", "red"): 10},
    ),
    (
        "lending and borrowing limits respected",
        [
            cluster_queue("cq1", [[("red", {"cpu": q("10")})]], "cohort"),
            cluster_queue("cq2", [[("red", {"cpu": q("10", "2")})]], "cohort"),
            cluster_queue("cq3", [[("red", {"cpu": q("10", None, "5")})]], "cohort"),
            cohort("cohort", quotas={"red": {"cpu": q("10")}}),
        ],
        {("cq1", "red"): 35, ("cq2", "red"): 12, ("cq3", "red"): 40},
    ),
    (
        "hierarchical cohort",
        [
            cluster_queue("cq1", [[("red", {"cpu": q("10")})]], "left"),
            cluster_queue("cq2", [[("red", {"cpu": q("10", None, "0")})]], "right"),
            cohort("root"),
            cohort("left", "root", {"red": {"cpu": q("10")}}),
            cohort("right", "root", {"red": {"cpu": q("10")}}),
        ],
        {("cq1", "red"): 30, ("cq2", "red"): 40},
    ),
    (
        "hierarchical cohort respects borrowing limit",
        [
            cluster_queue("left-cq1", [[("red", {"cpu": q("10")})]], "left"),
            cluster_queue("left-cq2", [[("red", {"cpu": q("10", "5")})]], "left"),
            cluster_queue("right-cq", [[("red", {"cpu": q("10")})]], "right"),
            cohort("root"),
            cohort("left", "root", {"red": {"cpu": q("10", "5")}}),
            cohort("right", "root", {"red": {"cpu": q("10")}}),
        ],
        {("left-cq1", "red"): 35, ("left-cq2", "red"): 15, ("right-cq", "red"): 50},
    ),
    (
        "hierarchical cohort respects lending limit",
        [
            cluster_queue("left-cq1", [[("red", {"cpu": q("10", None, "5")})]], "left"),
            cluster_queue("left-cq2", [[("red", {"cpu": q("10")})]], "left"),
            cluster_queue("right-cq", [[("red", {"cpu": q("0")})]], "right"),
            cluster_queue("root-cq", [[("red", {"cpu": q("0")})]], "root"),
            cohort("root"),
            cohort("left", "root", {"red": {"cpu": q("0", None, "5")}}),
            cohort("right", "root", {"red": {"cpu": q("0")}}),
        ],
        {("left-cq1", "red"): 20, ("left-cq2", "red"): 15, ("right-cq", "red"): 5, ("root-cq", "red"): 5},
    ),
]


@pytest.mark.parametrize(("name", "objects", "expected"), POTENTIAL, ids=[case[0] for case in POTENTIAL])
def test_potential_quota_as_kueue_computes_it(
    name: str, objects: list[dict[str, Any]], expected: dict[tuple[str, str], int]
) -> None:
    """Kueue: pkg/cache/scheduler/resource_test.go, TestAvailable, case ``name`` (wantPotentiallyAvailable)."""
    state = store(*objects)
    got = {key: state.potential(key[0], key[1], "cpu").value for key in expected}
    assert got == {key: Decimal(value) for key, value in expected.items()}


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


def pod(requests: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"containers": [{"name": "c", "resources": {"requests": requests}}], **spec}


def affinity(*terms: list[tuple[str, str, list[str]]]) -> dict[str, Any]:
    node_terms = [
        {"matchExpressions": [{"key": key, "operator": op, "values": values} for key, op, values in term]}
        for term in terms
    ]
    required = {"nodeSelectorTerms": node_terms}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def demand(name: str, count: int, pod_spec: dict[str, Any]) -> PodSetDemand:
    requests = {}
    for resource, raw in pod_spec["containers"][0]["resources"]["requests"].items():
        value = quantity_or_none(raw)
        assert value is not None
        requests[resource] = value  # zero requests kept: Kueue sees them too
    return podset_demand(name, pod_spec, count, requests)


CQ = "test-clusterqueue"
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


def test_a_cohort_cycle_is_unknown() -> None:
    """Kueue refuses a cohort tree with a cycle (ErrCohortHasCycle); we say nothing about it."""
    state = store(
        cluster_queue(CQ, [[("default", {"cpu": q("1")})]], "a"),
        cohort("a", "b"),
        cohort("b", "a"),
        flavors=FLAVORS,
    )
    assert state.potential(CQ, "default", "cpu").value is None
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


def test_nominal_fit_counts_pods_within_nominal_and_skips_zero_requests() -> None:
    """The question ``replicas-beyond-nominal`` asks: pods of one shape in nominal, no borrowing.
    A zero request (cpu: 0) used to divide by zero in the rule; it takes no quota."""
    state = store(cluster_queue(CQ, [[("default", {"cpu": q("10", borrowing="90"), "memory": q("64Gi")})]]))
    info = state.cluster_queue(CQ)
    assert info is not None
    gi = Decimal(2**30)
    per_pod = {"cpu": Decimal(4), "memory": Decimal(8) * gi}
    assert nominal_fit(info, "default", per_pod, 2) == NominalFit(within=2, over=())
    assert nominal_fit(info, "default", per_pod, 3) == NominalFit(within=2, over=(("cpu", Decimal(12), Decimal(10)),))
    zero_cpu = {"cpu": Decimal(0), "memory": Decimal(8) * gi}
    assert nominal_fit(info, "default", zero_cpu, 9) == NominalFit(
        within=8, over=(("memory", Decimal(72) * gi, Decimal(64) * gi),)
    )
    # a resource the flavor does not cover is resource-not-covered's to report
    assert nominal_fit(info, "default", {"nvidia.com/gpu": Decimal(1)}, 5) == NominalFit(within=5, over=())
