"""Quota and usage of the one cohort tree (``webhook.kueue.resource_node``), against Kueue's own table.

``AVAILABLE`` is kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_test.go``,
``TestAvailable``, all 8 cases, inputs and expected outcome restated in our words (no code
copied): with nothing admitted ``available`` is ``potential_available``; with each queue's
usage added, ``available`` falls as Kueue's does (its ClusterQueue-level ``Available``,
which never reads below zero) while ``potential_available`` stays; removing the usage
brings every node back exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest

from tests.simulate_builders import cluster_queue, cohort, state
from webhook.kueue.hierarchy import Tree, build_tree
from webhook.kueue.resource_node import (
    add_usage,
    available,
    fits_in_quota,
    local_quota,
    lowest_fitting_height,
    potential_available,
    remove_usage,
)
from webhook.kueue.resources import FlavorResource, Quota

RED, BLUE = ("red", "cpu"), ("blue", "cpu")

#: name -> (ClusterQueues, Cohorts, usage per queue, available after the usage, potential available)
AVAILABLE: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], dict[str, Any], dict[str, Any]]]
AVAILABLE = {
    "base cqs": (
        [
            cluster_queue("cq1", {"red": {"cpu": "0"}}),
            cluster_queue("cq2", {"red": {"cpu": "5"}, "blue": {"cpu": "10"}}),
        ],
        [],
        {"cq1": {RED: "1"}, "cq2": {RED: "2.5", BLUE: "1"}},
        {"cq1": {RED: 0}, "cq2": {RED: 2.5, BLUE: 9}},
        {"cq1": {RED: 0}, "cq2": {RED: 5, BLUE: 10}},
    ),
    "cqs with cohort": (
        [
            cluster_queue("cq1", {"red": {"cpu": "10"}}, cohort="cohort"),
            cluster_queue("cq2", {"red": {"cpu": ("10", None, "9")}}, cohort="cohort"),
        ],
        [cohort("cohort", {"red": {"cpu": "10"}})],
        {"cq1": {RED: "1"}, "cq2": {RED: "0.5"}},
        {"cq1": {RED: 28}, "cq2": {RED: 28.5}},
        {"cq1": {RED: 29}, "cq2": {RED: 30}},
    ),
    "cq borrows from cohort": (
        [cluster_queue("cq1", {"red": {"cpu": "10"}}, cohort="cohort")],
        [cohort("cohort", {"red": {"cpu": "10"}})],
        {"cq1": {RED: "11"}},
        {"cq1": {RED: 9}},
        {"cq1": {RED: 20}},
    ),
    "cq oversubscription spills into cohort": (
        [
            cluster_queue("cq1", {"red": {"cpu": "10"}}, cohort="cohort"),
            cluster_queue("cq2", {"red": {"cpu": ("10", "0", "0")}}, cohort="cohort"),
        ],
        [cohort("cohort", {"red": {"cpu": "10"}})],
        {"cq1": {RED: "31"}},
        # cq2 neither borrows nor lends, yet cq1's overuse leaves it nothing: no over-admission in the tree
        {"cq1": {RED: 0}, "cq2": {RED: 0}},
        {"cq1": {RED: 20}, "cq2": {RED: 10}},
    ),
    "lending and borrowing limits respected": (
        [
            cluster_queue("cq1", {"red": {"cpu": "10"}}, cohort="cohort"),
            cluster_queue("cq2", {"red": {"cpu": ("10", "2")}}, cohort="cohort"),
            cluster_queue("cq3", {"red": {"cpu": ("10", None, "5")}}, cohort="cohort"),
        ],
        [cohort("cohort", {"red": {"cpu": "10"}})],
        {"cq1": {RED: "20"}, "cq2": {RED: "10"}, "cq3": {RED: "6"}},
        {"cq1": {RED: 4}, "cq2": {RED: 2}, "cq3": {RED: 4}},
        {"cq1": {RED: 35}, "cq2": {RED: 12}, "cq3": {RED: 40}},
    ),
    "hierarchical cohort": (
        [
            cluster_queue("cq1", {"red": {"cpu": "10"}}, cohort="left"),
            cluster_queue("cq2", {"red": {"cpu": ("10", None, "0")}}, cohort="right"),
        ],
        [
            cohort("root"),
            cohort("left", {"red": {"cpu": "10"}}, parent="root"),
            cohort("right", {"red": {"cpu": "10"}}, parent="root"),
        ],
        {"cq1": {RED: "10"}, "cq2": {RED: "5"}},
        {"cq1": {RED: 20}, "cq2": {RED: 25}},
        {"cq1": {RED: 30}, "cq2": {RED: 40}},
    ),
    "hierarchical cohort respects borrowing limit": (
        [
            cluster_queue("left-cq1", {"red": {"cpu": "10"}}, cohort="left"),
            cluster_queue("left-cq2", {"red": {"cpu": ("10", "5")}}, cohort="left"),
            cluster_queue("right-cq", {"red": {"cpu": "10"}}, cohort="right"),
        ],
        [
            cohort("root"),
            cohort("left", {"red": {"cpu": ("10", "5")}}, parent="root"),
            cohort("right", {"red": {"cpu": "10"}}, parent="root"),
        ],
        {},
        {"left-cq1": {RED: 35}, "left-cq2": {RED: 15}, "right-cq": {RED: 50}},
        {"left-cq1": {RED: 35}, "left-cq2": {RED: 15}, "right-cq": {RED: 50}},
    ),
    "hierarchical cohort respects lending limit": (
        [
            cluster_queue("left-cq1", {"red": {"cpu": ("10", None, "5")}}, cohort="left"),
            cluster_queue("left-cq2", {"red": {"cpu": "10"}}, cohort="left"),
            cluster_queue("right-cq", {"red": {"cpu": "0"}}, cohort="right"),
            cluster_queue("root-cq", {"red": {"cpu": "0"}}, cohort="root"),
        ],
        [
            cohort("root"),
            cohort("left", {"red": {"cpu": ("0", None, "5")}}, parent="root"),
            cohort("right", {"red": {"cpu": "0"}}, parent="root"),
        ],
        {},
        {"left-cq1": {RED: 20}, "left-cq2": {RED: 15}, "right-cq": {RED: 5}, "root-cq": {RED: 5}},
        {"left-cq1": {RED: 20}, "left-cq2": {RED: 15}, "right-cq": {RED: 5}, "root-cq": {RED: 5}},
    ),
}


def _tree(queues: list[dict[str, Any]], cohorts: list[dict[str, Any]]) -> Tree:
    st = state(queues, cohorts=cohorts)
    return build_tree(st.cluster_queues, st.cohorts)


def _answers(tree: Tree) -> tuple[dict[str, dict[FlavorResource, Decimal]], dict[str, dict[FlavorResource, Decimal]]]:
    """Per queue and (flavor, resource) of its quota: Kueue's ``Available`` (never below zero) and potential."""
    got = {name: {fr: max(Decimal(0), available(node, fr)) for fr in node.quotas} for name, node in tree.queues.items()}
    potential = {name: {fr: potential_available(node, fr) for fr in node.quotas} for name, node in tree.queues.items()}
    return got, potential


