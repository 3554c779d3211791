"""Flavor assignment with usage, restated from Kueue's ``TestAssignFlavors`` as facts.

Source: kubernetes-sigs/kueue ``pkg/scheduler/flavorassigner/flavorassigner_test.go``,
the cases with usage (``clusterQueueUsage``, ``secondaryClusterQueueUsage``), cited by
name. Kueue's test sets usage directly and stubs the preemption oracle (it answers
Preempt unless told otherwise); here usage is an admitted Workload of lower priority in a
queue that may preempt it (``withinClusterQueue: LowerPriority``), so our real preemptor
gives the oracle's answer. Each case asserts the flavor and mode per resource.

Not restated: podSet groups (LeaderWorkerSet cases), reclaimable pods, workload slices,
TAS and the nomination mapping (features the simulator does not model), the cases that
only compare internal attempt records, and the cases whose stubbed oracle answers what no
state would make the real preemptor answer (e.g. "when borrowing while preemption is needed
for flavor one, fair sharing enabled, reclaimWithinCohort=Any": Preempt, though the other
queue borrows nothing and so offers no candidate).
"""

from __future__ import annotations

import pytest

from tests.simulate_builders import admitted, assign, chosen, cluster_queue, cohort, job, state
from webhook.kube.scheduling import Taint
from webhook.kueue.clusterqueue import FlavorFungibility
from webhook.kueue.flavorassigner import (
    EXCEEDS_MAX_QUOTA,
    FIT,
    NO_MATCHING_FLAVOR,
    NOFIT,
    PREEMPT,
    WAITING_FOR_QUOTA,
    Granular,
    is_preferred,
    should_try_next,
)
from webhook.kueue.resourceflavor import FlavorInfo

LOWER = {"within": "LowerPriority"}
TWO_FLAVORS = ({"one": {"pods": "10", "cpu": "10"}, "two": {"pods": "10", "cpu": "10"}},)


def _usage(queue: str, flavor: str, cpu: str) -> dict[str, object]:
    return admitted(f"usage-{queue}", queue, {"cpu": cpu}, flavor=flavor, priority=-1)


def test_single_flavor_used_resources_does_not_fit() -> None:
    """ "single flavor, used resources, doesn't fit": 3 of 4 cpu used, 2 asked: Preempt."""
    st = state([cluster_queue("q", {"default": {"cpu": "4"}}, **LOWER)], workloads=[_usage("q", "default", "3")])
    got = assign(st, "q", job("q", {"cpu": "2"}))
    assert (chosen(got), got.mode) == ([{"cpu": ("default", PREEMPT)}], PREEMPT)


def test_preempt_before_try_next_flavor() -> None:
    """ "preempt before try next flavor": MayStopSearch on both stops at flavor one, in Preempt mode."""
    queue = cluster_queue("q", *TWO_FLAVORS, when_can_borrow="MayStopSearch", when_can_preempt="MayStopSearch", **LOWER)
    st = state([queue], workloads=[_usage("q", "one", "2")])
    got = assign(st, "q", job("q", {"cpu": "9"}))
    assert chosen(got) == [{"cpu": ("one", PREEMPT), "pods": ("one", FIT)}]


def test_preempt_try_next_flavor() -> None:
    """ "preempt try next flavor": the default whenCanPreempt TryNextFlavor moves on to two, which fits."""
    st = state([cluster_queue("q", *TWO_FLAVORS, **LOWER)], workloads=[_usage("q", "one", "2")])
    got = assign(st, "q", job("q", {"cpu": "9"}))
    assert (chosen(got), got.mode) == ([{"cpu": ("two", FIT), "pods": ("two", FIT)}], FIT)


def _borrowing_queues(**fungibility: str) -> list[dict[str, object]]:
    return [
        cluster_queue(
            "q",
            {"one": {"pods": "10", "cpu": ("10", "1")}, "two": {"pods": "10", "cpu": "10"}},
            cohort="test-cohort",
            **fungibility,
        ),
        cluster_queue("secondary", {"one": {"cpu": "1"}}, cohort="test-cohort"),
    ]


