"""The whole attempt: blockers, assignment, preemption, the queue in front, and what is unknown.

The six preemption scenarios of RFC-0033 4.4 are fixtures of their own, on the RFC's queues:
three ClusterQueues of the same shape (tpu7x, nominal 256 chips, borrowingLimit 128) in cohort
``tpu-pool``, reclaim and in-queue preemption from lower priority, fair sharing on.
"Guaranteed" (高保) and "best-effort" (低保) are two priorities. The RFC's expected results are
asserted exactly: the outcome, the victims and Kueue's reasons.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from tests.rfc_queues import tpu7x_flavor_spec
from tests.simulate_builders import (
    NAMESPACE,
    NOW,
    admitted,
    cluster_queue,
    cohort,
    job,
    pending_document,
    simulate,
    state,
    victims,
)
from webhook.kueue.localqueue import LocalQueueInfo
from webhook.kueue.resourceflavor import parse_flavor
from webhook.kueue.workload import submitted_workload
from webhook.simulate import engine
from webhook.simulate.engine import Simulator
from webhook.simulate.result import Result
from webhook.simulate.state import COHORTS, WORKLOADS, State

TPU = "google.com/tpu"
GUARANTEED, BEST_EFFORT = 1000, 100
TPU7X = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "ResourceFlavor",
    "metadata": {"name": "tpu7x"},
    "spec": tpu7x_flavor_spec(),
}


def team(name: str, **kw: object) -> dict[str, object]:
    return cluster_queue(
        name,
        {"tpu7x": {TPU: ("256", "128")}},
        cohort="tpu-pool",
        within="LowerPriority",
        reclaim="LowerPriority",
        **kw,  # type: ignore[arg-type]
    )


TEAMS = [team("team-a"), team("team-b"), team("team-c")]


def chips(name: str, queue: str, amount: int, priority: int, minute: int = 0) -> dict[str, object]:
    return admitted(
        name, queue, {TPU: str(amount)}, flavor="tpu7x", priority=priority, at=NOW + timedelta(minutes=minute)
    )


def rfc_state(*workloads: dict[str, object], fair: bool = True, pending: tuple[dict[str, object], ...] = ()) -> State:
    return state(TEAMS, workloads=[*workloads, *pending], flavors=[TPU7X], fair=fair)


def tpu_job(queue: str, amount: int, priority: int, **kw: object) -> object:
    return job(queue, {TPU: "4"}, count=amount // 4, priority=priority, created=NOW + timedelta(hours=1), **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------- RFC-0033 4.4


def test_rfc_4_4_scenario_1_borrows_the_idle_quota() -> None:
    """A uses 128; B submits 384 best-effort chips: admitted, borrowing the 128 A leaves idle."""
    result = simulate(rfc_state(chips("a-1", "team-a", 128, GUARANTEED)), tpu_job("team-b", 384, BEST_EFFORT))
    assert (result.outcome, result.reason, result.cluster_queue) == ("admit", "", "team-b")
    assert [(p.flavors, p.borrows) for p in result.podsets] == [({TPU: "tpu7x"}, 128)]
    assert result.warning() == "[simulate] starts now on tpu7x, borrowing 128 chips"


def test_rfc_4_4_scenario_2_reclaims_from_the_borrower_newest_first_until_it_fits() -> None:
    """After 1 (and C at its nominal): A submits 128 guaranteed; B's borrowing Workloads go, newest
    first, only as many as free 128; B's oldest stays."""
    st = rfc_state(
        chips("a-1", "team-a", 128, GUARANTEED),
        chips("b-1", "team-b", 256, BEST_EFFORT, 0),
        chips("b-2", "team-b", 64, BEST_EFFORT, 1),
        chips("b-3", "team-b", 64, BEST_EFFORT, 2),
        chips("c-1", "team-c", 256, GUARANTEED),
    )
    result = simulate(st, tpu_job("team-a", 128, GUARANTEED))
    assert result.outcome == "preempt"
    assert victims(result) == {("b-2", "InCohortReclamation"), ("b-3", "InCohortReclamation")}
    assert result.warning() == "[simulate] will preempt 2 Workloads of team-b to reclaim quota"
    named = Simulator(st, priority_names={BEST_EFFORT: "best-effort"}).simulate(tpu_job("team-a", 128, GUARANTEED))  # type: ignore[arg-type]
    assert named.warning() == "[simulate] will preempt 2 best-effort Workloads of team-b to reclaim quota"


def test_rfc_4_4_scenario_3_borrowing_guaranteed_job_preempts_by_fair_sharing() -> None:
    """A full with 256 guaranteed submits 100 more (it must borrow): no Workload within any queue's
    nominal is touched; B's borrowing best-effort one goes by the fair-sharing strategies."""
    st = rfc_state(
        chips("a-1", "team-a", 256, GUARANTEED),
        chips("b-1", "team-b", 256, BEST_EFFORT, 0),
        chips("b-2", "team-b", 128, BEST_EFFORT, 1),
        chips("c-1", "team-c", 128, BEST_EFFORT),
    )
    result = simulate(st, tpu_job("team-a", 100, GUARANTEED))
    assert result.outcome == "preempt"
    assert victims(result) == {("b-2", "InCohortFairSharing")}


