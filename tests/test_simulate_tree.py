"""Quota and usage through the cohort tree: Kueue's dominant resource share table, the usage-aware
``available`` against the project's zero-usage potential, and add/remove symmetry.

``TestDominantResourceShare`` is restated from kubernetes-sigs/kueue
``pkg/cache/scheduler/fair_sharing_test.go`` (the value is Kueue's rounded weighted share:
the ceiling, or the largest int when a zero-weight node borrows). Its exabyte-scale case is
left out: Kueue saturates the quota to int64 there, our decimals do not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Set
from decimal import Decimal

import pytest

from tests.simulate_builders import admitted, cluster_queue, cohort, state
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.cohort import CohortInfo, CohortMembers
from webhook.kueue.fair_sharing import DRS, dominant_resource_share
from webhook.kueue.potential import ResourceNodes
from webhook.kueue.resource_node import add_usage, available, potential_available, remove_usage
from webhook.simulate.state import tree_of as build_tree

GPU = "example.com/gpu"


def _rounded(drs: DRS) -> int:
    if drs.zero_weight_borrows:
        return 2**63 - 1
    return math.ceil(drs.weighted)


def _pair(
    usage: Mapping[str, str], cq: Mapping[str, str], lending: Mapping[str, str], weight: str = "1", lw: str = "1"
):  # type: ignore[no-untyped-def]
    return (
        [
            cluster_queue("cq", {"default": dict(cq)}, cohort="test-cohort", weight=weight),
            cluster_queue("lending-cq", {"default": dict(lending)}, cohort="test-cohort", weight=lw),
        ],
        [],
        usage,
    )


DRS_CASES = {
    "usage above nominal": (
        _pair({"cpu": "3", GPU: "7"}, {"cpu": "2", GPU: "5"}, {"cpu": "8", GPU: "5"}),
        {"cq": (GPU, 200, True), "lending-cq": ("", 0, False), "test-cohort": ("", 0, False)},
    ),
    "usage slightly above nominal in a cohort with large quotas": (
        _pair({GPU: "501"}, {GPU: "500"}, {GPU: "1000"}, "1", "300"),
        {"cq": (GPU, 1, True), "lending-cq": ("", 0, False), "test-cohort": ("", 0, False)},
    ),
    "usage way above nominal in a cohort with large quotas and weights": (
        _pair({GPU: "800"}, {GPU: "500"}, {GPU: "1000"}, "300", "300"),
        {"cq": (GPU, 1, True), "lending-cq": ("", 0, False), "test-cohort": ("", 0, False)},
    ),
    "one resource above nominal": (
        _pair({"cpu": "3", GPU: "3"}, {"cpu": "2", GPU: "5"}, {"cpu": "8", GPU: "5"}),
        {"cq": ("cpu", 100, True), "lending-cq": ("", 0, False), "test-cohort": ("", 0, False)},
    ),
    "above nominal with zero weight": (
        _pair({GPU: "7"}, {GPU: "5"}, {GPU: "10"}, "0", "1"),
        {"cq": (GPU, 2**63 - 1, True), "lending-cq": ("", 0, False), "test-cohort": ("", 0, False)},
    ),
    "cohort has resource share": (
        (
            [cluster_queue("cq", {"default": {GPU: "5"}}, cohort="child-cohort")],
            [cohort("child-cohort", parent="root", weight="2"), cohort("root", {"default": {GPU: "45"}})],
            {GPU: "10"},
        ),
        {"cq": (GPU, 100, True), "child-cohort": (GPU, 50, True), "root": ("", 0, False)},
    ),
    "resource share defined for resources only available at the root cohort": (
        (
            [cluster_queue("cq", {"default": {GPU: "0"}}, cohort="child-cohort")],
            [cohort("child-cohort", parent="root", weight="2"), cohort("root", {"default": {GPU: "50"}})],
            {GPU: "10"},
        ),
        {"cq": (GPU, 200, True), "child-cohort": (GPU, 100, True), "root": ("", 0, False)},
    ),
    "resource share affected by borrowing limit": (
        (
            [cluster_queue("cq", {"default": {GPU: "0"}}, cohort="child-cohort")],
            [
                cohort("child-cohort", {"default": {GPU: ("0", "10")}}, parent="root"),
                cohort("root", {"default": {GPU: "50"}}),
            ],
            {GPU: "10"},
        ),
        {"cq": (GPU, 1000, True), "child-cohort": (GPU, 200, True), "root": ("", 0, False)},
    ),
}


@pytest.mark.parametrize("case", sorted(DRS_CASES))
def test_dominant_resource_share_as_kueue_fair_sharing_test(case: str) -> None:
    (queues, cohorts, usage), want = DRS_CASES[case]
    tree = build_tree(state(queues, cohorts=cohorts, workloads=[admitted("w", "cq", usage)]))
    nodes = {**tree.queues, **tree.cohorts}
    got = {}
    for name in want:
        drs = dominant_resource_share(nodes[name])
        got[name] = (drs.dominant, _rounded(drs), drs.borrowing)
    assert got == want


class _Tree:
    """The project's zero-usage cohort tree over the same objects (``webhook.quota.resource_node``)."""

    def __init__(self, queues: Mapping[str, ClusterQueueInfo], cohorts: Mapping[str, CohortInfo]) -> None:
        self.cluster_queues = queues
        self.cohorts = cohorts
        children: dict[str, set[str]] = {}
        for name, info in cohorts.items():
            if info.parent:
                children.setdefault(info.parent, set()).add(name)
        self.children: Mapping[str, Set[str]] = children

    def cohorts_unknown(self) -> str | None:
        return None


