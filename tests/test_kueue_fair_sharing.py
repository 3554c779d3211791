"""The dominant resource share (``webhook.kueue.fair_sharing``) against Kueue's own table.

``TestDominantResourceShare`` is restated from kubernetes-sigs/kueue
``pkg/cache/scheduler/fair_sharing_test.go`` (the value is Kueue's rounded weighted share:
the ceiling, or the largest int when a zero-weight node borrows). Its exabyte-scale case is
left out: Kueue saturates the quota to int64 there, our decimals do not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest

from tests.simulate_builders import cluster_queue, cohort, state
from webhook.kube.quantity import parse_quantity
from webhook.kueue.fair_sharing import DRS, dominant_resource_share
from webhook.kueue.hierarchy import build_tree

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
    st = state(queues, cohorts=cohorts)
    tree = build_tree(st.cluster_queues, st.cohorts)
    tree.add("cq", {("default", resource): parse_quantity(amount) for resource, amount in usage.items()})
    nodes = {**tree.queues, **tree.cohorts}
    got = {}
    for name in want:
        drs = dominant_resource_share(nodes[name])
        got[name] = (drs.dominant, _rounded(drs), drs.borrowing)
    assert got == want
