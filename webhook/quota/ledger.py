"""Workloads as the quota model needs them, the chips ledger, and the guaranteed balance.

A cached Workload is a ``WorkloadEntry`` (a few slots, strings and podSet shapes
interned), never the whole object: at 100,000 Workloads that is the difference between
~40 MB and several GB. Each watch event moves the ledger's counters by the difference
between the old and the new entry, so a request reads counters instead of summing
Workloads.

What counts, as Kueue's cache counts it (``pkg/workload``: ``HasActiveQuotaReservation``,
``IsAdmissible``):

- **in use** (``HOLDS``): condition ``QuotaReserved`` is True, ``Finished`` is not True,
  and ``spec.active`` is not false. Its chips are read from ``status.admission``
  (``podSetAssignments[].resourceUsage`` on ``flavors``), so the flavor is Kueue's own.
- **pending** (``WAITS``): no active reservation, not finished, ``spec.active`` not false,
  ``WaitingForReplacementPods`` not True, and not marked inadmissible by Kueue: a
  ``QuotaReserved`` False condition with reason ``Inadmissible``, ``OnHold``,
  ``ExceedsMaxQuota``, ``NoMatchingFlavor`` or ``Misconfigured`` leaves it out. Pending
  Workloads are kept by LocalQueue and podSet shape; which ClusterQueue and flavor they
  would use (and whether they could ever fit at all, else they do not count either) is
  resolved by the quota model when a request reads the balance, because that depends on
  objects that may arrive later or change.
- everything else (finished, deactivated, inadmissible) does not count.

The **guaranteed balance** is ours, not Kueue's (RFC-0033: beyond its nominal quota a
guaranteed job runs without its preemption privilege): a ClusterQueue's nominal TPU quota
on a flavor − guaranteed chips in use there − guaranteed chips pending there, the pending
ones on the flavor Kueue's flavor assignment gives them (``webhook.quota.flavorassigner``).
A guaranteed job is over the balance only when no choice of flavors Kueue could make
(``webhook.quota.flavorassigner``) holds its chips within the balance of each flavor.
When the Workloads cannot be read the balance is known only from above: usage can only
lower it, so the nominal quota bounds it, and a job beyond the nominal of every flavor it
could get is over it all the same.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from webhook.kube.quantity import quantity_or_none
from webhook.quota.flavorassigner import Assignment, Assigns
from webhook.quota.objects import ClusterQueueInfo
from webhook.quota.podsets import PodSetDemand, podset_demand
from webhook.quota.resource_node import Bound

ZERO = Decimal(0)
HOLDS, WAITS, IDLE, FINISHED, INADMISSIBLE = "holds", "waits", "idle", "finished", "inadmissible"

#: ``QuotaReserved=False`` reasons with which Kueue says the Workload cannot be admitted as it is
INADMISSIBLE_REASONS = frozenset({"Inadmissible", "OnHold", "ExceedsMaxQuota", "NoMatchingFlavor", "Misconfigured"})

Shape = tuple[PodSetDemand, ...]
_SHAPES: dict[Shape, Shape] = {}


def _intern(value: Any) -> str:
    return sys.intern(str(value)) if value else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class WorkloadEntry:
    """The projection of one Workload: its queue, priority, state and what it holds or asks."""

    __slots__ = ("chips", "cluster_queue", "local_queue", "priority", "shape", "state")

    def __init__(
        self,
        local_queue: str,
        cluster_queue: str,
        priority: str,
        state: str,
        chips: tuple[tuple[str, int], ...] = (),
        shape: Shape = (),
    ) -> None:
        self.local_queue = local_queue
        self.cluster_queue = cluster_queue
        self.priority = priority
        self.state = state
        #: holding quota: (flavor, chips) from the admission
        self.chips = chips
        #: waiting: its podSets, as the flavor assigner reads them
        self.shape = shape

    def __eq__(self, other: object) -> bool:
        """Same part in the ledger: a status-only update (most Workload events) moves nothing."""
        if not isinstance(other, WorkloadEntry):
            return NotImplemented
        return (
            self.state == other.state
            and self.local_queue == other.local_queue
            and self.cluster_queue == other.cluster_queue
            and self.priority == other.priority
            and self.chips == other.chips
            and self.shape == other.shape
        )

    __hash__ = None  # type: ignore[assignment]


def _conditions(status: Mapping[str, Any]) -> dict[str, tuple[bool, str]]:
    out = {}
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict):
            out[str(condition.get("type"))] = (condition.get("status") == "True", str(condition.get("reason") or ""))
    return out


def project(obj: Mapping[str, Any], tpu: str) -> WorkloadEntry:
    """A Workload object (``kueue.x-k8s.io/v1beta2``) reduced to what the ledger needs."""
    spec, status = _dict(obj.get("spec")), _dict(obj.get("status"))
    ref = spec.get("priorityClassRef")
    priority = _intern(ref.get("name")) if isinstance(ref, dict) else ""
    queue = _intern(spec.get("queueName"))
    conditions = _conditions(status)
    reserved, reason = conditions.get("QuotaReserved", (False, ""))
    if conditions.get("Finished", (False, ""))[0]:
        return WorkloadEntry(queue, "", priority, FINISHED)
    if spec.get("active", True) is False:
        return WorkloadEntry(queue, "", priority, IDLE)
    if reserved:
        admission = _dict(status.get("admission"))
        chips: list[tuple[str, int]] = []
        for assignment in map(_dict, admission.get("podSetAssignments") or ()):
            used = quantity_or_none(_dict(assignment.get("resourceUsage")).get(tpu))
            flavor = _dict(assignment.get("flavors")).get(tpu)
            if used and flavor:
                chips.append((_intern(flavor), int(used)))
        return WorkloadEntry(queue, _intern(admission.get("clusterQueue")), priority, HOLDS, tuple(chips))
    if reason in INADMISSIBLE_REASONS or conditions.get("WaitingForReplacementPods", (False, ""))[0]:
        return WorkloadEntry(queue, "", priority, INADMISSIBLE)
    podsets = []
    for podset in map(_dict, spec.get("podSets") or ()):
        pod = _dict(_dict(podset.get("template")).get("spec"))
        count = podset.get("count", 1)
        demand = podset_demand(str(podset.get("name", "")), pod, count if isinstance(count, int) else 1)
        if "topologyRequest" in podset or demand.total(tpu):  # as the rules judge a TPU podSet
            demand = podset_demand(demand.name, pod, demand.count, dict(demand.requests), tas=True)
        podsets.append(demand)
    shape = tuple(podsets)
    if len(_SHAPES) > 65536:  # shapes of Workloads long gone; live entries keep their own reference
        _SHAPES.clear()
    return WorkloadEntry(queue, "", priority, WAITS, shape=_SHAPES.setdefault(shape, shape))


class ChipsLedger:
    """Chips in use per (ClusterQueue, flavor), and guaranteed Workloads by state."""

    def __init__(self, guaranteed: str) -> None:
        self.guaranteed = guaranteed
        #: every priority's chips holding quota
        self.in_use: defaultdict[tuple[str, str], int] = defaultdict(int)
        #: guaranteed chips holding quota
        self.holding: defaultdict[tuple[str, str], int] = defaultdict(int)
        #: guaranteed Workloads waiting: (namespace, LocalQueue) -> shape -> how many
        self.waiting: defaultdict[tuple[str, str], dict[Shape, int]] = defaultdict(dict)

    def move(self, namespace: str, entry: WorkloadEntry | None, sign: int) -> None:
        """Add (``sign=1``) or remove (``-1``) one entry's contribution."""
        if entry is None:
            return
        guaranteed = entry.priority == self.guaranteed
        if entry.state == HOLDS:
            for flavor, chips in entry.chips:
                key = (entry.cluster_queue, flavor)
                _bump(self.in_use, key, sign * chips)
                if guaranteed:
                    _bump(self.holding, key, sign * chips)
        elif entry.state == WAITS and guaranteed:
            queue = self.waiting[(namespace, entry.local_queue)]
            queue[entry.shape] = queue.get(entry.shape, 0) + sign
            if not queue[entry.shape]:
                del queue[entry.shape]
            if not queue:
                del self.waiting[(namespace, entry.local_queue)]

    def waiting_for(self, namespace: str, local_queue: str) -> list[tuple[Shape, int]]:
        queue = self.waiting.get((namespace, local_queue))
        return list(queue.items()) if queue else []