def _decimals(table: Mapping[str, Mapping[FlavorResource, object]]) -> dict[str, dict[FlavorResource, Decimal]]:
    return {name: {fr: Decimal(str(value)) for fr, value in amounts.items()} for name, amounts in table.items()}


def _usages(tree: Tree) -> dict[str, dict[FlavorResource, Decimal]]:
    nodes = {**tree.queues, **tree.cohorts}
    return {name: {fr: v for fr, v in node.usage.items() if v} for name, node in nodes.items()}


@pytest.mark.parametrize("case", list(AVAILABLE))
def test_available_and_potential_available_as_kueue_computes_them(case: str) -> None:
    """Kueue: pkg/cache/scheduler/resource_test.go, TestAvailable, case ``case``."""
    queues, cohorts, usage, want_available, want_potential = AVAILABLE[case]
    tree = _tree(queues, cohorts)
    potential = _decimals(want_potential)
    assert _answers(tree) == (potential, potential)  # nothing admitted: available is the potential
    before = _usages(tree)
    for name, amounts in usage.items():
        for fr, value in amounts.items():
            add_usage(tree.queues[name], fr, Decimal(value))
    assert _answers(tree) == (_decimals(want_available), potential)
    for name, amounts in usage.items():
        for fr, value in amounts.items():
            remove_usage(tree.queues[name], fr, Decimal(value))
    assert (_answers(tree), _usages(tree)) == ((potential, potential), before)