def test_rfc_4_4_scenario_3_waits_when_nobody_borrows() -> None:
    """The same 100 chips when every queue runs within its nominal: nothing to take, it waits."""
    st = rfc_state(
        chips("a-1", "team-a", 256, GUARANTEED),
        chips("b-1", "team-b", 256, BEST_EFFORT),
        chips("c-1", "team-c", 256, BEST_EFFORT),
    )
    result = simulate(st, tpu_job("team-a", 100, GUARANTEED))
    assert (result.outcome, result.reason, result.preemptions) == ("wait", "WaitingForQuota", ())
    assert result.warning() == (
        "[simulate] will wait: team-a uses 256 of 256 tpu7x chips, cohort tpu-pool lends 0;"
        " held by team-a 256, team-b 256, team-c 256"
    )


def test_rfc_4_4_scenario_4_preempts_its_own_best_effort() -> None:
    """A holds 156 guaranteed + 100 best-effort and submits 100 guaranteed: its own best-effort goes."""
    st = rfc_state(
        chips("a-high", "team-a", 156, GUARANTEED),
        chips("a-low", "team-a", 100, BEST_EFFORT),
        chips("b-1", "team-b", 256, BEST_EFFORT),
        chips("c-1", "team-c", 256, BEST_EFFORT),
    )
    result = simulate(st, tpu_job("team-a", 100, GUARANTEED))
    assert (result.outcome, victims(result)) == ("preempt", {("a-low", "InClusterQueue")})
    assert result.warning() == "[simulate] will preempt 1 Workload of team-a of lower priority in its own queue"


def test_rfc_4_4_scenario_5_best_effort_never_preempts() -> None:
    """A borrows; B submits 100 best-effort with room in its nominal: same priority, no preemption, it waits."""
    st = rfc_state(
        chips("a-1", "team-a", 256, BEST_EFFORT),
        chips("a-2", "team-a", 128, BEST_EFFORT),
        chips("b-1", "team-b", 156, BEST_EFFORT),
        chips("c-1", "team-c", 228, GUARANTEED),
    )
    result = simulate(st, tpu_job("team-b", 100, BEST_EFFORT))
    assert (result.outcome, result.reason, result.preemptions) == ("wait", "WaitingForQuota", ())
    assert result.numbers is not None
    assert (result.numbers.uses, result.numbers.nominal, result.numbers.lends) == (156, 256, 0)
    assert result.numbers.holders == (("team-a", 384), ("team-c", 228), ("team-b", 156))


def test_rfc_4_4_scenario_6_fair_sharing_takes_from_the_largest_share_only() -> None:
    """A borrows 96, B borrows 24 (both best-effort); C submits 64 guaranteed within its nominal:
    every victim comes from A (the highest share), B is untouched."""
    st = rfc_state(
        chips("a-base", "team-a", 256, BEST_EFFORT, 0),
        chips("a-1", "team-a", 32, BEST_EFFORT, 1),
        chips("a-2", "team-a", 32, BEST_EFFORT, 2),
        chips("a-3", "team-a", 32, BEST_EFFORT, 3),
        chips("b-base", "team-b", 256, BEST_EFFORT, 0),
        chips("b-1", "team-b", 24, BEST_EFFORT, 4),
        chips("c-1", "team-c", 136, GUARANTEED),
    )
    result = simulate(st, tpu_job("team-c", 64, GUARANTEED))
    assert result.outcome == "preempt"
    assert victims(result) == {("a-2", "InCohortReclamation"), ("a-3", "InCohortReclamation")}


# ---------------------------------------------------------------- blockers (KEP-10852 precedence)


def test_deactivated_comes_before_a_stopped_queue() -> None:
    """KEP-10852 example 1: deactivated and on a stopped queue: Deactivated is reported."""
    st = state([team("team-a", stop="Hold")], flavors=[TPU7X])
    result = simulate(st, tpu_job("team-a", 8, GUARANTEED, active=False))
    assert (result.outcome, result.reason) == ("never", "Deactivated")


def test_missing_local_queue_and_cluster_queue_are_misconfigured() -> None:
    result = simulate(state(TEAMS, flavors=[TPU7X]), tpu_job("team-x", 8, GUARANTEED))
    assert (result.outcome, result.reason, result.message) == (
        "never",
        "Misconfigured",
        "LocalQueue default/team-x does not exist",
    )
    from webhook.kueue.localqueue import LocalQueueInfo

    st = state(TEAMS, flavors=[TPU7X], local_queues={("default", "q"): LocalQueueInfo("default", "q", "gone")})
    result = simulate(st, tpu_job("q", 8, GUARANTEED))
    assert (result.outcome, result.reason, result.message) == (
        "never",
        "Misconfigured",
        "ClusterQueue gone does not exist",
    )


def test_no_matching_flavor_comes_before_a_stopped_queue() -> None:
    """KEP-10852's precedence: NoMatchingFlavor (4) before Suspended (5)."""
    flavor = {**TPU7X, "spec": {**TPU7X["spec"], "tolerations": []}}  # type: ignore[dict-item]
    flavor["spec"]["nodeTaints"] = [{"key": TPU, "value": "present", "effect": "NoSchedule"}]
    result = simulate(state([team("team-a", stop="Hold")], flavors=[flavor]), tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.reason) == ("never", "NoMatchingFlavor")
    assert result.message == (
        "podSet main: tpu7x: has taint google.com/tpu=present:NoSchedule, which the pod does not tolerate"
    )