def _bump(counter: defaultdict[tuple[str, str], int], key: tuple[str, str], delta: int) -> None:
    counter[key] += delta
    if not counter[key]:
        del counter[key]


# ---------------------------------------------------------------- the guaranteed balance


@dataclass(frozen=True, slots=True)
class Balance:
    """A ClusterQueue's guaranteed balance on one flavor: nominal − in use − pending (chips)."""

    nominal: int
    holding: int
    waiting: int
    #: why what its Workloads hold and wait for is unknown ("Workloads: …"); then ``left`` is an upper bound
    unknown: str = ""

    @property
    def left(self) -> int:
        return self.nominal - self.holding - self.waiting

    def bound(self) -> Bound:
        """The chips a guaranteed job could take within the balance, as the flavor assigner caps a flavor."""
        most = Decimal(max(self.left, 0))
        if not self.unknown:
            return Bound(
                most, f"its guaranteed balance: nominal {self.nominal} − in use {self.holding} − pending {self.waiting}"
            )
        why = f"its guaranteed balance: nominal {self.nominal} less what its guaranteed Workloads hold and wait for"
        return Bound(most, why, ZERO, self.unknown)


def pending_chips(
    ledger: ChipsLedger,
    local_queues: Iterable[tuple[str, str]],
    assign: Callable[[Shape], Assignment],
    tpu: str,
) -> dict[str, int]:
    """Per flavor, the guaranteed chips pending in a ClusterQueue, summed from the ledger.

    ``local_queues`` are the (namespace, name) of the LocalQueues that point to it, ``assign``
    its flavor assignment of a shape. A pending Workload counts on the flavors of the choice
    found, and only when it certainly fits (never-fitting and unknown ones do not count).
    """
    sums: dict[str, int] = {}
    for namespace, local_queue in local_queues:
        for shape, count in ledger.waiting_for(namespace, local_queue):
            add_pending(sums, assign(shape), shape, tpu, count)
    return sums