def test_borrow_try_next_flavor_found_the_second_flavor() -> None:
    """ "borrow try next flavor, found the second flavor": whenCanBorrow TryNextFlavor skips borrowing on one."""
    queues = _borrowing_queues(when_can_borrow="TryNextFlavor", when_can_preempt="TryNextFlavor")
    st = state(queues, workloads=[_usage("q", "one", "2")])
    assert chosen(assign(st, "q", job("q", {"cpu": "9"}))) == [{"cpu": ("two", FIT), "pods": ("two", FIT)}]


def test_borrow_before_try_next_flavor() -> None:
    """ "borrow before try next flavor": with the default whenCanBorrow MayStopSearch, one fits by borrowing."""
    st = state(_borrowing_queues(), workloads=[_usage("q", "one", "2")])
    assert chosen(assign(st, "q", job("q", {"cpu": "9"}))) == [{"cpu": ("one", FIT), "pods": ("one", FIT)}]


def test_not_enough_space_to_borrow() -> None:
    """ "not enough space to borrow": the other queue lends nothing (lendingLimit 0): NoFit, beyond max capacity."""
    queues = [
        cluster_queue("q", {"one": {"cpu": "1"}}, cohort="test-cohort"),
        cluster_queue("secondary", {"one": {"cpu": ("10", None, "0")}}, cohort="test-cohort"),
    ]
    st = state(queues, workloads=[_usage("secondary", "one", "9")])
    got = assign(st, "q", job("q", {"cpu": "2"}))
    assert (chosen(got), got.mode, got.reason) == ([{}], NOFIT, EXCEEDS_MAX_QUOTA)


def test_multiple_specs_fit_borrowing() -> None:
    """ "multiple specs, fits borrowing": two podSets, both on default, borrowing from the cohort."""
    queues = [
        cluster_queue("q", {"default": {"cpu": ("2", "98"), "memory": "2Gi"}}, cohort="test-cohort"),
        cluster_queue("secondary", {"default": {"cpu": "198", "memory": "198Gi"}}, cohort="test-cohort"),
    ]
    incoming = job(
        "q", {}, podsets=[("driver", 1, {"cpu": "4", "memory": "1Gi"}), ("worker", 1, {"cpu": "6", "memory": "4Gi"})]
    )
    got = assign(state(queues), "q", incoming)
    both = {"cpu": ("default", FIT), "memory": ("default", FIT)}
    assert (chosen(got), got.mode) == ([both, both], FIT)


def test_lend_try_next_flavor_found_the_second_flavor() -> None:
    """ "lend try next flavor, found the second flavor": one would borrow beyond its lending-limited local quota."""
    queues = [
        cluster_queue(
            "q",
            {"one": {"pods": "10", "cpu": ("10", None, "1")}, "two": {"pods": "10", "cpu": ("10", None, "0")}},
            cohort="test-cohort",
            when_can_borrow="TryNextFlavor",
            when_can_preempt="TryNextFlavor",
        ),
        cluster_queue("secondary", {"one": {"cpu": "1"}}, cohort="test-cohort"),
    ]
    st = state(queues, workloads=[_usage("q", "one", "2")])
    assert chosen(assign(st, "q", job("q", {"cpu": "9"}))) == [{"cpu": ("two", FIT), "pods": ("two", FIT)}]


def test_past_max_but_can_preempt_in_cluster_queue() -> None:
    """ "past max, but can preempt in ClusterQueue": 9 used against nominal 2 + borrowing 8; 2 more: Preempt."""
    queues = [
        cluster_queue("q", {"one": {"cpu": ("2", "8")}}, cohort="test-cohort", **LOWER),
        cluster_queue("secondary", {"one": {"cpu": "98"}}, cohort="test-cohort"),
    ]
    st = state(queues, workloads=[_usage("q", "one", "9"), _usage("secondary", "one", "9")])
    got = assign(st, "q", job("q", {"cpu": "2"}))
    assert (chosen(got), got.mode) == ([{"cpu": ("one", PREEMPT)}], PREEMPT)


