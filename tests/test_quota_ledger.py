"""What counts as in use and as pending, as Kueue's cache counts it, and the guaranteed
balance built on it (``webhook.quota.ledger``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest

from webhook.kube.sharing import Sharing
from webhook.kueue.clusterqueue import parse_cluster_queue
from webhook.kueue.podset import PodSetDemand, podset_demand
from webhook.kueue.workload import FINISHED, HOLDS, IDLE, REPLACING, WAITS, read_workload
from webhook.quota.feasibility import Feasibility, PodSetFeasibility
from webhook.quota.ledger import (
    Balance,
    BalanceAnswer,
    ChipsLedger,
    Shortfall,
    add_pending,
    guaranteed_balance,
    guaranteed_shortfalls,
    pending_chips,
)

TPU = "google.com/tpu"


def workload(
    conditions: list[tuple[str, str, str]] | None = None, active: bool | None = None, admitted: bool = False
) -> dict[str, Any]:
    pod = {"containers": [{"name": "c", "resources": {"requests": {TPU: "4"}}}]}
    spec: dict[str, Any] = {
        "queueName": "q",
        "priorityClassRef": {"name": "guaranteed"},
        "podSets": [{"name": "workers", "count": 16, "template": {"spec": pod}}],
    }
    if active is not None:
        spec["active"] = active
    status: dict[str, Any] = {"conditions": [{"type": t, "status": s, "reason": r} for t, s, r in conditions or []]}
    if admitted:
        status["admission"] = {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "workers", "flavors": {TPU: "f"}, "resourceUsage": {TPU: "64"}}],
        }
    return {"metadata": {"name": "w", "namespace": "ns"}, "spec": spec, "status": status}


RESERVED = ("QuotaReserved", "True", "QuotaReserved")


@pytest.mark.parametrize(
    ("obj", "state"),
    [
        (workload([RESERVED], admitted=True), HOLDS),
        (workload([RESERVED, ("Finished", "True", "Succeeded")], admitted=True), FINISHED),
        (workload([RESERVED], active=False, admitted=True), IDLE),  # deactivated: Kueue releases its quota
        (workload(admitted=True), WAITS),  # an admission without QuotaReserved True holds nothing
        (workload(), WAITS),
        (workload([("QuotaReserved", "False", "Pending")]), WAITS),
        (workload([("QuotaReserved", "False", "Inadmissible")]), WAITS),
        # KEP-10852's reasons name a Workload still in its queue, as ``Pending`` does
        (workload([("QuotaReserved", "False", "ExceedsMaxQuota")]), WAITS),
        (workload([("QuotaReserved", "False", "WaitingForQuota")]), WAITS),
        (workload([("QuotaReserved", "False", "NoMatchingFlavor")]), WAITS),
        (workload([("QuotaReserved", "False", "OnHold")]), WAITS),
        (workload([("WaitingForReplacementPods", "True", "")]), REPLACING),
        (workload(active=False), IDLE),
    ],
    ids=[
        "reserved",
        "finished",
        "deactivated-while-reserved",
        "admission-without-reservation",
        "waiting",
        "pending",
        "inadmissible",
        "exceeds-max-quota",
        "waiting-for-quota",
        "no-matching-flavor",
        "on-hold",
        "waiting-for-replacement-pods",
        "inactive",
    ],
)
def test_a_workload_counts_as_kueue_counts_it(obj: dict[str, Any], state: str) -> None:
    assert read_workload(obj, TPU).state == state


def test_the_ledger_moves_by_the_difference() -> None:
    ledger = ChipsLedger("guaranteed")
    shared = Sharing().share  # the store's table
    holding, waiting = (
        read_workload(workload([RESERVED], admitted=True), TPU, shared),
        read_workload(workload(), TPU, shared),
    )
    ledger.move("ns", holding, +1)
    ledger.move("ns", waiting, +1)
    ledger.move("ns", waiting, +1)
    assert ledger.in_use == {("cq", "f"): 64} and ledger.holding == {("cq", "f"): 64}
    [(shape, count)] = ledger.waiting_for("ns", "q")
    assert count == 2 and shape[0].total(TPU) == 64
    assert read_workload(workload(), TPU, shared).shape is shape  # identical podSets share one shape
    for entry in (holding, waiting, waiting):
        ledger.move("ns", entry, -1)
    assert not ledger.in_use and not ledger.holding and ledger.waiting_for("ns", "q") == []


FITS = Feasibility((PodSetFeasibility("workers", {TPU: "f"}, "fit"),))
NOFIT = Feasibility((PodSetFeasibility("workers", {}, "nofit"),))


def test_the_guaranteed_balance_is_nominal_less_holding_and_pending() -> None:
    """Pending chips count on the flavor the assignment gives them, and only when they could ever fit."""
    ledger = ChipsLedger("guaranteed")
    ledger.move("ns", read_workload(workload([RESERVED], admitted=True), TPU), +1)  # cq holds 64 on f
    ledger.move("ns", read_workload(workload(), TPU), +1)  # 64 more wait in LocalQueue q
    flavor = {"name": "f", "resources": [{"name": TPU, "nominalQuota": "256"}]}
    spec = {"resourceGroups": [{"coveredResources": [TPU], "flavors": [flavor]}]}
    queue = parse_cluster_queue({"metadata": {"name": "cq"}, "spec": spec})
    local_queues = [("ns", "q")]
    pending = pending_chips(ledger, local_queues, lambda shape: FITS, TPU)
    assert pending == {"f": 64}
    balance = guaranteed_balance(ledger, "cq", queue, "f", TPU, pending)
    assert balance == Balance(256, 64, 64) and balance.left == 128
    assert pending_chips(ledger, local_queues, lambda shape: NOFIT, TPU) == {}
    assert guaranteed_balance(ledger, "cq", queue, "f", TPU, {}).waiting == 0
    assert guaranteed_balance(ledger, "cq", queue, "other", TPU, pending) == Balance(0, 0, 0)
    # the ClusterQueue object gone: no nominal, but what its Workloads hold still counts
    assert guaranteed_balance(ledger, "cq", None, "f", TPU, {}) == Balance(0, 64, 0)
    # the Workloads unknown: the nominal, an upper bound
    unknown = guaranteed_balance(ledger, "cq", queue, "f", TPU, pending, "Workloads: x")
    assert unknown == Balance(256, 0, 0, "Workloads: x")


def test_pending_chips_move_by_one_shape_at_a_time() -> None:
    """What an event adds and takes away, one Workload at a time, is what summing from the ledger gives."""
    shape = read_workload(workload(), TPU).shape
    sums: dict[str, int] = {}
    add_pending(sums, FITS, shape, TPU, +1)
    add_pending(sums, FITS, shape, TPU, +1)
    add_pending(sums, NOFIT, shape, TPU, +1)  # never fits: counts nowhere
    assert sums == {"f": 128}
    add_pending(sums, FITS, shape, TPU, -2)
    assert sums == {}


@dataclass
class Answers:
    """The two answers ``guaranteed_shortfalls`` reads of the cluster."""

    plain: Feasibility
    within: Feasibility
    balances: dict[str, Balance]

    def assign(self, cluster_queue: str, podsets: Sequence[PodSetDemand], within_balance: bool = False) -> Feasibility:
        return self.within if within_balance else self.plain

    def balance(self, cluster_queue: str, flavor: str) -> Balance:
        return self.balances[flavor]


def test_a_guaranteed_job_falls_short_only_when_no_choice_holds_it_within_the_balance() -> None:
    podsets = [podset_demand("workers", {}, 16, {TPU: Decimal(4)})]
    tight = {"f": Balance(128, 64, 32)}  # 32 left, the job needs 64
    unsure = Feasibility((PodSetFeasibility("workers", {TPU: "f"}, "unknown"),), "unknown", "the cohort tree")
    unknown = Feasibility((PodSetFeasibility("workers", {}, "unknown"),), "unknown", "the search's limit")
    nofit = Feasibility((PodSetFeasibility("workers", {}, "fit"),), "nofit")
    assert guaranteed_shortfalls(Answers(NOFIT, NOFIT, tight), "cq", podsets, TPU) == BalanceAnswer()  # never fits
    assert guaranteed_shortfalls(Answers(FITS, FITS, tight), "cq", podsets, TPU) == BalanceAnswer()  # a choice holds it
    [short] = guaranteed_shortfalls(Answers(FITS, nofit, tight), "cq", podsets, TPU).shortfalls
    assert (short.flavor, short.needed, short.left) == ("f", Decimal(64), 32)
    # whether the quota holds it is uncertain, but no choice the quota might allow is within the balance
    [short] = guaranteed_shortfalls(Answers(unsure, nofit, tight), "cq", podsets, TPU).shortfalls
    assert short.flavor == "f"
    assert guaranteed_shortfalls(Answers(unsure, unsure, tight), "cq", podsets, TPU).unknown == "the cohort tree"
    assert guaranteed_shortfalls(Answers(unknown, nofit, tight), "cq", podsets, TPU).unknown == "the search's limit"
    overdrawn = Shortfall("f", Decimal(64), Balance(128, 160, 0))
    assert overdrawn.balance.left == -32 and overdrawn.left == 0
    enough = {"f": Balance(128, 64, 0)}  # the balance itself holds it: nothing to say
    assert guaranteed_shortfalls(Answers(FITS, nofit, enough), "cq", podsets, TPU) == BalanceAnswer()
    cpu_only = [podset_demand("head", {}, 1, {"cpu": Decimal(4)})]  # takes no chips: no balance to judge
    assert guaranteed_shortfalls(Answers(unknown, unknown, tight), "cq", cpu_only, TPU) == BalanceAnswer()


def test_with_the_workloads_unknown_the_balance_is_bounded_by_the_nominal() -> None:
    """Usage only lowers the balance: without the Workloads, nominal is an upper bound of it."""
    ledger = ChipsLedger("guaranteed")
    flavor = {"name": "f", "resources": [{"name": TPU, "nominalQuota": "256"}]}
    spec = {"resourceGroups": [{"coveredResources": [TPU], "flavors": [flavor]}]}
    queue = parse_cluster_queue({"metadata": {"name": "cq"}, "spec": spec})
    balance = guaranteed_balance(ledger, "cq", queue, "f", TPU, {}, "Workloads: not watched")
    assert balance == Balance(256, 0, 0, "Workloads: not watched") and balance.left == 256
    bound = balance.bound()
    assert (bound.value, bound.floor, bound.decided_by) == (256, 0, "Workloads: not watched")
    assert bound.holds(Decimal(384)) is False and bound.holds(Decimal(128)) is None
    known = Balance(256, 192, 0).bound()
    assert known.exact and known.holds(Decimal(64)) and known.holds(Decimal(65)) is False


# ---------------------------------------------------------------- topologyAssignment


def _placed_entry(topology: Any, finished: bool = False) -> Any:
    conditions = [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"}]
    if finished:
        conditions.append({"type": "Finished", "status": "True", "reason": "Succeeded"})
    assignment: dict[str, Any] = {"name": "w", "flavors": {TPU: "f"}, "resourceUsage": {TPU: "64"}}
    if topology is not None:
        assignment["topologyAssignment"] = topology
    status = {"conditions": conditions, "admission": {"clusterQueue": "q", "podSetAssignments": [assignment]}}
    return read_workload({"metadata": {"name": "w"}, "spec": {"queueName": "lq"}, "status": status}, TPU)


POOL, HOST = "cloud.google.com/gke-nodepool", "kubernetes.io/hostname"


@pytest.mark.parametrize(
    ("topology", "placed"),
    [
        # kueue.x-k8s.io_workloads.yaml v1beta2 (``slices``): examples 1, 2 and 3 of the field's description
        (
            {
                "levels": ["block", "rack"],
                "slices": [
                    {
                        "domainCount": 2,
                        "valuesPerLevel": [
                            {"individual": {"roots": ["block-1", "block-1"]}},
                            {"individual": {"roots": ["rack-1", "rack-2"]}},
                        ],
                        "podCounts": {"individual": [4, 2]},
                    }
                ],
            },
            (("rack", "rack-1"), ("rack", "rack-2")),
        ),
        (
            {
                "levels": ["block", "rack"],
                "slices": [
                    {
                        "domainCount": 2,
                        "valuesPerLevel": [
                            {"universal": "block-1"},
                            {"individual": {"prefix": "rack-", "roots": ["1", "2"]}},
                        ],
                        "podCounts": {"individual": [4, 2]},
                    }
                ],
            },
            (("rack", "rack-1"), ("rack", "rack-2")),
        ),
        (
            {
                "levels": [HOST],
                "slices": [
                    {
                        "domainCount": 2,
                        "valuesPerLevel": [{"individual": {"prefix": "b-1-", "roots": ["1", "2"], "suffix": "-n"}}],
                        "podCounts": {"universal": 1},
                    },
                    {"domainCount": 1, "valuesPerLevel": [{"universal": "other"}], "podCounts": {"universal": 1}},
                ],
            },
            ((HOST, "b-1-1-n"), (HOST, "b-1-2-n"), (HOST, "other")),
        ),
        # the node-pool level is kept over a lower one: a static slice is a whole pool
        (
            {
                "levels": [POOL, HOST],
                "slices": [
                    {
                        "domainCount": 2,
                        "valuesPerLevel": [{"universal": "p1"}, {"individual": {"roots": ["h1", "h2"]}}],
                        "podCounts": {"universal": 1},
                    }
                ],
            },
            ((POOL, "p1"),),
        ),
        # v1beta1's ``domains``
        (
            {"levels": [POOL], "domains": [{"values": ["p1"], "count": 16}, {"values": ["p2"], "count": 16}]},
            ((POOL, "p1"), (POOL, "p2")),
        ),
        (None, ()),  # no topology-aware scheduling: it holds no domain
        # what cannot be read is None, never "nothing held"
        ({"levels": [], "slices": []}, None),
        ({"levels": [POOL], "slices": "p1"}, None),
        (
            {"levels": [POOL], "slices": [{"domainCount": 2, "valuesPerLevel": [{"individual": {"roots": ["p1"]}}]}]},
            None,
        ),
        (
            {
                "levels": [POOL],
                "slices": [{"domainCount": 1, "valuesPerLevel": [{"universal": "p1", "individual": {}}]}],
            },
            None,
        ),
        ({"levels": [POOL, HOST], "domains": [{"values": ["p1"], "count": 1}]}, None),
    ],
)
def test_a_topology_assignment_is_kept_as_the_domains_it_holds(topology: Any, placed: Any) -> None:
    entry = _placed_entry(topology)
    assert (entry.state, entry.placed) == (HOLDS, placed)


def test_a_finished_workload_holds_no_domain() -> None:
    assert _placed_entry({"levels": [POOL], "domains": [{"values": ["p1"], "count": 1}]}, finished=True).placed == ()