def test_stopped_queue_is_suspended() -> None:
    result = simulate(state([team("team-a", stop="HoldAndDrain")], flavors=[TPU7X]), tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.reason) == ("wait", "Suspended")
    assert result.message == "ClusterQueue team-a is stopped (stopPolicy HoldAndDrain)"


def test_namespace_selector_decides_when_the_labels_are_known() -> None:
    tiered = team("team-a")
    tiered["spec"]["namespaceSelector"] = {"matchLabels": {"tier": "production"}}  # type: ignore[index]
    open_state = state([tiered], flavors=[TPU7X])
    assert simulate(open_state, tpu_job("team-a", 8, GUARANTEED)).outcome == "admit"  # labels unknown: the rule decides
    labelled = state([tiered], flavors=[TPU7X], namespace_labels={"default": {"tier": "dev"}})
    result = simulate(labelled, tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.reason, result.message) == (
        "never",
        "Misconfigured",
        "namespace default does not match ClusterQueue team-a's namespaceSelector {tier=production}",
    )
    closed = team("team-a")
    del closed["spec"]["namespaceSelector"]  # type: ignore[attr-defined]
    result = simulate(state([closed], flavors=[TPU7X]), tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.reason) == ("never", "Misconfigured")


# ---------------------------------------------------------------- never and unknown


def test_beyond_nominal_and_borrowing_limit_is_never() -> None:
    result = simulate(rfc_state(), tpu_job("team-a", 400, GUARANTEED))
    assert (result.outcome, result.reason) == ("never", "ExceedsMaxQuota")


def test_without_workloads_in_the_state_it_is_unknown_never_admit() -> None:
    st = state(TEAMS, flavors=[TPU7X], missing=[WORKLOADS])
    result = simulate(st, tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.message) == (
        "unknown",
        "Workloads are not in the state: what the queues use now is unknown",
    )
    # what exceeds every quota is decided without usage
    assert simulate(st, tpu_job("team-a", 400, GUARANTEED)).outcome == "never"


def test_without_cohorts_a_queue_in_a_cohort_is_unknown() -> None:
    st = state(TEAMS, flavors=[TPU7X], missing=[COHORTS])
    assert simulate(st, tpu_job("team-a", 8, GUARANTEED)).outcome == "unknown"


def test_cohort_cycle_is_reported_not_looped_on() -> None:
    queues = [cluster_queue("q", {"default": {"cpu": "4"}}, cohort="x"), cluster_queue("p", {"default": {"cpu": "4"}})]
    st = state(queues, cohorts=[cohort("x", parent="y"), cohort("y", parent="x")])
    result = simulate(st, job("q", {"cpu": "1"}))
    assert (result.outcome, result.reason) == ("never", "Misconfigured")
    assert result.notes == ("cohort cycle: x → y → x",)
    # a queue outside the cycle is answered as usual
    assert simulate(st, job("p", {"cpu": "1"})).outcome == "admit"


def test_workloads_on_unknown_queues_or_flavors_are_counted_where_they_say_and_reported() -> None:
    st = state(
        [cluster_queue("q", {"default": {"cpu": "4"}})],
        workloads=[admitted("ghost", "gone", {"cpu": "2"}), admitted("odd", "q", {"cpu": "3"}, flavor="retired")],
    )
    result = simulate(st, job("q", {"cpu": "4"}))
    assert result.outcome == "admit"  # "odd" holds retired quota, not default's
    assert result.notes == (
        "Workload /ghost is admitted to ClusterQueue gone, which the state lacks",
        "Workload /odd holds quota of flavor retired, which ClusterQueue q does not list; counted there all the same",
    )


# ---------------------------------------------------------------- the queue in front