def test_num_pods_do_not_fit() -> None:
    """ "num pods don't fit": the queue covers pods (2) and the podSet has 3."""
    st = state([cluster_queue("q", {"default": {"pods": "2", "cpu": "10"}})])
    got = assign(st, "q", job("q", {"cpu": "1"}, count=3))
    assert (got.mode, got.reason) == (NOFIT, EXCEEDS_MAX_QUOTA)


def test_resource_not_listed_in_cluster_queue() -> None:
    """ "resource not listed in clusterQueue": NoFit; Kueue resolves a podSet without attempts to NoMatchingFlavor."""
    st = state([cluster_queue("q", {"one": {"cpu": "4"}})])
    got = assign(st, "q", job("q", {"example.com/gpu": "2"}))
    assert (got.mode, got.reason) == (NOFIT, NO_MATCHING_FLAVOR)


def test_zero_resource_request_not_in_cluster_queue_succeeds() -> None:
    """ "zero resource request not in clusterQueue should succeed"."""
    st = state([cluster_queue("q", {"one": {"cpu": "4"}})])
    got = assign(st, "q", job("q", {"cpu": "1", "example.com/gpu": "0"}))
    assert (chosen(got), got.mode) == ([{"cpu": ("one", FIT)}], FIT)


def test_multiple_flavors_fit_while_skipping_tainted_flavor() -> None:
    """ "multiple flavors, fits while skipping tainted flavor"."""
    st = state([cluster_queue("q", {"tainted": {"cpu": "4"}, "two": {"cpu": "4"}})])
    flavors = {
        "tainted": FlavorInfo("tainted", {}, (Taint("instance", "spot", "NoSchedule"),)),
        "two": FlavorInfo("two", {}),
    }
    st = type(st)(st.cluster_queues, st.cohorts, flavors, st.local_queues, now=st.now)
    got = assign(st, "q", job("q", {"cpu": "3"}))
    assert chosen(got) == [{"cpu": ("two", FIT)}]
    assert [t.flavor for t in got.podsets[0].tries[0]] == ["tainted", "two"]
    assert got.podsets[0].tries[0][0].reason == NO_MATCHING_FLAVOR


def test_waiting_for_quota_when_no_preemption_allowed_while_borrowing() -> None:
    """Past nominal, no reclaim in the tree and no borrowWithinCohort: NoFit with WaitingForQuota
    (``fitsResourceQuota``'s last branch), not ExceedsMaxQuota: it fits once usage goes."""
    queues = [
        cluster_queue("q", {"one": {"cpu": ("2", "8")}}, cohort="c"),
        cluster_queue("other", {"one": {"cpu": "8"}}, cohort="c"),
    ]
    st = state(queues, workloads=[_usage("other", "one", "8")])
    got = assign(st, "q", job("q", {"cpu": "4"}))
    assert (got.mode, got.reason) == (NOFIT, WAITING_FOR_QUOTA)


# ---------------------------------------------------------------- TestIsPreferred (flavorassigner_test.go)

