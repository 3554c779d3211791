"""The cohort tree (``webhook.kueue.hierarchy``): cycles found once and cut loose, and the same tree
whether it is built with a node per queue (the simulator's) or from the member queues' sums (the gates')."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tests.simulate_builders import cluster_queue, cohort, state
from webhook.kueue.cohort import CohortMembers
from webhook.kueue.hierarchy import Tree, build_tree
from webhook.kueue.resource_node import potential_available

QUEUES = [
    cluster_queue("a", {"f": {"cpu": ("10", "4", "3")}, "g": {"cpu": "2"}}, cohort="left"),
    cluster_queue("b", {"f": {"cpu": "6"}}, cohort="left"),
    cluster_queue("c", {"f": {"cpu": ("5", None, "0")}}, cohort="right"),
    cluster_queue("d", {"f": {"cpu": "8"}}, cohort="root"),
    cluster_queue("e", {"f": {"cpu": "1"}}, cohort="implicit"),
    cluster_queue("alone", {"f": {"cpu": "3"}}),
]
COHORTS = [
    cohort("left", {"f": {"cpu": ("2", "3", "1")}}, parent="root"),
    cohort("right", parent="root"),
    cohort("root", {"f": {"cpu": "1"}}),
]


def _both(queues: list[dict[str, Any]], cohorts: list[dict[str, Any]]) -> tuple[Tree, Tree]:
    st = state(queues, cohorts=cohorts)
    members = CohortMembers()
    for queue in st.cluster_queues.values():
        members.add(queue)
    return build_tree(st.cluster_queues, st.cohorts), build_tree(st.cluster_queues, st.cohorts, members)


def test_the_tree_from_member_sums_is_the_tree_with_a_node_per_queue() -> None:
    """Every Cohort's subtree quota, and every queue's potential available, whichever way it is built."""
    whole, summed = _both(QUEUES, COHORTS)
    assert summed.queues == {}
    assert {n: c.subtree for n, c in summed.cohorts.items()} == {n: c.subtree for n, c in whole.cohorts.items()}
    frs = [("f", "cpu"), ("g", "cpu")]
    st = state(QUEUES, cohorts=COHORTS)
    made = {name: summed.queue(info) for name, info in st.cluster_queues.items()}
    assert {name: [potential_available(node, fr) for fr in frs] for name, node in made.items()} == {
        name: [potential_available(node, fr) for fr in frs] for name, node in whole.queues.items()
    }
    assert {name: [potential_available(node, fr) for fr in frs] for name, node in made.items()} == {
        "a": [Decimal(14), Decimal(2)],
        "b": [Decimal(14), Decimal(2)],  # a lends its 2 of flavor g to the whole tree
        "c": [Decimal(15), Decimal(2)],
        "d": [Decimal(10), Decimal(2)],
        "e": [Decimal(1), Decimal(0)],
        "alone": [Decimal(3), Decimal(0)],
    }


def test_a_queue_whose_cohort_no_sum_names_hangs_under_an_empty_cohort() -> None:
    """A tree built before the queue's sums were added: its cohort holds nothing yet."""
    st = state([cluster_queue("q", {"f": {"cpu": ("4", None, "1")}}, cohort="new")])
    node = build_tree(st.cluster_queues, st.cohorts, CohortMembers()).queue(st.cluster_queues["q"])
    assert (node.parent.name if node.parent else None, potential_available(node, ("f", "cpu"))) == ("new", 3)


def test_cycles_are_found_once_and_cut() -> None:
    """A ``parentName`` cycle is reported once, in parent order from its smallest name; its members
    lose their parents, and every node in or under it is marked, in both ways of building."""
    queues = [cluster_queue("q", {"f": {"cpu": "1"}}, cohort="x"), cluster_queue("p", {"f": {"cpu": "1"}}, cohort="v")]
    cohorts = [
        cohort("x", parent="z"),
        cohort("z", parent="y"),
        cohort("y", parent="x"),
        cohort("w", parent="x"),
        cohort("v", parent="u"),
    ]
    st = state(queues, cohorts=cohorts)
    for tree in _both(queues, cohorts):
        nodes = {**{n: tree.queue(info) for n, info in st.cluster_queues.items()}, **tree.cohorts}
        assert (
            tree.cycles,
            sorted(name for name, node in nodes.items() if node.cyclic),
            {name: node.parent.name if node.parent else None for name, node in tree.cohorts.items()},
        ) == (
            [("x", "z", "y")],
            ["q", "w", "x", "y", "z"],
            {"u": None, "v": "u", "w": "x", "x": None, "y": None, "z": None},
        )