def _waiting(name: str, queue: str, amount: int, priority: int, minutes: int) -> dict[str, object]:
    created = NOW + timedelta(minutes=minutes)
    return pending_document(name, queue, {TPU: "4"}, count=amount // 4, priority=priority, created=created)


def test_position_counts_higher_priority_and_earlier_equal_priority() -> None:
    pending = (
        _waiting("w-high", "team-a", 512, GUARANTEED + 1, 90),  # higher priority: ahead, though newer
        _waiting("w-early", "team-a", 512, GUARANTEED, 5),  # same priority, earlier: ahead
        _waiting("w-late", "team-a", 512, GUARANTEED, 120),  # same priority, later: behind
        _waiting("w-low", "team-a", 512, BEST_EFFORT, 0),  # lower priority: behind
        _waiting("w-other", "team-b", 512, GUARANTEED, 0),  # another queue
    )
    result = simulate(rfc_state(pending=pending), tpu_job("team-a", 8, GUARANTEED))
    assert (result.position.ahead, result.position.chips_ahead) == (2, 1024)
    # both ahead exceed every quota: they never go first, so the start stands (BestEffortFIFO)
    assert result.outcome == "admit"
    assert result.to_json()["position"] == {"ahead": 2, "chipsAhead": 1024}


def test_strict_fifo_waits_behind_a_head_that_does_not_fit() -> None:
    st = state(
        [team("team-a", strategy="StrictFIFO"), team("team-b"), team("team-c")],
        workloads=[_waiting("w-early", "team-a", 512, GUARANTEED, 5)],
        flavors=[TPU7X],
    )
    result = simulate(st, tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.reason, result.position.ahead) == ("wait", "StrictFIFO", 1)
    assert result.warning() == (
        "[simulate] will wait: behind 1 Workload in StrictFIFO ClusterQueue team-a, whose head default/w-early "
        "does not fit now"
    )


def test_strict_fifo_starts_after_heads_that_fit() -> None:
    st = state(
        [team("team-a", strategy="StrictFIFO"), team("team-b"), team("team-c")],
        workloads=[_waiting("w-early", "team-a", 64, GUARANTEED, 5)],
        flavors=[TPU7X],
    )
    result = simulate(st, tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.message) == (
        "admit",
        "fits now in ClusterQueue team-a on tpu7x, once 1 Workload ahead of it is admitted first",
    )


def test_best_effort_fifo_admits_those_ahead_that_fit_first() -> None:
    """The one ahead fits and goes first with its usage; the job still fits after it."""
    pending = (_waiting("w-early", "team-a", 64, GUARANTEED, 5),)
    result = simulate(rfc_state(pending=pending), tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.message) == (
        "admit",
        "fits now in ClusterQueue team-a on tpu7x, once 1 Workload ahead of it is admitted first",
    )


def test_best_effort_fifo_waits_when_those_ahead_take_the_room() -> None:
    """Two ahead of 128 chips each fit one after the other and fill team-a's 256 and its 128 to borrow
    but one: the job's 8 chips no longer fit."""
    st = rfc_state(
        chips("a-1", "team-a", 124, GUARANTEED),
        pending=(
            _waiting("w-1", "team-a", 128, GUARANTEED, 1),
            _waiting("w-2", "team-a", 128, GUARANTEED, 2),
        ),
    )
    alone = simulate(rfc_state(chips("a-1", "team-a", 124, GUARANTEED)), tpu_job("team-a", 8, GUARANTEED))
    result = simulate(st, tpu_job("team-a", 8, GUARANTEED))
    assert alone.outcome == "admit"
    assert (result.outcome, result.reason) == ("wait", "WaitingForQuota")
    assert result.message.startswith("once 2 Workloads ahead of it are admitted first: needs 8 ")


def test_best_effort_fifo_is_unknown_when_one_ahead_would_preempt_first() -> None:
    st = rfc_state(
        chips("a-1", "team-a", 256, BEST_EFFORT),
        chips("b-1", "team-b", 256, BEST_EFFORT),
        chips("c-1", "team-c", 256, BEST_EFFORT),
        pending=(_waiting("w-early", "team-a", 64, GUARANTEED, 5),),
    )
    result = simulate(st, tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.message) == (
        "unknown",
        "Workload default/w-early, ahead of it in ClusterQueue team-a, could be admitted first by preempting",
    )


def test_a_long_queue_that_cannot_start_is_passed_and_the_state_is_left_as_it_was() -> None:
    """Eighty ahead, each beyond the queue's potential: BestEffortFIFO lets the small job pass them all."""
    pending = tuple(_waiting(f"w-{i}", "team-a", 512 + 64 * (i % 3), GUARANTEED, i // 2) for i in range(80))
    st = rfc_state(pending=pending)
    simulator = Simulator(st)
    before = {name: dict(node.usage) for name, node in simulator.tree.queues.items()}
    result = simulator.simulate(tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.position.ahead) == ("admit", 80)
    assert result.message == (
        "fits now in ClusterQueue team-a on tpu7x; 80 Workloads ahead of it cannot start now: BestEffortFIFO lets "
        "it pass them"
    )
    assert {name: dict(node.usage) for name, node in simulator.tree.queues.items()} == before


def test_a_queue_in_front_is_tried_once_per_shape() -> None:
    """Workloads of one shape and priority that do not fit cost one assignment, however many."""
    pending = tuple(_waiting(f"w-{i}", "team-a", 512 + 64 * (i % 3), GUARANTEED, i // 6) for i in range(300))
    simulator = Simulator(rfc_state(pending=pending))
    tried: list[object] = []
    original = engine.FlavorAssigner.assign

    def counting(self: engine.FlavorAssigner, podsets: object) -> object:
        tried.append(podsets)
        return original(self, podsets)  # type: ignore[arg-type]

    engine.FlavorAssigner.assign = counting  # type: ignore[assignment,method-assign]
    try:
        result = simulator.simulate(tpu_job("team-a", 8, GUARANTEED))
    finally:
        engine.FlavorAssigner.assign = original  # type: ignore[method-assign]
    assert result.outcome == "admit"
    assert len(tried) == 1 + 3  # the job, then each of the three shapes in front


# ---------------------------------------------------------------- the answer


def test_json_has_exactly_the_contract_keys() -> None:
    st = rfc_state(
        chips("a-high", "team-a", 156, GUARANTEED),
        chips("a-low", "team-a", 100, BEST_EFFORT),
        chips("b-1", "team-b", 256, BEST_EFFORT),
        chips("c-1", "team-c", 256, BEST_EFFORT),
    )
    result = Simulator(st).simulate(tpu_job("team-a", 100, GUARANTEED), kind="JobSet", source="job.yaml")  # type: ignore[arg-type]
    assert json.loads(json.dumps(result.to_json())) == {
        "source": "job.yaml",
        "kind": "JobSet",
        "namespace": "default",
        "name": "in",
        "outcome": "preempt",
        "reason": "",
        "clusterQueue": "team-a",
        "podSets": [{"name": "main", "count": 25, "flavors": {TPU: "tpu7x"}, "borrows": 0}],
        "preemptions": [
            {"workload": "/a-low", "clusterQueue": "team-a", "priority": BEST_EFFORT, "reason": "InClusterQueue"}
        ],
        "position": {"ahead": 0, "chipsAhead": 0},
        "message": "fits in ClusterQueue team-a once 1 Workload is preempted",
        "holders": None,
    }


def test_text_puts_the_outcome_first_then_the_numbers() -> None:
    st = rfc_state(
        chips("a-1", "team-a", 256, GUARANTEED),
        chips("b-1", "team-b", 256, BEST_EFFORT),
        chips("c-1", "team-c", 256, BEST_EFFORT),
    )
    text = simulate(st, tpu_job("team-a", 100, GUARANTEED)).text().splitlines()
    assert text[0] == "WAIT (WaitingForQuota)  Workload default/in"
    assert text[1:] == [
        "  ClusterQueue team-a",
        "  needs 100 google.com/tpu on tpu7x; ClusterQueue team-a uses 256 of 256, cohort tpu-pool lends 0;"
        " no preemption Kueue would make frees enough",
        "  podSet main ×25: no flavor fits yet",
        "  google.com/tpu on tpu7x: needs 100, queue uses 256 of nominal 256, cohort tpu-pool lends 0",
        "  largest users: team-a 256, team-b 256, team-c 256",
        "  largest in team-a: /a-1 256",
    ]


@pytest.mark.parametrize("fair", [True, False])
def test_simulating_changes_nothing(fair: bool) -> None:
    """The tree's usage is the same after any number of answers (every removal is put back)."""
    st = rfc_state(
        chips("a-1", "team-a", 128, GUARANTEED),
        chips("b-1", "team-b", 256, BEST_EFFORT, 0),
        chips("b-2", "team-b", 64, BEST_EFFORT, 1),
        chips("b-3", "team-b", 64, BEST_EFFORT, 2),
        chips("c-1", "team-c", 256, GUARANTEED),
        fair=fair,
    )
    simulator = Simulator(st)
    before = {n: dict(node.usage) for n, node in (*simulator.tree.queues.items(), *simulator.tree.cohorts.items())}
    first = simulator.simulate(tpu_job("team-a", 128, GUARANTEED))  # type: ignore[arg-type]
    for amount in (4, 100, 128, 300, 400):
        simulator.simulate(tpu_job("team-a", amount, GUARANTEED))  # type: ignore[arg-type]
    after = {n: dict(node.usage) for n, node in (*simulator.tree.queues.items(), *simulator.tree.cohorts.items())}
    assert after == before
    assert simulator.simulate(tpu_job("team-a", 128, GUARANTEED)) == first  # type: ignore[arg-type]


def test_flavor_the_job_cannot_use_is_never_no_matching_flavor() -> None:
    flavor = {**TPU7X, "spec": {**TPU7X["spec"], "tolerations": []}}  # type: ignore[dict-item]
    flavor["spec"]["nodeTaints"] = [{"key": TPU, "value": "present", "effect": "NoSchedule"}]
    assert parse_flavor(flavor).node_taints
    st = state(TEAMS, flavors=[flavor])
    result = simulate(st, tpu_job("team-a", 8, GUARANTEED))
    assert (result.outcome, result.reason) == ("never", "NoMatchingFlavor")
    assert "does not tolerate" in result.message


def test_a_workload_already_holding_quota_is_admitted_as_it_is() -> None:
    """Simulating a stored Workload that already holds quota counts it once, not twice."""
    held = admitted("in", "team-a", {TPU: "256"}, flavor="tpu7x", namespace="default")
    result = simulate(rfc_state(held), tpu_job("team-a", 256, GUARANTEED))
    assert (result.outcome, result.message) == (
        "admit",
        "Workload default/in already holds quota in ClusterQueue team-a",
    )


@pytest.mark.parametrize("fair", [True, False])
def test_a_search_past_its_budget_is_unknown_and_changes_nothing(fair: bool) -> None:
    """However many candidates the state holds, one answer examines a bounded number of them."""
    workloads = [chips(f"a-{i}", "team-a", 8, BEST_EFFORT, i) for i in range(32)]
    st = rfc_state(
        *workloads, chips("b-1", "team-b", 384, GUARANTEED), chips("c-1", "team-c", 128, GUARANTEED), fair=fair
    )
    roomy = Simulator(st).simulate(tpu_job("team-a", 64, GUARANTEED))  # type: ignore[arg-type]
    assert (roomy.outcome, len(roomy.preemptions)) == ("preempt", 8)
    tight = Simulator(st, budget=5)
    before = {n: dict(node.usage) for n, node in tight.tree.queues.items()}
    result = tight.simulate(tpu_job("team-a", 64, GUARANTEED))  # type: ignore[arg-type]
    assert (result.outcome, result.message) == ("unknown", "the preemption search passed 5 candidates and was stopped")
    assert {n: dict(node.usage) for n, node in tight.tree.queues.items()} == before


def test_a_workload_beyond_kueues_schema_never_starts_naming_the_limit() -> None:
    """The API server refuses such a Workload, so Kueue cannot create it: ``never``, whatever the quota."""
    cpu = {"cpu": "1"}
    wide = job("team-a", cpu, podsets=[(f"p{i}", 1, cpu) for i in range(19)])
    result = simulate(rfc_state(), wide)
    assert (result.outcome, result.reason, result.cluster_queue, result.message) == (
        "never",
        "Misconfigured",
        "",
        "beyond Kueue's Workload schema: 19 podSets, but a Kueue Workload holds at most 18 (spec.podSets maxItems)",
    )
    odd = job("team-a", cpu, podsets=[("Main_1", 1, cpu), ("big", 2**31, cpu)])
    assert simulate(rfc_state(), odd).message == (
        "beyond Kueue's Workload schema: podSet name 'Main_1' is not a valid Workload podSet name (at most 63 "
        "lower-case letters, digits and '-', starting and ending with a letter or digit); podSet 'big' counts "
        "2147483648 pods, more than a Workload's int32 count (2147483647)"
    )
    at_limit = job("team-a", cpu, podsets=[(f"p{i}", 1, cpu) for i in range(18)])
    assert simulate(rfc_state(), at_limit).reason != "Misconfigured"


def test_a_workload_without_podsets_is_misconfigured() -> None:
    from webhook.kueue.workload import PendingWorkload

    empty = PendingWorkload("default/e", "e", "default", "team-a", 0, NOW, ())
    assert simulate(rfc_state(), empty).reason == "Misconfigured"


def test_a_wait_names_the_resource_and_flavor_that_is_short() -> None:
    """A CPU job past its nominal with nothing to reclaim and no borrowWithinCohort: it waits, and the
    numbers are cpu on the flavor it tried, with what the cohort lends now."""
    queues = [
        cluster_queue("q", {"one": {"cpu": ("2", "8")}}, cohort="c"),
        cluster_queue("other", {"one": {"cpu": "8"}}, cohort="c"),
    ]
    st = state(queues, workloads=[admitted("usage", "other", {"cpu": "7"}, flavor="one")])
    result = simulate(st, job("q", {"cpu": "4"}))
    assert (result.outcome, result.reason) == ("wait", "WaitingForQuota")
    assert result.numbers is not None
    n = result.numbers
    assert (n.flavor, n.resource, n.needs, n.uses, n.nominal, n.lends, n.cohort) == ("one", "cpu", 4, 0, 2, 1, "c")
    assert n.holders == (("other", 7),)
    assert result.warning() == "[simulate] will wait: q uses 0 of 2 one cpu, cohort c lends 1; held by other 7"


def test_a_wait_names_who_holds_the_quota_in_its_queue_and_its_cohort() -> None:
    """SPEC §12.5: what it needs, what is free, who holds the rest (the largest users in its queue and
    cohort): the three largest Workloads of its queue and ClusterQueues of its cohort tree."""
    st = rfc_state(
        chips("a-1", "team-a", 128, GUARANTEED),
        chips("a-2", "team-a", 64, GUARANTEED),
        chips("a-3", "team-a", 32, GUARANTEED),
        chips("a-4", "team-a", 32, GUARANTEED),
        chips("b-1", "team-b", 256, GUARANTEED),
        chips("c-1", "team-c", 200, GUARANTEED),
    )
    result = simulate(st, tpu_job("team-a", 100, GUARANTEED))
    assert (result.outcome, result.reason) == ("wait", "WaitingForQuota")
    assert result.to_json()["holders"] == {
        "flavor": "tpu7x",
        "resource": TPU,
        "clusterQueues": [
            {"name": "team-a", "amount": 256},
            {"name": "team-b", "amount": 256},
            {"name": "team-c", "amount": 200},
        ],
        "workloads": [
            {"name": "/a-1", "clusterQueue": "team-a", "amount": 128},
            {"name": "/a-2", "clusterQueue": "team-a", "amount": 64},
            {"name": "/a-3", "clusterQueue": "team-a", "amount": 32},
        ],
    }
    assert result.text().splitlines()[-2:] == [
        "  largest users: team-a 256, team-b 256, team-c 200",
        "  largest in team-a: /a-1 128, /a-2 64, /a-3 32",
    ]
    assert result.warning() == (
        "[simulate] will wait: team-a uses 256 of 256 tpu7x chips, cohort tpu-pool lends 56;"
        " held by team-a 256, team-b 256, team-c 200"
    )


def test_a_queue_without_a_cohort_names_its_largest_workloads_and_the_line_stays_short() -> None:
    """Names run to 253 characters: the line names at most three holders, clipped, on one line."""
    long = "w" * 240
    queues = [cluster_queue("q", {"one": {"cpu": "8"}})]
    workloads = [admitted(f"{long}-{i}", "q", {"cpu": str(i)}, flavor="one", namespace="ns") for i in (1, 2, 5)]
    result = simulate(state(queues, workloads=workloads), job("q", {"cpu": "4"}))
    assert (result.outcome, result.reason) == ("wait", "WaitingForQuota")
    assert [(w["name"], w["amount"]) for w in result.to_json()["holders"]["workloads"]] == [
        (f"ns/{long}-5", 5),
        (f"ns/{long}-2", 2),
        (f"ns/{long}-1", 1),
    ]
    line = result.warning()
    assert "\n" not in line and len(line) < 250
    assert line.startswith(f"[simulate] will wait: q uses 8 of 8 one cpu; held by ns/{long[:100]}")
    assert line.endswith("…")


def test_an_answer_that_is_not_a_wait_has_no_holders() -> None:
    st = rfc_state(chips("a-1", "team-a", 64, GUARANTEED))
    result = simulate(st, tpu_job("team-a", 64, GUARANTEED))
    assert (result.outcome, result.to_json()["holders"]) == ("admit", None)


def test_a_wait_for_quota_lent_out_says_the_queue_does_not_reclaim_it() -> None:
    """The job fits in its queue's own nominal quota, but the other queue of the cohort borrows all of
    it and its queue's reclaimWithinCohort is Never (Kueue's default): Kueue preempts nobody, the job
    waits for the borrower, and the answer says why its quota is not there and what would change it."""
    other = cluster_queue("other", {"one": {"cpu": "8"}}, cohort="c")
    borrower = [admitted("borrower", "other", {"cpu": "16"}, flavor="one")]
    st = state([cluster_queue("q", {"one": {"cpu": "8"}}, cohort="c"), other], workloads=borrower)
    result = simulate(st, job("q", {"cpu": "4"}, priority=100))
    assert (result.outcome, result.reason) == ("wait", "WaitingForQuota")
    assert result.numbers is not None and result.numbers.lent_out
    assert result.message.endswith(
        "its own nominal quota is borrowed by other queues of cohort c, and ClusterQueue q does not reclaim it "
        "(preemption.reclaimWithinCohort: Never): it starts when they give it back, or sooner with "
        "reclaimWithinCohort: LowerPriority or Any"
    )
    assert result.warning() == (
        "[simulate] will wait: q uses 0 of 8 one cpu, cohort c lends 0 (borrowed from q, which does not reclaim);"
        " held by other 16"
    )
    reclaims = cluster_queue("q", {"one": {"cpu": "8"}}, cohort="c", reclaim="Any")
    preempting = simulate(state([reclaims, other], workloads=borrower), job("q", {"cpu": "4"}, priority=100))
    assert (preempting.outcome, victims(preempting)) == ("preempt", {("borrower", "InCohortReclamation")})


def test_a_never_answer_shows_no_borrowing_and_kueues_quantities() -> None:
    """A queue outside any cohort borrows nothing, a job that never starts has no flavors, and
    memory reads as Kubernetes writes it."""
    st = state(
        [cluster_queue("q", {"on-demand": {"cpu": ("2", None), "memory": ("1Mi", None)}})],
        workloads=[admitted("a", "q", {"cpu": "2"}, flavor="on-demand")],
    )
    incoming = job("q", {}, podsets=[("a", 1, {"cpu": "1"}), ("b", 1, {"cpu": "1", "memory": "10Mi"})])
    result = simulate(st, incoming)
    assert result.text().splitlines() == [
        "NEVER (ExceedsMaxQuota)  Workload default/in",
        "  ClusterQueue q",
        "  podSet b: on-demand: memory in flavor on-demand: 10Mi > maximum capacity 1Mi",
        "  podSet a ×1: no flavor assigned",
        "  podSet b ×1: no flavor assigned",
    ]
    assert [p["borrows"] for p in result.to_json()["podSets"]] == [0, 0]


def test_two_waits_say_no_flavor_fits_yet_the_same_way() -> None:
    """Whether the assigner found a flavor that needs preemption nobody can make, or no flavor at all."""
    queues = [
        cluster_queue("q", {"on-demand": {"cpu": ("8", None)}}, cohort="c"),
        cluster_queue("r", {"on-demand": {"cpu": ("8", None)}}, cohort="c"),
    ]
    held = [admitted("a", "q", {"cpu": "6"}, flavor="on-demand"), admitted("b", "r", {"cpu": "8"}, flavor="on-demand")]
    needs_preemption = simulate(state(queues, workloads=held), job("q", {"cpu": "4"}))
    beyond_now = simulate(state(queues, workloads=held), job("q", {"cpu": "12"}))
    lines = [
        [line for line in r.text().splitlines() if "podSet main ×" in line] for r in (needs_preemption, beyond_now)
    ]
    assert [r.outcome for r in (needs_preemption, beyond_now)] == ["wait", "wait"]
    assert lines == [["  podSet main ×1: no flavor fits yet"], ["  podSet main ×1: no flavor fits yet"]]


def test_more_ahead_fitting_first_than_are_followed_is_unknown() -> None:
    small = tuple(
        pending_document(f"w-{i}", "team-a", {"cpu": "1"}, priority=GUARANTEED, created=NOW + timedelta(seconds=i))
        for i in range(engine.FIRST_FOLLOWED + 1)
    )
    queues = [cluster_queue("team-a", {"default": {"cpu": ("100000", None)}})]
    result = simulate(
        state(queues, workloads=small),
        job("team-a", {"cpu": "1"}, priority=GUARANTEED, created=NOW + timedelta(hours=1)),
    )
    assert (result.outcome, result.position.ahead) == ("unknown", engine.FIRST_FOLLOWED + 1)
    assert result.message.startswith(
        f"more than {engine.FIRST_FOLLOWED} Workloads ahead of it in ClusterQueue team-a fit now"
    )
    fewer = simulate(
        state(queues, workloads=small[:-1]),
        job("team-a", {"cpu": "1"}, priority=GUARANTEED, created=NOW + timedelta(hours=1)),
    )
    assert fewer.outcome == "admit"


def test_one_held_in_a_stopped_local_queue_does_not_go_first() -> None:
    """Kueue does not try a Workload its LocalQueue holds (stopPolicy): the job passes it, room intact."""
    local = {(NAMESPACE, name): LocalQueueInfo(NAMESPACE, name, name) for name in ("team-a", "team-b", "team-c")}
    local[(NAMESPACE, "held")] = LocalQueueInfo(NAMESPACE, "held", "team-a", "Hold")
    held = pending_document("w-held", "held", {TPU: "4"}, count=48, priority=GUARANTEED, created=NOW)
    st = state(TEAMS, workloads=[chips("a-1", "team-a", 128, GUARANTEED), held], flavors=[TPU7X], local_queues=local)
    result = simulate(st, tpu_job("team-a", 128, GUARANTEED))
    assert (result.outcome, result.position.ahead) == ("admit", 1)
    assert result.message.endswith("; 1 Workload ahead of it cannot start now: BestEffortFIFO lets it pass it")


# ---------------------------------------------------------------- found by the differential run against Kueue


def test_a_podset_that_exceeds_the_quota_before_one_with_no_flavor_names_exceeds_max_quota() -> None:
    """Kueue assigns podSets in order and stops at the first that fails: a later podSet's
    ``NoMatchingFlavor`` is never reached, the Workload's reason is the first's."""
    flavor_a = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "a"},
        "spec": {"nodeLabels": {"pool": "a"}},
    }
    st = state([cluster_queue("q", {"a": {"cpu": "8"}})], flavors=[flavor_a])
    document = pending_document("in", "q", {"cpu": "4"}, count=4)
    second = json.loads(json.dumps(document["spec"]["podSets"][0]))
    second["name"], second["count"] = "picky", 1
    second["template"]["spec"]["nodeSelector"] = {"pool": "b"}
    document["spec"]["podSets"].append(second)
    result = simulate(st, submitted_workload(document, TPU))
    assert (result.outcome, result.reason) == ("never", "ExceedsMaxQuota")
    document["spec"]["podSets"].reverse()  # the podSet with no flavor first: it decides
    result = simulate(st, submitted_workload(document, TPU))
    assert (result.outcome, result.reason) == ("never", "NoMatchingFlavor")


def test_a_flavor_that_borrows_deeper_for_one_resource_fits_whole_under_preemption_over_borrowing() -> None:
    """Kueue v0.19 ranks a flavor by its resources' worst mode under the queue's preference; with
    PreemptionOverBorrowing a deeper borrow ranks below a preemption, so cpu borrowed from the
    cohort outranks memory that needs a victim. The flavor's mode is then Fit, the podSet with it,
    and Kueue admits the job on the memory it lacks, preempting nobody. We answer as Kueue acts:
    naming victims Kueue would not take is the worse error. Without the preference the same job
    preempts."""

    def answer(preference: str | None) -> Result:
        queues = [
            cluster_queue(
                "q",
                {"f": {"memory": ("8", "0"), "cpu": ("0", "4")}},
                cohort="c",
                within="LowerPriority",
                preference=preference,
            ),
            cluster_queue("lender", {"f": {"memory": ("0", "0"), "cpu": ("4", None)}}, cohort="c"),
        ]
        held = [admitted("low", "q", {"memory": "8"}, flavor="f", priority=0)]
        return simulate(state(queues, workloads=held), job("q", {"memory": "4", "cpu": "1"}, priority=100))

    quirk, plain = answer("PreemptionOverBorrowing"), answer(None)
    assert (quirk.outcome, victims(quirk)) == ("admit", set())
    assert [dict(p.flavors) for p in quirk.podsets] == [{"cpu": "f", "memory": "f"}]
    assert (plain.outcome, victims(plain)) == ("preempt", {("low", "InClusterQueue")})


def test_a_flavors_later_resource_past_its_maximum_makes_it_never_after_an_earlier_one_waits() -> None:
    """Kueue checks every resource of a flavor, keeping the most severe reason: cpu short for
    now (borrowed quota in use, nobody to preempt) and memory past anything the queue could
    ever have is never (ExceedsMaxQuota). We stopped at cpu and said wait."""
    queues = [
        cluster_queue("q", {"f": {"cpu": ("0", "64"), "memory": ("16", "0")}}, cohort="c"),
        cluster_queue("lender", {"f": {"cpu": ("64", None), "memory": ("0", "0")}}, cohort="c"),
    ]
    held = [admitted("l", "lender", {"cpu": "64"}, flavor="f")]
    result = simulate(state(queues, workloads=held), job("q", {"cpu": "4", "memory": "64"}))
    assert (result.outcome, result.reason) == ("never", "ExceedsMaxQuota")
