"""The victims Kueue's preemptor picks, restated from Kueue's own tests as facts.

Each case cites its source in kubernetes-sigs/kueue (``pkg/scheduler/preemption``) and
asserts the exact victim set with Kueue's reasons. Like Kueue's tests, the assignment is
given (resource -> flavor in Preempt or Fit mode) and ``GetTargets`` is asked; the tree
must be unchanged afterwards (Kueue's tests compare the snapshot before and after).

Kueue's cases left out, and why:
- ``preemption_test.go`` cases with ``AdmissionFairSharing`` (LocalQueue usage ordering),
  TAS (topology) or workload slices: the simulator does not model those features.
- ``evicted workload first`` and the ordering table (``TestCandidatesOrdering``) are covered
  by ``test_ordering_*`` below without the priority boost annotation, which we do not read.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.simulate_builders import NOW, admitted, cluster_queue, cohort, from_document, state, targets
from webhook.kueue.preemption.common import ordering_key

IN_CQ, RECLAIM, FAIR, WHILE_BORROWING = (
    "InClusterQueue",
    "InCohortReclamation",
    "InCohortFairSharing",
    "InCohortReclaimWhileBorrowing",
)

# ---------------------------------------------------------------- preemption_test.go, TestPreemption

_SHARED = {"within": "Never", "reclaim": "LowerPriority", "borrow_within": "LowerPriority", "threshold": 0}
DEFAULT_QUEUES = [
    cluster_queue(
        "standalone",
        {"default": {"cpu": "6"}},
        {"alpha": {"memory": "3Gi"}, "beta": {"memory": "3Gi"}},
        within="LowerPriority",
    ),
    cluster_queue(
        "c1",
        {"default": {"cpu": ("6", "6"), "memory": ("3Gi", "3Gi")}},
        cohort="cohort",
        within="LowerPriority",
        reclaim="LowerPriority",
    ),
    cluster_queue(
        "c2", {"default": {"cpu": ("6", "6"), "memory": ("3Gi", "3Gi")}}, cohort="cohort", within="Never", reclaim="Any"
    ),
    cluster_queue("preventStarvation", {"default": {"cpu": "6"}}, within="LowerOrNewerEqualPriority"),
    cluster_queue("a_standard", {"default": {"cpu": ("1", "12")}}, cohort="with_shared_cq", **_SHARED),  # type: ignore[arg-type]
    cluster_queue(
        "b_standard",
        {"default": {"cpu": ("1", "12")}},
        cohort="with_shared_cq",
        within="LowerPriority",
        reclaim="Any",
        borrow_within="LowerPriority",
        threshold=0,
    ),
    cluster_queue("a_best_effort", {"default": {"cpu": ("1", "12")}}, cohort="with_shared_cq", **_SHARED),  # type: ignore[arg-type]
    cluster_queue("b_best_effort", {"default": {"cpu": ("0", "13")}}, cohort="with_shared_cq", **_SHARED),  # type: ignore[arg-type]
    cluster_queue("shared", {"default": {"cpu": "10"}}, cohort="with_shared_cq"),
    cluster_queue(
        "lend1",
        {"default": {"cpu": ("6", None, "4")}},
        cohort="cohort-lend",
        within="LowerPriority",
        reclaim="LowerPriority",
    ),
    cluster_queue(
        "lend2",
        {"default": {"cpu": ("6", None, "2")}},
        cohort="cohort-lend",
        within="LowerPriority",
        reclaim="LowerPriority",
    ),
    cluster_queue(
        "d1",
        {"default": {"cpu": "6", "memory": "3Gi"}},
        cohort="cohort-no-limits",
        within="LowerPriority",
        reclaim="LowerPriority",
    ),
    cluster_queue(
        "d2", {"default": {"cpu": "6", "memory": "3Gi"}}, cohort="cohort-no-limits", within="Never", reclaim="Any"
    ),
    cluster_queue(
        "l1",
        {"default": {"cpu": ("6", "12"), "memory": ("3Gi", "6Gi")}},
        cohort="legion",
        within="LowerPriority",
        reclaim="LowerPriority",
    ),
    cluster_queue(
        "a", {"default": {"cpu": "2", "memory": "2"}}, cohort="cohort-three", within="LowerPriority", reclaim="Any"
    ),
    cluster_queue("b", {"default": {"cpu": "2", "memory": "2"}}, cohort="cohort-three"),
    cluster_queue("c", {"default": {"cpu": "2", "memory": "2"}}, cohort="cohort-three"),
]


def _cpu(name: str, queue: str, cpu: str, priority: int = 0, **kw: object) -> dict[str, object]:
    return admitted(name, queue, {"cpu": cpu}, priority=priority, **kw)  # type: ignore[arg-type]


_STANDALONE_3 = [_cpu("low", "standalone", "2", -1), _cpu("mid", "standalone", "2"), _cpu("high", "standalone", "2", 1)]

CLASSICAL = {
    "preempt lowest priority": (_STANDALONE_3, "standalone", "2", 1, {("low", IN_CQ)}),
    "preempt multiple": (_STANDALONE_3, "standalone", "3", 1, {("low", IN_CQ), ("mid", IN_CQ)}),
    "no preemption for low priority": (
        [_cpu("low", "standalone", "3", -1), _cpu("mid", "standalone", "3")],
        "standalone",
        "1",
        -1,
        set(),
    ),
    "not enough low priority workloads": (
        [_cpu("low", "standalone", "3", -1), _cpu("mid", "standalone", "3")],
        "standalone",
        "4",
        0,
        set(),
    ),
    "some free quota, preempt low priority": (
        [_cpu("low", "standalone", "1", -1), _cpu("mid", "standalone", "1"), _cpu("high", "standalone", "3", 1)],
        "standalone",
        "2",
        1,
        {("low", IN_CQ)},
    ),
    "minimal set excludes low priority": (
        [_cpu("low", "standalone", "1", -1), _cpu("mid", "standalone", "2"), _cpu("high", "standalone", "3", 1)],
        "standalone",
        "2",
        1,
        {("mid", IN_CQ)},
    ),
    "reclaim quota from borrower": (
        [_cpu("c1-low", "c1", "3", -1), _cpu("c2-mid", "c2", "3"), _cpu("c2-high", "c2", "6", 1)],
        "c1",
        "3",
        1,
        {("c2-mid", RECLAIM)},
    ),
    "no workloads borrowing": (
        [_cpu("c1-high", "c1", "4", 1), _cpu("c2-low-1", "c2", "4", -1)],
        "c1",
        "4",
        1,
        set(),
    ),
    "not enough workloads borrowing": (
        [_cpu("c1-high", "c1", "4", 1), _cpu("c2-low-1", "c2", "4", -1), _cpu("c2-low-2", "c2", "4", -1)],
        "c1",
        "4",
        1,
        set(),
    ),
    "do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority": (
        [_cpu("c1", "c1", "2"), _cpu("c2-1", "c2", "4"), _cpu("c2-2", "c2", "4")],
        "c1",
        "4",
        0,
        set(),
    ),
    "reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny": (
        [_cpu("c1-1", "c1", "4"), _cpu("c1-2", "c1", "4", 1), _cpu("c2", "c2", "2")],
        "c2",
        "4",
        0,
        {("c1-1", RECLAIM)},
    ),
    "preempt from all ClusterQueues in cohort": (
        [
            _cpu("c1-low", "c1", "3", -1),
            _cpu("c1-mid", "c1", "2"),
            _cpu("c2-low", "c2", "3", -1),
            _cpu("c2-mid", "c2", "4"),
        ],
        "c1",
        "4",
        0,
        {("c1-low", IN_CQ), ("c2-low", RECLAIM)},
    ),
    "can't preempt workloads in ClusterQueue for withinClusterQueue=Never": (
        [_cpu("c2-low", "c2", "3", -1)],
        "c2",
        "4",
        1,
        set(),
    ),
    "use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while borrowing": (
        [_cpu("a_best_effort_low", "a_best_effort", "10", -1), _cpu("b_best_effort_low", "b_best_effort", "1", -1)],
        "a_standard",
        "10",
        0,
        {("a_best_effort_low", WHILE_BORROWING)},
    ),
    "use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above "
    "MaxPriorityThreshold, if borrowing is required even after the preemption": (
        [_cpu("b_standard", "b_standard", "10", 1)],
        "a_standard",
        "10",
        2,
        set(),
    ),
    "use BorrowWithinCohort; allow preempting a lower-priority workload with priority above "
    "MaxPriorityThreshold, if borrowing is not required after the preemption": (
        [_cpu("b_standard", "b_standard", "13", 1)],
        "a_standard",
        "1",
        2,
        {("b_standard", RECLAIM)},
    ),
    "reclaim quota from lender": (
        [_cpu("lend1-low", "lend1", "3", -1), _cpu("lend2-mid", "lend2", "3"), _cpu("lend2-high", "lend2", "4", 1)],
        "lend1",
        "3",
        1,
        {("lend2-mid", RECLAIM)},
    ),
}


CLASSICAL.update(
    {
        "preempting locally and borrowing same resource in cohort": (
            [_cpu("c1-med", "c1", "4"), _cpu("c1-low", "c1", "4", -1), _cpu("c2-low-1", "c2", "4", -1)],
            "c1",
            "4",
            1,
            {("c1-low", IN_CQ)},
        ),
        "preempting locally and borrowing same resource in cohort; no borrowing limit in the cohort": (
            [_cpu("d1-med", "d1", "4"), _cpu("d1-low", "d1", "4", -1), _cpu("d2-low-1", "d2", "4", -1)],
            "d1",
            "4",
            1,
            {("d1-low", IN_CQ)},
        ),
        "preempting locally and not borrowing same resource in 1-queue cohort": (
            [_cpu("l1-med", "l1", "4"), _cpu("l1-low", "l1", "2", -1)],
            "l1",
            "4",
            1,
            {("l1-med", IN_CQ)},
        ),
        "use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same ClusterQueue": (
            [_cpu("a_standard", "a_standard", "13", 1)],
            "a_standard",
            "1",
            2,
            set(),
        ),
        "use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already above nominal": (
            [
                _cpu("a_standard_1", "a_standard", "10", 1),
                _cpu("a_standard_2", "a_standard", "1", 1),
                _cpu("b_standard_1", "b_standard", "1", 1),
                _cpu("b_standard_2", "b_standard", "1", 2),
            ],
            "b_standard",
            "1",
            3,
            {("b_standard_1", IN_CQ)},
        ),
        "use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold": (
            [
                _cpu("b_standard_high", "b_standard", "10", 2),
                _cpu("b_standard_mid", "b_standard", "1", 1),
                _cpu("a_best_effort_low", "a_best_effort", "1", -1),
                _cpu("a_best_effort_lower", "a_best_effort", "1", -2),
            ],
            "b_standard",
            "2",
            2,
            {("a_best_effort_lower", WHILE_BORROWING), ("b_standard_mid", IN_CQ)},
        ),
        "preempt from all ClusterQueues in cohort-lend": (
            [
                _cpu("lend1-low", "lend1", "3", -1),
                _cpu("lend1-mid", "lend1", "2"),
                _cpu("lend2-low", "lend2", "3", -1),
                _cpu("lend2-mid", "lend2", "4"),
            ],
            "lend1",
            "4",
            0,
            {("lend1-low", IN_CQ), ("lend2-low", RECLAIM)},
        ),
        "cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit": (
            [_cpu("lend2-low", "lend2", "10", -1)],
            "lend1",
            "9",
            0,
            set(),
        ),
        "preemptions from cq when target queue is exhausted for the single requested resource": (
            [
                _cpu("a1", "a", "1", -2),
                _cpu("a2", "a", "1", -2),
                _cpu("a3", "a", "1", -1),
                _cpu("b1", "b", "1"),
                _cpu("b2", "b", "1"),
                _cpu("b3", "b", "1"),
            ],
            "a",
            "2",
            0,
            {("a1", IN_CQ), ("a2", IN_CQ)},
        ),
        "allow preemption from other cluster queues if target cq is not exhausted for the requested resource": (
            [
                _cpu("a1", "a", "1", -1),
                _cpu("b1", "b", "1"),
                _cpu("b2", "b", "1"),
                _cpu("b3", "b", "1"),
                _cpu("b4", "b", "1"),
                _cpu("b5", "b", "1", -1),
            ],
            "a",
            "2",
            0,
            {("a1", IN_CQ), ("b5", RECLAIM)},
        ),
    }
)


@pytest.mark.parametrize("case", sorted(CLASSICAL))
def test_classical_preemption_as_kueue_preemption_test(case: str) -> None:
    workloads, queue, cpu, priority, want = CLASSICAL[case]
    st = state(DEFAULT_QUEUES, workloads=workloads)
    assert targets(st, queue, {"cpu": cpu}, {"cpu": "default"}, priority=priority) == want


def test_only_preempt_workloads_using_the_chosen_flavor() -> None:
    """preemption_test.go "only preempt workloads using the chosen flavor".

    cpu is assigned in Fit mode on default, memory in Preempt mode on beta."""
    workloads = [
        admitted("low", "standalone", {"memory": "2Gi"}, flavor="alpha", priority=-1),
        admitted("mid", "standalone", {"memory": "1Gi"}, flavor="beta"),
        admitted("high", "standalone", {"memory": "1Gi"}, flavor="beta", priority=1),
    ]
    st = state(DEFAULT_QUEUES, workloads=workloads)
    got = targets(
        st, "standalone", {"cpu": "1", "memory": "2Gi"}, {"memory": "beta"}, fit={"cpu": "default"}, priority=1
    )
    assert got == {("mid", IN_CQ)}


def test_reclaim_quota_if_workload_requests_0_resources_for_a_resource_at_nominal_quota() -> None:
    """preemption_test.go "reclaim quota if workload requests 0 resources for a resource at nominal quota"."""
    workloads = [
        admitted("c1-low", "c1", {"cpu": "3", "memory": "3Gi"}, priority=-1),
        _cpu("c2-mid", "c2", "3"),
        _cpu("c2-high", "c2", "6", 1),
    ]
    st = state(DEFAULT_QUEUES, workloads=workloads)
    got = targets(st, "c1", {"cpu": "3", "memory": "0"}, {"cpu": "default"}, fit={"memory": "default"}, priority=1)
    assert got == {("c2-mid", RECLAIM)}


@pytest.mark.parametrize(
    ("case", "workloads", "memory", "want"),
    [
        (
            "preempting locally and borrowing other resources in cohort, without cohort candidates",
            [_cpu("c1-low", "c1", "4", -1), _cpu("c2-low-1", "c2", "4", -1), _cpu("c2-high-2", "c2", "4", 1)],
            "5Gi",
            {("c1-low", IN_CQ)},
        ),
        (
            "preempting locally and borrowing other resources in cohort, with cohort candidates",
            [
                _cpu("c1-med", "c1", "4"),
                _cpu("c2-low-1", "c2", "5", -1),
                _cpu("c2-low-2", "c2", "1", -1),
                _cpu("c2-low-3", "c2", "1", -1),
            ],
            "5Gi",
            {("c1-med", IN_CQ)},
        ),
    ],
)
def test_preempting_locally_and_borrowing_other_resources(
    case: str, workloads: list[dict[str, object]], memory: str, want: set[tuple[str, str]]
) -> None:
    """preemption_test.go, the cases named: cpu and memory both in Preempt mode on default."""
    st = state(DEFAULT_QUEUES, workloads=workloads)
    cpu = "4" if "without" in case else "2"
    got = targets(st, "c1", {"cpu": cpu, "memory": memory}, {"cpu": "default", "memory": "default"}, priority=1)
    assert got == want


@pytest.mark.parametrize("memory", [True, False])
def test_preemptions_from_cq_when_target_queue_is_exhausted(memory: bool) -> None:
    """preemption_test.go "preemptions from cq when target queue is exhausted for two requested resources"
    and "... for one requested resource, but not the other": a1 and a2 go in both."""
    usage = {"cpu": "1", "memory": "1"} if memory else {"cpu": "1"}
    names = (("a1", "a", -2), ("a2", "a", -2), ("a3", "a", -1), ("b1", "b", 0), ("b2", "b", 0), ("b3", "b", 0))
    workloads = [admitted(n, q, usage, priority=p) for n, q, p in names]
    st = state(DEFAULT_QUEUES, workloads=workloads)
    got = targets(st, "a", {"cpu": "2", "memory": "2"}, {"cpu": "default", "memory": "default"})
    assert got == {("a1", IN_CQ), ("a2", IN_CQ)}


def test_each_podset_preempts_a_different_flavor() -> None:
    """preemption_test.go "each podset preempts a different flavor": launcher on alpha, workers on beta."""
    workloads = [
        admitted("low-alpha", "standalone", {"memory": "2Gi"}, flavor="alpha", priority=-1),
        admitted("low-beta", "standalone", {"memory": "2Gi"}, flavor="beta", priority=-1),
    ]
    st = state(DEFAULT_QUEUES, workloads=workloads)
    got = targets(st, "standalone", {}, {}, usage={("alpha", "memory"): "2Gi", ("beta", "memory"): "2Gi"})
    assert got == {("low-alpha", IN_CQ), ("low-beta", IN_CQ)}


def test_long_range_preemption() -> None:
    """preemption_test.go "long range preemption": reclaim across the root, two cohorts away."""
    queues = [
        cluster_queue("cq-left", {"default": {"cpu": "10"}}, cohort="cohort-left", reclaim="Any"),
        cluster_queue("cq-right", {"default": {"cpu": "0"}}, cohort="cohort-right"),
    ]
    cohorts = [cohort("cohort-left", parent="root"), cohort("cohort-right", parent="root")]
    st = state(queues, cohorts=cohorts, workloads=[_cpu("to-be-preempted", "cq-right", "5")])
    assert targets(st, "cq-left", {"cpu": "8"}, {"cpu": "default"}) == {("to-be-preempted", RECLAIM)}


def test_preempt_newer_workloads_with_the_same_priority() -> None:
    """preemption_test.go "preempt newer workloads with the same priority" (LowerOrNewerEqualPriority):
    the incoming was created before wl2 and wl3; the most recently admitted of them goes."""
    workloads = [
        _cpu("wl1", "preventStarvation", "2", 2),
        _cpu("wl2", "preventStarvation", "2", 1, at=NOW + timedelta(seconds=1), created=NOW),
        _cpu("wl3", "preventStarvation", "2", 1, created=NOW),
    ]
    st = state(DEFAULT_QUEUES, workloads=workloads)
    got = targets(
        st, "preventStarvation", {"cpu": "2"}, {"cpu": "default"}, priority=1, created=NOW - timedelta(seconds=15)
    )
    assert got == {("wl2", IN_CQ)}


# ---------------------------------------------------------------- preemption_test.go, TestCandidatesOrdering


def test_ordering_evicted_first_then_other_queues_then_priority_then_newest() -> None:
    docs = [
        _cpu("old-low", "c1", "1", -1, at=NOW),
        _cpu("new-low", "c1", "1", -1, at=NOW + timedelta(seconds=5)),
        _cpu("other-high", "c2", "1", 5),
        _cpu("evicted-high", "c1", "1", 9, evicted=True),
        _cpu("own-lowest", "c1", "1", -9),
    ]
    workloads = [from_document(d) for d in docs]
    key = ordering_key("c1", NOW)
    ordered = sorted(workloads, key=key)  # type: ignore[arg-type]
    assert [w.key for w in ordered] == [  # type: ignore[union-attr]
        "/evicted-high",
        "/other-high",
        "/own-lowest",
        "/new-low",
        "/old-low",
    ]


# ---------------------------------------------------------------- preemption_fair_test.go, TestFairPreemptions

_FAIR = {"within": "LowerPriority", "reclaim": "Any", "borrow_within": "LowerPriority", "threshold": -3}
FAIR_QUEUES = [
    cluster_queue("a", {"default": {"cpu": "3"}}, cohort="all", **_FAIR),  # type: ignore[arg-type]
    cluster_queue("b", {"default": {"cpu": "3"}}, cohort="all", **_FAIR),  # type: ignore[arg-type]
    cluster_queue("c", {"default": {"cpu": "3"}}, cohort="all", **_FAIR),  # type: ignore[arg-type]
    cluster_queue("preemptible", {"default": {"cpu": "0"}}, cohort="all"),
]


def _units(queue: str, count: int, start: int = 1) -> list[dict[str, object]]:
    return [_cpu(f"{queue}{i}", queue, "1") for i in range(start, start + count)]


FAIR_CASES = {
    "reclaim nominal from user using the most": (
        [*_units("a", 3), *_units("b", 5), *_units("c", 1)],
        "c",
        "1",
        {("b1", RECLAIM)},
    ),
    "can reclaim from queue using less, if taking the latest workload from user using the most isn't enough": (
        [_cpu("a1", "a", "3"), _cpu("a2", "a", "1"), _cpu("b1", "b", "2"), _cpu("b2", "b", "3")],
        "c",
        "3",
        {("a1", RECLAIM)},
    ),
    "reclaim borrowable quota from user using the most": (
        [*_units("a", 3), *_units("b", 5), *_units("c", 1)],
        "a",
        "1",
        {("b1", FAIR)},
    ),
    "preempt one from each CQ borrowing": (
        [
            _cpu("a1", "a", "0.5"),
            _cpu("a2", "a", "0.5"),
            _cpu("a3", "a", "3"),
            _cpu("b1", "b", "0.5"),
            _cpu("b2", "b", "0.5"),
            _cpu("b3", "b", "3"),
        ],
        "c",
        "2",
        {("a1", RECLAIM), ("b1", RECLAIM)},
    ),
    "can't preempt when everyone under nominal": (
        [*_units("a", 3), *_units("b", 3), *_units("c", 3)],
        "c",
        "1",
        set(),
    ),
    "can't preempt when it would switch the imbalance": ([*_units("a", 3), *_units("b", 5)], "a", "2", set()),
    "can preempt lower priority workloads from same CQ": (
        [
            _cpu("a1_low", "a", "1", -1),
            _cpu("a2_low", "a", "1", -1),
            _cpu("a3", "a", "1"),
            _cpu("a4", "a", "1"),
            *_units("b", 5),
        ],
        "a",
        "2",
        {("a1_low", IN_CQ), ("a2_low", IN_CQ)},
    ),
    "can preempt a combination of same CQ and highest user": (
        [_cpu("a_low", "a", "1", -1), _cpu("a2", "a", "1"), _cpu("a3", "a", "1"), *_units("b", 6)],
        "a",
        "2",
        {("a_low", IN_CQ), ("b1", FAIR)},
    ),
    "preempt huge workload if there is no other option, as long as the target CQ gets a lower share": (
        [_cpu("b1", "b", "9")],
        "a",
        "2",
        {("b1", RECLAIM)},
    ),
    "can't preempt huge workload if the incoming is also huge": (
        [_cpu("a1", "a", "2"), _cpu("b1", "b", "7")],
        "a",
        "5",
        set(),
    ),
    "can't preempt 2 smaller workloads if the incoming is huge": (
        [_cpu("b1", "b", "2"), _cpu("b2", "b", "2"), _cpu("b3", "b", "3")],
        "a",
        "6",
        set(),
    ),
    "preempt from target and others even if over nominal": (
        [_cpu("a1_low", "a", "2", -1), _cpu("a2_low", "a", "1", -1), _cpu("b1", "b", "3"), _cpu("b2", "b", "3")],
        "a",
        "4",
        {("a1_low", IN_CQ), ("b1", FAIR)},
    ),
    "prefer to preempt workloads that don't make the target CQ have the biggest share": (
        [_cpu("b1", "b", "2"), _cpu("b2", "b", "1"), _cpu("b3", "b", "2"), _cpu("c1", "c", "1")],
        "a",
        "3.5",
        {("b2", FAIR)},
    ),
    "preempt from different cluster queues if the end result has a smaller max share": (
        [_cpu("b1", "b", "2"), _cpu("b2", "b", "2.5"), _cpu("c1", "c", "2"), _cpu("c2", "c", "2.5")],
        "a",
        "3.5",
        {("b1", FAIR), ("c1", FAIR)},
    ),
    "scenario above does not flap": (
        [_cpu("a1", "a", "3.5"), _cpu("b2", "b", "2.5"), _cpu("c2", "c", "2.5")],
        "b",
        "2",
        set(),
    ),
}


@pytest.mark.parametrize("case", sorted(FAIR_CASES))
def test_fair_preemption_as_kueue_preemption_fair_test(case: str) -> None:
    workloads, queue, cpu, want = FAIR_CASES[case]
    st = state(FAIR_QUEUES, workloads=workloads, fair=True)
    assert targets(st, queue, {"cpu": cpu}, {"cpu": "default"}) == want


# ---------------------------------------------------------------- preemption_hierarchical_test.go

_ANY = {"within": "LowerPriority", "reclaim": "Any"}
_BORROW0 = {**_ANY, "borrow_within": "LowerPriority", "threshold": 0}
EMPTY: dict[str, dict[str, str]] = {"default": {}}


def _q(name: str, parent: str, cpu: str | tuple[str, None, str] | None = None, **policy: object) -> dict[str, object]:
    group = {"default": {"cpu": cpu}} if cpu is not None else EMPTY
    return cluster_queue(name, group, cohort=parent, **{**_ANY, **policy})  # type: ignore[arg-type]


def _c(name: str, parent: str | None = None, cpu: str | None = None, memory: str | None = None) -> dict[str, object]:
    resources = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return cohort(name, *([{"default": resources}] if resources else []), parent=parent)


HIERARCHICAL = {
    "preempt with hierarchical advantage": (
        [_c("r"), _c("c", "r", "2")],
        [_q("q", "c"), _q("q_borrowing", "r")],
        [_cpu("admitted2", "q_borrowing", "2")],
        ("q", "2", 0),
        {("admitted2", RECLAIM)},
    ),
    "avoid queues within nominal quota": (
        [_c("r"), _c("c", "r", "2")],
        [_q("q_nominal", "r", "2"), _q("q", "c"), _q("q_borrowing", "r")],
        [_cpu("admitted1", "q_nominal", "2", -10), _cpu("admitted2", "q_borrowing", "2")],
        ("q", "2", 0),
        {("admitted2", RECLAIM)},
    ),
    "preempt multiple with hierarchical advantage": (
        [_c("r"), _c("c", "r", "2")],
        [_q("q", "c"), _q("q_borrowing", "r")],
        [_cpu("admitted1", "q_borrowing", "1", 1), _cpu("admitted2", "q_borrowing", "1", 2)],
        ("q", "2", 0),
        {("admitted1", RECLAIM), ("admitted2", RECLAIM)},
    ),
    "preempt in cohort and own CQ": (
        [_c("r"), _c("c", "r", "3")],
        [_q("q", "c", **_BORROW0), _q("q_same_cohort", "c")],
        [
            _cpu("admitted_not_preemptible", "q_same_cohort", "1", 1),
            _cpu("admitted_preemptible", "q_same_cohort", "2", 0),
            _cpu("admitted_own_queue", "q", "1", -1),
        ],
        ("q", "2", 1),
        {("admitted_own_queue", IN_CQ), ("admitted_preemptible", WHILE_BORROWING)},
    ),
    "prefer to preempt hierarchical candidate": (
        [_c("r"), _c("c", "r", "2")],
        [_q("q", "c"), _q("q_borrowing", "r")],
        [_cpu("admitted_borrowing", "q_borrowing", "1", 1), _cpu("admitted_same_queue", "q", "1", -2)],
        ("q", "1", 0),
        {("admitted_borrowing", RECLAIM)},
    ),
    "forced to preempt priority candidate": (
        [_c("r"), _c("c", "r", "2")],
        [_q("q", "c", **_BORROW0), _q("q_nominal", "r", "2"), _q("q_same_cohort", "c")],
        [_cpu("admitted_nominal", "q_nominal", "2", -10), _cpu("admitted_same_cohort", "q_same_cohort", "2", -1)],
        ("q", "2", 0),
        {("admitted_same_cohort", WHILE_BORROWING)},
    ),
    "incoming workload fits in CQ nominal quota": (
        [_c("r"), _c("c", "r", "2")],
        [_q("q", "c", "4"), _q("q_borrowing", "r"), _q("q_same_cohort", "c")],
        [_cpu("admitted_borrowing", "q_borrowing", "3", 10), _cpu("admitted_same_cohort", "q_same_cohort", "3", 10)],
        ("q", "4", 0),
        {("admitted_borrowing", RECLAIM), ("admitted_same_cohort", RECLAIM)},
    ),
    "preempt hierarchical and priority candidates": (
        [_c("r", None, "1"), _c("c", "r", "4")],
        [
            _q("q", "c", **{**_BORROW0, "reclaim": "LowerPriority"}),
            _q("q_borrowing", "r"),
            _q("q_same_cohort", "c"),
        ],
        [
            _cpu("admitted_borrowing", "q_borrowing", "2", -1),
            _cpu("admitted_same_cohort_preemptible", "q_same_cohort", "1", -1),
            _cpu("admitted_borrowing_not_preemptible", "q_borrowing", "2", 1),
        ],
        ("q", "3", 0),
        {("admitted_borrowing", RECLAIM), ("admitted_same_cohort_preemptible", WHILE_BORROWING)},
    ),
    "preempt hierarchical candidates and inside CQ": (
        [_c("r", None, "1"), _c("c", "r", "4")],
        [
            _q("q", "c", **{**_BORROW0, "reclaim": "LowerPriority"}),
            _q("q_borrowing", "r"),
            _q("q_same_cohort", "c"),
        ],
        [
            _cpu("admitted_borrowing", "q_borrowing", "2", -1),
            _cpu("admitted_same_queue_preemptible", "q", "1", -1),
            _cpu("admitted_borrowing_not_preemptible", "q_borrowing", "2", 1),
        ],
        ("q", "3", 0),
        {("admitted_borrowing", RECLAIM), ("admitted_same_queue_preemptible", IN_CQ)},
    ),
    "reclaim nominal quota from lowest priority workload, excluding non-borrowing": (
        [_c("r"), _c("c", "r", "3")],
        [_q("q", "c"), _q("q_borrowing", "r"), _q("q_nominal", "r", "2")],
        [
            _cpu("admitted_borrowing_prio_8", "q_borrowing", "1", 8),
            _cpu("admitted_borrowing_prio_9", "q_borrowing", "1", 9),
            _cpu("admitted_borrowing_prio_10", "q_borrowing", "1", 9),
            _cpu("admitted_nominal", "q_nominal", "2", -2),
        ],
        ("q", "1", 0),
        {("admitted_borrowing_prio_8", RECLAIM)},
    ),
    "infeasible preemption all available workloads in pruned subtrees": (
        [_c("r"), _c("c", "r", "2"), _c("c_other", "r", "2")],
        [_q("q_other", "c_other"), _q("q", "c"), _q("q_same_cohort", "c")],
        [
            _cpu("admitted_other_1", "q_other", "1", -10),
            _cpu("admitted_other_2", "q_other", "1", -10),
            _cpu("admitted_same_cohort", "q_same_cohort", "2", 0),
        ],
        ("q", "2", 0),
        set(),
    ),
    "respect lending limits": (
        [_c("r"), _c("c", "r", "2")],
        [_q("q", "c", ("3", None, "2")), _q("q_borrowing", "r")],
        [_cpu("admitted_borrowing", "q_borrowing", "4", 0)],
        ("q", "5", -2),
        {("admitted_borrowing", RECLAIM)},
    ),
    # Kueue counts the already evicted one as a preemption under way (wantPreempted 1).
    "prefer to preempt evicted workloads": (
        [_c("r"), _c("c", "r", "2")],
        [_q("q", "c", **_BORROW0), _q("q_borrowing", "r"), _q("q_same_cohort", "c")],
        [
            _cpu("admitted_borrowing", "q_borrowing", "1", -10),
            _cpu("evicted_same_cohort", "q_same_cohort", "1", -1, evicted=True),
        ],
        ("q", "1", 0),
        {("evicted_same_cohort", WHILE_BORROWING)},
    ),
    "reclaim in complex hierarchy": (
        [
            _c("r"),
            _c("c11", "r", "4"),
            _c("c12", "r", "4"),
            _c("c21", "c11", "4"),
            _c("c22", "c11", "4"),
            _c("c23", "c11", "4"),
            _c("c31", "c21", "4"),
            _c("c32", "c21", "4"),
        ],
        [_q("q1", "c12"), _q("q2", "c23"), _q("q3", "c22"), _q("q4", "c32"), _q("q5", "c31")],
        [
            _cpu("admitted_borrowing_1", "q1", "4", -6),
            _cpu("admitted_borrowing_2", "q1", "4", -5),
            _cpu("admitted_borrowing_3", "q2", "4", -9),
            _cpu("admitted_borrowing_4", "q2", "4", -10),
            _cpu("admitted_borrowing_5", "q3", "4", -4),
            _cpu("admitted_borrowing_6", "q3", "3", -3),
            _cpu("admitted_borrowing_7", "q4", "2", 4),
            _cpu("admitted_borrowing_8", "q4", "3", 2),
        ],
        ("q5", "7", -2),
        {("admitted_borrowing_1", RECLAIM), ("admitted_borrowing_4", RECLAIM)},
    ),
}


@pytest.mark.parametrize("case", sorted(HIERARCHICAL))
def test_hierarchical_preemption_as_kueue_preemption_hierarchical_test(case: str) -> None:
    cohorts, queues, workloads, (queue, cpu, priority), want = HIERARCHICAL[case]
    st = state(queues, cohorts=cohorts, workloads=workloads)
    assert targets(st, queue, {"cpu": cpu}, {"cpu": "default"}, priority=priority) == want


def test_hierarchical_preemption_with_multiple_resources() -> None:
    """preemption_hierarchical_test.go "hiearchical preemption with multiple resources"."""
    cohorts = [_c("r", None, "3"), _c("c", "r", "4", "4Gi")]
    queues = [
        cluster_queue(name, {"default": {}}, cohort=parent, **_ANY)  # type: ignore[arg-type]
        for name, parent in (("q", "c"), ("q_borrowing", "r"), ("q_same_cohort", "c"))
    ]
    workloads = [
        admitted("admitted_borrowing", "q_borrowing", {"cpu": "3", "memory": "1Gi"}),
        admitted("admitted_same_cohort", "q_same_cohort", {"cpu": "1", "memory": "3Gi"}, priority=-2),
    ]
    st = state(queues, cohorts=cohorts, workloads=workloads)
    got = targets(st, "q", {"cpu": "2", "memory": "1Gi"}, {"cpu": "default", "memory": "default"}, priority=-2)
    assert got == {("admitted_borrowing", RECLAIM)}


# ---------------------------------------------------------------- preemption_fair_test.go, queues of their own


def _fq(
    name: str, cohort_name: str | None, cpu: str | None, weight: str | None = None, **policy: object
) -> dict[str, object]:
    groups = ({"default": {"cpu": cpu}},) if cpu is not None else ()
    return cluster_queue(name, *groups, cohort=cohort_name, weight=weight, **policy)  # type: ignore[arg-type]


def _prio(name: str, queue: str, priority: int, cpu: str = "1", flavor: str = "default") -> dict[str, object]:
    return admitted(name, queue, {"cpu": cpu}, flavor=flavor, priority=priority)


_LA = {"within": "LowerPriority", "reclaim": "Any"}
_THREE = [_fq(n, "all", "3", w, **_LA) for n, w in (("a", "2"), ("b", None), ("c", None))]
_ZERO_B = [_fq("a", "all", "3", None, **_LA), _fq("b", "all", "3", "0", **_LA), _fq("c", "all", "3", None, **_LA)]

FAIR_OWN = {
    "cannot preempt if it would make the candidate CQ go under nominal after preempting one element": (
        FAIR_QUEUES,
        [],
        [_cpu("b1", "b", "3"), _cpu("b2", "b", "3"), _cpu("c1", "c", "3")],
        ("a", "4", 0, ()),
        set(),
    ),
    "workloads under priority threshold not capriciously preempted": (
        FAIR_QUEUES,
        [],
        [*_units("a", 3), *_units("b", 3), *[_prio(f"preemptible{i}", "preemptible", -3) for i in (1, 2, 3)]],
        ("a", "2", 0, ()),
        set(),
    ),
    "preempt lower priority first, even if big": (
        FAIR_QUEUES,
        [],
        [_cpu("a1", "a", "3"), _cpu("b_low", "b", "5", 0), _cpu("b_high", "b", "1", 1)],
        ("a", "1", 0, ("LessThanInitialShare",)),
        {("b_low", FAIR)},
    ),
    "preempt workload that doesn't transfer the imbalance, even if high priority": (
        FAIR_QUEUES,
        [],
        [_cpu("a1", "a", "3"), _cpu("b_low", "b", "5", 0), _cpu("b_high", "b", "1", 1)],
        ("a", "1", 0, ("LessThanOrEqualToFinalShare",)),
        {("b_high", FAIR)},
    ),
    "CQ with higher weight can preempt more": (
        _THREE,
        [],
        [*_units("a", 3), *_units("b", 6)],
        ("a", "2", 0, ()),
        {("b1", FAIR), ("b2", FAIR)},
    ),
    "can preempt anything borrowing from CQ with 0 weight": (
        _ZERO_B,
        [],
        [*_units("a", 3), *_units("b", 6)],
        ("a", "3", 0, ()),
        {("b1", FAIR), ("b2", FAIR), ("b3", FAIR)},
    ),
    "can't preempt nominal from CQ with 0 weight": (
        _ZERO_B[:2],
        [],
        [*_units("a", 3), *_units("b", 3)],
        ("a", "1", 0, ()),
        set(),
    ),
    "can't preempt nominal from Cohort with 0 weight": (
        [_fq("left-cq", "root", "0", reclaim="Any"), _fq("right-cq", "right-cohort", "0", "0", reclaim="Any")],
        [cohort("right-cohort", {"default": {"cpu": "1"}}, parent="root", weight="0")],
        [_cpu("right-1", "right-cq", "1")],
        ("left-cq", "1", 0, ()),
        set(),
    ),
    "can preempt within cluster queue when no cohort": (
        [_fq("a", None, "1", within="LowerPriority")],
        [],
        [_cpu("a1", "a", "1")],
        ("a", "1", 1000, ()),
        {("a1", IN_CQ)},
    ),
    "hierarchical preemption": (
        [
            _fq("a", "LEFT", "1", "2", reclaim="Any"),
            _fq("b", "LEFT", "1"),
            _fq("c", "ROOT", "1"),
            _fq("d", "RIGHT", "1"),
            _fq("e", "RIGHT", "1", "0.99"),
        ],
        [
            cohort("ROOT", {"default": {"cpu": "5"}}),
            cohort("LEFT", {"default": {"cpu": "5"}}, parent="ROOT", weight="2"),
            cohort("RIGHT", {"default": {"cpu": "5"}}, parent="ROOT"),
        ],
        [_prio(f"{q}{p}", q, p) for q in "bcde" for p in range(1, 6)],
        ("a", "5", 0, ()),
        {("b1", FAIR), ("b2", FAIR), ("c1", FAIR), ("c2", FAIR), ("e1", FAIR)},
    ),
    "borrowing cq in non-borrowing cohort is protected": (
        [_fq("a", "ROOT", "5", "10", reclaim="Any", within="LowerPriority"), _fq("b", "RIGHT", None, "0.1")],
        [cohort("ROOT"), cohort("RIGHT", {"default": {"cpu": "1"}}, parent="ROOT", weight="0.1")],
        [_prio("a1", "a", -1), _prio("a2", "a", -1), _prio("a3", "a", -1), _prio("b1", "b", -1)],
        ("a", "5", 0, ()),
        {("a1", IN_CQ), ("a2", IN_CQ), ("a3", IN_CQ)},
    ),
    "forced to preempt within clusterqueue because borrowing workload too important": (
        [_fq("a", "ROOT", "5", "10", reclaim="LowerPriority", within="LowerPriority"), _fq("b", "RIGHT", None, "0.1")],
        [cohort("ROOT"), cohort("RIGHT", {"default": {"cpu": "3"}}, parent="ROOT", weight="0.1")],
        [_prio("a1", "a", -1), _prio("a2", "a", -1), _prio("a3", "a", -1), _prio("b1", "b", 100, "4")],
        ("a", "4", 0, ()),
        {("a1", IN_CQ), ("a2", IN_CQ), ("a3", IN_CQ)},
    ),
    "deep preemption": (
        [_fq("a", "AAA", "0", reclaim="Any"), _fq("b", "BBB", "0")],
        [
            cohort("ROOT"),
            cohort("A", parent="ROOT", weight="1.01"),
            cohort("AA", parent="A"),
            cohort("AAA", parent="AA"),
            cohort("B", parent="ROOT", weight="0.99"),
            cohort("BB", parent="B"),
            cohort("BBB", parent="BB"),
            cohort("C", parent="ROOT"),
            cohort("CC", parent="C"),
            cohort("CCC", parent="CC"),
            cohort("CCCC", {"default": {"cpu": "1"}}, parent="CCC"),
        ],
        [_cpu("b1", "b", "1")],
        ("a", "1", 0, ()),
        {("b1", FAIR)},
    ),
    "cq with zero weight can reclaim nominal quota": (
        [_fq("a", "ROOT", "1", "0.0", reclaim="Any"), _fq("b", "ROOT", "0", "1.0")],
        [],
        [_cpu("b1", "b", "1")],
        ("a", "1", 0, ()),
        {("b1", RECLAIM)},
    ),
    "cohort with zero weight can reclaim nominal quota": (
        [_fq("a", "A", "0", "0.0", reclaim="Any"), _fq("b", "ROOT", "0", "1.0")],
        [cohort("A", {"default": {"cpu": "1"}}, parent="ROOT", weight="0.0")],
        [_cpu("b1", "b", "1")],
        ("a", "1", 0, ()),
        {("b1", FAIR)},
    ),
    "zero weight borrowing preemptor cannot preempt from a borrowing CQ with a non-zero weight": (
        [_fq("a", "all", "1", "0", reclaim="Any"), _fq("b", "all", "1", "1")],
        [],
        [_cpu("a1", "a", "1"), _cpu("b1", "b", "1"), _cpu("b2", "b", "1")],
        ("a", "1", 0, ()),
        set(),
    ),
    "zero weight borrowing preemptor can preempt from a borrowing CQ which also has zero weight": (
        [_fq("a", "all", "1", "0", reclaim="Any"), _fq("b", "all", "0", "0")],
        [cohort("all", {"default": {"cpu": "3"}})],
        [_cpu("b1", "b", "1"), _cpu("b2", "b", "1"), _cpu("b3", "b", "1")],
        ("a", "2", 0, ()),
        {("b1", FAIR)},
    ),
    "candidates skipped by the first strategy are still available to the second strategy": (
        [_fq("p", "A", "2", "1", reclaim="Any"), _fq("y", "A", "2", "1"), _fq("x", "ROOT", "1", "1")],
        [cohort("A", {"default": {"cpu": "1"}}, parent="ROOT", weight="0")],
        [_cpu("p1", "p", "2"), _cpu("y1", "y", "2"), _cpu("y2", "y", "2"), _cpu("x1", "x", "1"), _cpu("x2", "x", "1")],
        ("p", "1", 0, ()),
        {("y1", FAIR), ("x1", FAIR)},
    ),
    "non-zero weight borrowing preemptor preempts from a borrowing CQ": (
        [_fq("a", "all", "1", "1", reclaim="Any"), _fq("b", "all", "0", "1")],
        [cohort("all", {"default": {"cpu": "3"}})],
        [_cpu("b1", "b", "1"), _cpu("b2", "b", "1"), _cpu("b3", "b", "1")],
        ("a", "2", 0, ()),
        {("b1", FAIR)},
    ),
}


@pytest.mark.parametrize("case", sorted(FAIR_OWN))
def test_fair_preemption_with_queues_of_their_own(case: str) -> None:
    queues, cohorts, workloads, (queue, cpu, priority, strategies), want = FAIR_OWN[case]
    st = state(queues, cohorts=cohorts, workloads=workloads, fair=True, strategies=strategies)
    assert targets(st, queue, {"cpu": cpu}, {"cpu": "default"}, priority=priority) == want


def test_fair_nominal_first_within_nominal_preempts_despite_high_aggregate_share() -> None:
    """preemption_fair_test.go "nominal first: workload fitting within nominal can preempt despite high
    aggregate DRS": the incoming fits a's premium nominal, though a borrows heavily on cheap."""
    queues = [
        cluster_queue(
            "a",
            {"premium": {"cpu": "3"}, "cheap": {"cpu": "0"}},
            cohort="all",
            reclaim="Any",
            when_can_borrow="MayStopSearch",
            when_can_preempt="MayStopSearch",
        ),
        cluster_queue("b", {"premium": {"cpu": "0"}, "cheap": {"cpu": "6"}}, cohort="all"),
    ]
    workloads = [
        *[_prio(f"a_prem{i}", "a", 0, flavor="premium") for i in (1, 2)],
        *[_prio(f"a_cheap{i}", "a", 0, flavor="cheap") for i in range(1, 6)],
        _prio("b_prem1", "b", 0, flavor="premium"),
    ]
    st = state(queues, workloads=workloads, fair=True)
    assert targets(st, "a", {"cpu": "1"}, {"cpu": "premium"}) == {("b_prem1", RECLAIM)}
