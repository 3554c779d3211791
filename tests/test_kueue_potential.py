"""What a ClusterQueue could ever hold, as the gates read it (``webhook.kueue.potential``), against
Kueue's own test table.

From kubernetes-sigs/kueue ``pkg/cache/scheduler/resource_test.go``, ``TestAvailable``:
the ``wantPotentiallyAvailable`` column (the most a ClusterQueue could ever hold), all 8
cases, inputs and expected outcome restated in our words (no code copied). Their usage
inputs only affect Kueue's ``available`` column, which we do not model (usage zero: "could
it ever fit").
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from quota_fixtures import CQ, cluster_queue, cohort, q, snapshot, store

from webhook.cluster import kinds as k
from webhook.kueue.potential import Bound

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
    view = snapshot(*objects)
    got = {key: view.potential(key[0], key[1], "cpu").value for key in expected}
    assert got == {key: Decimal(value) for key, value in expected.items()}


def test_a_cohort_cycle_is_unknown() -> None:
    """Kueue refuses a cohort tree with a cycle (ErrCohortHasCycle); we say nothing about it."""
    view = snapshot(
        cluster_queue(CQ, [[("default", {"cpu": q("1")})]], "a"),
        cohort("a", "b"),
        cohort("b", "a"),
    )
    cycle = view.potential(CQ, "default", "cpu")
    assert (cycle.value, cycle.floor) == (None, 0)  # Kueue leaves the queue inactive until the cycle is fixed


def test_the_bound_says_how_it_is_made_up() -> None:
    """The explanation the exceeds-queue-capacity message quotes."""
    view = snapshot(
        cluster_queue("cq1", [[("red", {"cpu": q("10")})]], "cohort"),
        cluster_queue("cq2", [[("red", {"cpu": q("10", "2")})]], "cohort"),
        cohort("cohort", quotas={"red": {"cpu": q("10")}}),
    )
    assert view.potential("cq1", "red", "cpu") == Bound(
        Decimal(30), "nominal 10 + 20 the rest of cohort cohort could lend, no borrowing limit"
    )
    assert view.potential("cq2", "red", "cpu") == Bound(
        Decimal(12), "nominal 10 + borrowing limit 2 (cohort cohort could lend 20)"
    )


def test_unknown_cohorts_bound_a_queue_between_its_nominal_and_its_borrowing_limit() -> None:
    """Potential available is never below nominal (what a queue lends stays in the tree above it), and
    never above nominal + borrowingLimit; with the Cohorts unknown that range is all we know."""
    state = store(
        cluster_queue("capped", [[("red", {"cpu": q("10", "5")})]], "cohort"),
        cluster_queue("open", [[("red", {"cpu": q("10")})]], "cohort"),
    )
    state.availability.mark_absent(k.COHORTS.name, "not watched")
    view = state.snapshot()
    capped = view.potential("capped", "red", "cpu")
    assert (capped.value, capped.floor, capped.exact) == (Decimal(15), Decimal(10), False)
    assert capped.decided_by == "Cohorts: not watched"
    assert [capped.holds(Decimal(n)) for n in (10, 12, 16)] == [True, None, False]
    opened = view.potential("open", "red", "cpu")
    assert (opened.value, opened.floor) == (None, Decimal(10))  # no upper bound without a borrowingLimit
    assert opened.explanation == "nominal 10, cohort cohort is unknown and there is no borrowing limit"
    assert [opened.holds(Decimal(n)) for n in (10, 10**9)] == [True, None]