NOFIT_M, NONE_M, PREEMPT_M, FIT_M = 0, 1, 2, 4
TRY = ("TryNextFlavor", "TryNextFlavor")
IS_PREFERRED = {
    "feature gate disabled prioritises preemption": ((FIT_M, 0), (PREEMPT_M, 0), FlavorFungibility(*TRY), True),
    "explicit BorrowingOverPreemption prioritises borrowing distance": (
        (PREEMPT_M, 1),
        (FIT_M, 2),
        FlavorFungibility(*TRY, "BorrowingOverPreemption"),
        False,
    ),
    "explicit PreemptionOverBorrowing prioritises lower preemption": (
        (PREEMPT_M, 1),
        (FIT_M, 2),
        FlavorFungibility(*TRY, "PreemptionOverBorrowing"),
        True,
    ),
    "explicit PreemptionOverBorrowing breaks borrowing ties with preemption": (
        (PREEMPT_M, 1),
        (FIT_M, 1),
        FlavorFungibility(*TRY, "PreemptionOverBorrowing"),
        False,
    ),
    "explicit PreemptionOverBorrowing rejects no-candidate flavor before borrowing comparison": (
        (NONE_M, 1),
        (FIT_M, 2),
        FlavorFungibility(*TRY, "PreemptionOverBorrowing"),
        False,
    ),
    "explicit PreemptionOverBorrowing prefers fit over shallower-borrowing no-candidate flavor": (
        (FIT_M, 2),
        (NONE_M, 1),
        FlavorFungibility(*TRY, "PreemptionOverBorrowing"),
        True,
    ),
    "no-candidate flavor remains preferable to no-fit flavor": ((NONE_M, 1), (NOFIT_M, 0), FlavorFungibility(), True),
    "no-fit flavor remains worse than no-candidate flavor": ((NOFIT_M, 0), (NONE_M, 1), FlavorFungibility(), False),
    "no-candidate flavors retain borrowing preference": (
        (NONE_M, 1),
        (NONE_M, 2),
        FlavorFungibility(preference="PreemptionOverBorrowing"),
        True,
    ),
    "no-candidate flavors retain borrowing preference in reverse": (
        (NONE_M, 2),
        (NONE_M, 1),
        FlavorFungibility(preference="PreemptionOverBorrowing"),
        False,
    ),
}


@pytest.mark.parametrize("case", sorted(IS_PREFERRED))
def test_is_preferred_as_kueue_table(case: str) -> None:
    a, b, fungibility, want = IS_PREFERRED[case]
    assert is_preferred(Granular(*a), Granular(*b), fungibility) is want


def test_should_try_next_flavor() -> None:
    """``shouldTryNextFlavor``: no fit or no candidates always; preempting or borrowing per policy."""
    default = FlavorFungibility()
    assert not should_try_next(Granular(FIT_M, 0), default)
    assert not should_try_next(Granular(FIT_M, 2), default)
    assert should_try_next(Granular(FIT_M, 2), FlavorFungibility(*TRY))
    assert should_try_next(Granular(PREEMPT_M, 0), default)
    assert not should_try_next(Granular(PREEMPT_M, 0), FlavorFungibility("MayStopSearch", "MayStopSearch"))
    assert should_try_next(Granular(NONE_M, 0), FlavorFungibility("MayStopSearch", "MayStopSearch"))


# ---------------------------------------------------------------- more of TestAssignFlavors, and TestHierarchical


def test_cannot_preempt_in_cohort_for_the_first_flavor_tries_the_second() -> None:
    """ "cannot preempt in cohort (oracle returns None) for the first flavor, tries the second flavor
    (which fits)": the other queue's usage is of equal priority, so the real preemptor has no candidate."""
    queues = [
        cluster_queue(
            "q",
            {"one": {"cpu": ("0", "2")}, "two": {"cpu": ("0", "2")}},
            cohort="test-cohort",
            reclaim="LowerPriority",
            borrow_within="LowerPriority",
            when_can_borrow="MayStopSearch",
            when_can_preempt="MayStopSearch",
        ),
        cluster_queue("secondary", {"one": {"cpu": "2"}, "two": {"cpu": "2"}}, cohort="test-cohort"),
    ]
    st = state(queues, workloads=[admitted("usage", "secondary", {"cpu": "2"}, flavor="one")])
    got = assign(st, "q", job("q", {"cpu": "2"}))
    assert (chosen(got), [(t.flavor, t.mode) for t in got.podsets[0].tries[0]]) == (
        [{"cpu": ("two", FIT)}],
        [("one", PREEMPT), ("two", FIT)],
    )


