"""Resource-node math against Kueue's own test table (``webhook.quota.resource_node``).

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
from webhook.kueue.clusterqueue import NominalFit, nominal_fit, parse_cluster_queue
from webhook.kueue.cohort import CohortMembers, stored_in_parent
from webhook.kueue.potential import Bound
from webhook.kueue.resource_node import local_quota
from webhook.kueue.resources import Quota

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


def test_nominal_fit_counts_pods_within_nominal_and_skips_zero_requests() -> None:
    """The question ``replicas-beyond-nominal`` asks: pods of one shape in nominal, no borrowing.
    A zero request (cpu: 0) takes no quota and divides nothing."""
    view = snapshot(cluster_queue(CQ, [[("default", {"cpu": q("10", borrowing="90"), "memory": q("64Gi")})]]))
    info = view.cluster_queue(CQ)
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


def test_nominal_fit_of_quantities_at_the_parsers_bounds() -> None:
    """A nominal of 10^31 (where the parser holds larger ones) over a pod of 1n is 10^40 pods:
    more digits than Python's default context divides, none too many for the quantities'."""
    view = snapshot(cluster_queue(CQ, [[("default", {"cpu": q("1e400")})]]))
    info = view.cluster_queue(CQ)
    assert info is not None
    assert nominal_fit(info, "default", {"cpu": Decimal("1e-9")}, 10**50) == NominalFit(
        within=10**40, over=(("cpu", Decimal("1e-9") * 10**50, Decimal("1e31")),)
    )


def test_local_quota_is_what_a_node_keeps_from_its_parent() -> None:
    """Kueue's localQuota: subtree − lendingLimit, never below zero; nothing without a lendingLimit."""
    ten = Decimal(10)
    assert local_quota(ten, Quota(ten)) == 0
    assert local_quota(ten, Quota(ten, lending_limit=Decimal(4))) == 6
    assert local_quota(ten, Quota(ten, lending_limit=Decimal(12))) == 0
    queue = parse_cluster_queue(cluster_queue(CQ, [[("red", {"cpu": q("10", None, "4"), "memory": q("8")})]], "c"))
    assert stored_in_parent(queue) == {("red", "cpu"): 4, ("red", "memory"): 8}


def test_cohort_members_keep_what_their_queues_store_summed() -> None:
    """The member ClusterQueues' part of a cohort's subtree quota follows them as they come and go."""
    members = CohortMembers()
    one = parse_cluster_queue(cluster_queue("one", [[("red", {"cpu": q("10", None, "4")})]], "c"))
    two = parse_cluster_queue(cluster_queue("two", [[("red", {"cpu": q("6")})]], "c"))
    alone = parse_cluster_queue(cluster_queue("alone", [[("red", {"cpu": q("6")})]]))
    for queue in (one, two, alone):
        members.add(queue)
    assert members.stored("c") == {("red", "cpu"): 10}
    members.remove(one)
    assert members.stored("c") == {("red", "cpu"): 6}
    members.remove(two)
    assert members.stored("c") is None  # the last member gone: nothing kept for the cohort


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