def test_usage_moves_up_only_past_local_quota() -> None:
    """A lending and a borrowing limit on two cohort levels: what each node uses after one queue
    takes 12 (6 of its own nominal has no lending limit, so all of it goes to its cohort; the
    cohort keeps 10 locally and passes 2 to the root), and what the others can take then."""
    tree = _tree(
        [
            cluster_queue("a", {"f": {"cpu": ("10", "4", "3")}}, cohort="left"),
            cluster_queue("b", {"f": {"cpu": "6"}}, cohort="left"),
            cluster_queue("c", {"f": {"cpu": ("5", None, "0")}}, cohort="right"),
            cluster_queue("d", {"f": {"cpu": "8"}}, cohort="root"),
        ],
        [
            cohort("left", {"f": {"cpu": ("2", "3", "1")}}, parent="root"),
            cohort("right", parent="root"),
            cohort("root", {"f": {"cpu": "1"}}),
        ],
    )
    fr = ("f", "cpu")
    nodes = {**tree.queues, **tree.cohorts}
    assert {name: (node.subtree.get(fr, 0), node.local_quota(fr)) for name, node in nodes.items()} == {
        "a": (10, 7),
        "b": (6, 0),
        "c": (5, 5),
        "d": (8, 0),
        "left": (11, 10),
        "right": (0, 0),
        "root": (10, 0),
    }
    add_usage(tree.queues["b"], fr, Decimal(12))
    assert _usages(tree) == {"a": {}, "b": {fr: 12}, "c": {}, "d": {}, "left": {fr: 12}, "right": {}, "root": {fr: 2}}
    assert {name: (available(node, fr), potential_available(node, fr)) for name, node in nodes.items()} == {
        "a": (9, 14),
        "b": (2, 14),
        "c": (13, 15),
        "d": (8, 10),
        "left": (2, 14),
        "right": (8, 10),
        "root": (8, 10),
    }


def test_what_fits_and_where_quota_comes_from() -> None:
    """``QuantitiesFitInQuota`` and ``FindHeightOfLowestSubtreeThatFits`` on a two-level tree."""
    tree = _tree(
        [
            cluster_queue("a", {"f": {"cpu": "4"}}, cohort="left"),
            cluster_queue("b", {"f": {"cpu": "4"}}, cohort="right"),
        ],
        [cohort("left", {"f": {"cpu": "2"}}, parent="root"), cohort("right", parent="root"), cohort("root")],
    )
    fr = ("f", "cpu")
    a = tree.queues["a"]
    assert fits_in_quota(a, {fr: Decimal(5)}) == (False, {fr: Decimal(5)})
    assert fits_in_quota(tree.cohorts["left"], {fr: Decimal(5)}) == (True, {fr: Decimal(5)})
    assert [lowest_fitting_height(a, fr, Decimal(n)) for n in (3, 5, 9)] == [(0, True), (1, True), (2, False)]


def test_local_quota_is_what_a_node_keeps_from_its_parent() -> None:
    """Kueue's localQuota: subtree − lendingLimit, never below zero; nothing without a lendingLimit."""
    ten = Decimal(10)
    assert [local_quota(ten, Quota(ten, lending_limit=limit)) for limit in (None, Decimal(4), Decimal(12))] == [0, 6, 0]