def test_fair_sharing_without_reclaim_does_not_ask_the_oracle_while_borrowing() -> None:
    """ "when borrowing while preemption is needed for flavor one, fair sharing enabled,
    reclaimWithinCohort=Never": one is NoFit (WaitingForQuota), two fits."""
    queues = [
        cluster_queue(
            "q",
            {"one": {"cpu": "0"}, "two": {"cpu": "12"}},
            cohort="test-cohort",
            reclaim="Never",
            when_can_borrow="MayStopSearch",
            when_can_preempt="MayStopSearch",
        ),
        cluster_queue("secondary", {"one": {"cpu": "12"}}, cohort="test-cohort"),
    ]
    st = state(queues, workloads=[admitted("usage", "secondary", {"cpu": "10"}, flavor="one")], fair=True)
    got = assign(st, "q", job("q", {"cpu": "12"}))
    assert chosen(got) == [{"cpu": ("two", FIT)}]
    assert [(t.flavor, t.mode, t.reason) for t in got.podsets[0].tries[0]] == [
        ("one", NOFIT, WAITING_FOR_QUOTA),
        ("two", FIT, ""),
    ]


def test_quota_exhausted_but_can_preempt_in_cohort_and_cluster_queue() -> None:
    """ "quota exhausted, but can preempt in cohort and ClusterQueue": lendingLimit 0 keeps the nominal
    local; 2 used of 10, 9 asked: Preempt (a lower-priority Workload of the queue is the candidate)."""
    queues = [
        cluster_queue("q", {"one": {"pods": "10", "cpu": ("10", None, "0")}}, cohort="test-cohort", **LOWER),
        cluster_queue("secondary", {"one": {"pods": "0", "cpu": "0"}}, cohort="test-cohort"),
    ]
    st = state(queues, workloads=[_usage("q", "one", "2")])
    got = assign(st, "q", job("q", {"cpu": "9"}))
    assert (chosen(got), got.mode) == ([{"cpu": ("one", PREEMPT), "pods": ("one", FIT)}], PREEMPT)


def _hierarchy(one: dict[str, object] | None = None, **fungibility: str) -> list[dict[str, object]]:
    group = {"one": one or {"cpu": "0"}, "two": {"cpu": "0"}, "three": {"cpu": "0"}}
    return [
        cluster_queue(
            "test-clusterqueue",
            group,  # type: ignore[arg-type]
            cohort="one",
            within="LowerPriority",
            reclaim="LowerPriority",
            **{"when_can_preempt": "TryNextFlavor", **fungibility},  # type: ignore[arg-type]
        ),
        cluster_queue(
            "other-clusterqueue", {"one": {"cpu": "0"}, "two": {"cpu": "0"}, "three": {"cpu": "0"}}, cohort="two"
        ),
    ]


HIERARCHY = [
    cohort("three", {"three": {"cpu": "4"}}),
    cohort("two", {"two": {"cpu": "4"}}, parent="three"),
    cohort("one", {"one": {"cpu": "4"}}, parent="two"),
]


def _used(queue: str, flavor: str) -> dict[str, object]:
    return admitted(f"{queue}-{flavor}", queue, {"cpu": "4"}, flavor=flavor)


def test_hierarchical_select_the_top_flavor() -> None:
    """TestHierarchical "Select the top flavor": one and two are used up below; three fits at the root."""
    st = state(
        _hierarchy(),
        cohorts=HIERARCHY,
        workloads=[_used("test-clusterqueue", "one"), _used("other-clusterqueue", "two")],
    )
    got = assign(st, "test-clusterqueue", job("test-clusterqueue", {"cpu": "4"}))
    assert (chosen(got), got.mode) == ([{"cpu": ("three", FIT)}], FIT)


def test_hierarchical_select_the_first_flavor_which_fits() -> None:
    """TestHierarchical "Select the first flavor which fits"."""
    st = state(_hierarchy(), cohorts=HIERARCHY, workloads=[_used("test-clusterqueue", "one")])
    got = assign(st, "test-clusterqueue", job("test-clusterqueue", {"cpu": "4"}))
    assert (chosen(got), got.mode) == ([{"cpu": ("two", FIT)}], FIT)