def add_pending(sums: dict[str, int], assignment: Assignment, shape: Shape, tpu: str, count: int) -> None:
    """Move ``sums`` (``pending_chips``) by ``count`` pending Workloads of ``shape`` (negative: gone)."""
    if not assignment.fits:
        return
    for flavor, chips in assignment.usage(shape, tpu).items():
        total = sums.get(flavor, 0) + count * int(chips)
        if total:
            sums[flavor] = total
        else:
            sums.pop(flavor, None)


def guaranteed_balance(
    ledger: ChipsLedger,
    cluster_queue: str,
    queue: ClusterQueueInfo | None,
    flavor: str,
    tpu: str,
    pending: Mapping[str, int],
    unknown: str = "",
) -> Balance:
    """The balance of ``cluster_queue``'s TPU quota on ``flavor``.

    ``queue`` is its object (``None``: no nominal quota), ``pending`` its guaranteed chips
    pending per flavor (``pending_chips``); ``unknown``: why the Workloads cannot be read
    (the balance is then its nominal, an upper bound).
    """
    quota = queue.quota(flavor, tpu) if queue is not None else None
    nominal = int(quota.nominal) if quota is not None else 0
    if unknown:
        return Balance(nominal, 0, 0, unknown)
    return Balance(nominal, ledger.holding.get((cluster_queue, flavor), 0), pending.get(flavor, 0))


class BalanceAnswers(Assigns, Protocol):
    """The flavor assignment and the balance as the rules reach them (``ClusterState``)."""

    def balance(self, cluster_queue: str, flavor: str) -> Balance: ...


@dataclass(frozen=True, slots=True)
class Shortfall:
    """A flavor whose guaranteed balance cannot hold the chips the job needs there."""

    flavor: str
    needed: Decimal
    balance: Balance

    @property
    def left(self) -> int:
        """The chips left in the balance (never below zero; with usage unknown, at most)."""
        return max(self.balance.left, 0)


@dataclass(frozen=True, slots=True)
class BalanceAnswer:
    """Whether a guaranteed job's chips fit the balance: the shortfalls (denied when some), or why unknown."""

    shortfalls: tuple[Shortfall, ...] = ()
    #: what is uncertain, and what would decide it (the rule is skipped)
    unknown: str = ""


def guaranteed_shortfalls(
    cluster: BalanceAnswers, cluster_queue: str, podsets: Sequence[PodSetDemand], tpu: str
) -> BalanceAnswer:
    """Per flavor (sorted), where a guaranteed job's chips exceed the queue's balance.

    None when the job never fits (``exceeds-queue-capacity`` says so), takes no chips, or
    some choice of flavors Kueue could make holds it within the balance. Shortfalls when no
    choice could: they are read off the first choice that could hold the job's quota
    (Kueue's own at zero usage when it fits), which exceeds the balance somewhere.
    """
    if not any(demand.total(tpu) for demand in podsets):
        return BalanceAnswer()
    plain = cluster.assign(cluster_queue, podsets)
    if plain.status == "nofit":
        return BalanceAnswer()
    chips = plain.usage(podsets, tpu)
    if plain.fits and not any(chips.values()):
        return BalanceAnswer()
    within = cluster.assign(cluster_queue, podsets, within_balance=True)
    if within.fits:
        return BalanceAnswer()
    if within.status == "unknown" or not chips:
        return BalanceAnswer(unknown=within.doubt or plain.doubt)
    shortfalls = []
    for flavor, needed in sorted(chips.items()):
        balance = cluster.balance(cluster_queue, flavor)
        if needed > max(balance.left, 0):
            shortfalls.append(Shortfall(flavor, needed, balance))
    return BalanceAnswer(tuple(shortfalls))