def test_potential_available_agrees_with_the_quota_model_and_available_falls_with_usage() -> None:
    """With nothing admitted, ``available`` is the project's potential available (a lending and
    a borrowing limit, two cohort levels); usage lowers it and removing it restores it exactly."""
    queues = [
        cluster_queue("a", {"f": {"cpu": ("10", "4", "3")}}, cohort="left"),
        cluster_queue("b", {"f": {"cpu": "6"}}, cohort="left"),
        cluster_queue("c", {"f": {"cpu": ("5", None, "0")}}, cohort="right"),
        cluster_queue("d", {"f": {"cpu": "8"}}, cohort="root"),
    ]
    cohorts = [
        cohort("left", {"f": {"cpu": ("2", "3", "1")}}, parent="root"),
        cohort("right", parent="root"),
        cohort("root", {"f": {"cpu": "1"}}),
    ]
    st = state(queues, cohorts=cohorts)
    tree = build_tree(st)
    members = CohortMembers()
    for queue in st.cluster_queues.values():
        members.add(queue)
    memo: dict[object, object] = {}
    model = ResourceNodes(_Tree(st.cluster_queues, st.cohorts), members, memo.get, memo.__setitem__)
    fr = ("f", "cpu")
    for name, node in tree.queues.items():
        bound = model.potential_available(name, "f", "cpu")
        assert (available(node, fr), potential_available(node, fr)) == (bound.value, bound.value), name
    a = tree.queues["a"]
    before = {n: dict(x.usage) for n, x in (*tree.queues.items(), *tree.cohorts.items())}
    add_usage(tree.queues["b"], fr, Decimal(12))
    assert (available(a, fr), potential_available(a, fr)) == (9, 14)
    remove_usage(tree.queues["b"], fr, Decimal(12))
    after = {n: {k: v for k, v in x.usage.items() if v} for n, x in (*tree.queues.items(), *tree.cohorts.items())}
    assert after == {n: {k: v for k, v in u.items() if v} for n, u in before.items()}


def test_cycles_are_found_and_cut() -> None:
    st = state(
        [cluster_queue("q", {"f": {"cpu": "1"}}, cohort="x")],
        cohorts=[cohort("x", parent="z"), cohort("z", parent="y"), cohort("y", parent="x"), cohort("w", parent="x")],
    )
    tree = build_tree(st)
    assert tree.cycles == [("x", "z", "y")]
    assert tree.queues["q"].cyclic and tree.cohorts["w"].cyclic
    assert all(node.parent is None for name, node in tree.cohorts.items() if name in "xyz")