def test_hierarchical_select_deeper_borrowing_flavor_when_the_shallower_has_no_candidates() -> None:
    """TestHierarchical "Select deeper-borrowing flavor that fits when shallower-borrowing flavor has no
    preemption candidates": one's usage is of the job's own priority, so no candidate; two beats three."""
    queues = _hierarchy({"cpu": ("4", "0")}, when_can_borrow="TryNextFlavor", when_can_preempt="TryNextFlavor")
    queues[0]["spec"]["flavorFungibility"]["preference"] = "PreemptionOverBorrowing"  # type: ignore[index]
    st = state(queues, cohorts=HIERARCHY, workloads=[_used("test-clusterqueue", "one")])
    got = assign(st, "test-clusterqueue", job("test-clusterqueue", {"cpu": "4"}))
    assert (chosen(got), got.mode) == ([{"cpu": ("two", FIT)}], FIT)


# ---------------------------------------------------------------- TestReclaimBeforePriorityPreemption

_UNO_DUE_TRE = {f: {"compute": "10", "gpu": "10"} for f in ("uno", "due", "tre")}


def _reclaim_state(test_usage: dict[str, dict[str, str]], other_usage: dict[str, str], **fungibility: str) -> object:
    queues = [
        cluster_queue(
            "test-clusterqueue",
            _UNO_DUE_TRE,  # type: ignore[arg-type]
            cohort="cohort",
            within="LowerPriority",
            reclaim="LowerPriority",
            **{"when_can_preempt": "TryNextFlavor", **fungibility},  # type: ignore[arg-type]
        ),
        cluster_queue(
            "other-clusterqueue", {f: {"compute": "0", "gpu": "0"} for f in ("uno", "due", "tre")}, cohort="cohort"
        ),
    ]
    workloads = [
        *[admitted(f"test-{f}", "test-clusterqueue", u, flavor=f, priority=-1) for f, u in test_usage.items()],
        *[
            admitted(f"other-{f}", "other-clusterqueue", {"gpu": a}, flavor=f, priority=-1)
            for f, a in other_usage.items()
        ],
    ]
    return state(queues, workloads=workloads)


RECLAIM_FIRST = {
    "Select first flavor which fits": ({"uno": {"gpu": "1"}}, {"due": "1"}, {}, {"gpu": "10"}, ("tre", FIT)),
    "Select first flavor where gpu reclamation is possible": (
        {"uno": {"gpu": "1"}},
        {"due": "1", "tre": "1"},
        {},
        {"gpu": "10"},
        ("due", PREEMPT),
    ),
    "Select first flavor when flavor fungibility is disabled": (
        {"uno": {"gpu": "1"}},
        {"due": "1", "tre": "1"},
        {"when_can_preempt": "MayStopSearch"},
        {"gpu": "10"},
        ("uno", PREEMPT),
    ),
    "Select first flavor where priority based preemption is possible": (
        {"uno": {"gpu": "1"}, "due": {"gpu": "1"}, "tre": {"gpu": "1"}},
        {},
        {},
        {"gpu": "10"},
        ("uno", PREEMPT),
    ),
    "Select second flavor where gpu reclamation is possible, as compute Fits": (
        {"uno": {"gpu": "1", "compute": "1"}, "due": {"compute": "1"}},
        {"due": "1", "tre": "1"},
        {},
        {"gpu": "10", "compute": "10"},
        ("tre", PREEMPT),
    ),
}


@pytest.mark.parametrize("case", sorted(RECLAIM_FIRST))
def test_reclaim_before_priority_preemption(case: str) -> None:
    """flavorassigner_test.go TestReclaimBeforePriorityPreemption: the stubbed oracle's answers come
    from real usage here (the queue's own lower-priority Workloads: Preempt; the other queue's
    borrowing ones: Reclaim); reclamation is preferred to priority preemption."""
    test_usage, other_usage, fungibility, requests, (flavor, mode) = RECLAIM_FIRST[case]
    st = _reclaim_state(test_usage, other_usage, **fungibility)
    got = assign(st, "test-clusterqueue", job("test-clusterqueue", requests))  # type: ignore[arg-type]
    assert ({p.flavors[r] for p in got.podsets for r in p.flavors}, got.mode) == ({flavor}, mode)
