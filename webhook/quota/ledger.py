"""The chips ledger over the Workloads' one projection, and the guaranteed balance.

A cached Workload is its ``webhook.kueue.workload.WorkloadInfo``, read once per watch
event; what counts as in use (``HOLDS``) and as pending (``WAITS``) is decided there, as
Kueue's cache decides it. Each watch event moves the ledger's counters by the difference
between the old and the new projection, so a request reads counters instead of summing
Workloads. Pending Workloads are kept by
LocalQueue and podSet shape; which ClusterQueue and flavor they would use (and whether they
could ever fit at all, else they do not count either) is resolved by the quota model when a
request reads the balance, because that depends on objects that may arrive later or change.

The **guaranteed balance** is ours, not Kueue's (RFC-0033: beyond its nominal quota a
guaranteed job runs without its preemption privilege): a ClusterQueue's nominal TPU quota
on a flavor − guaranteed chips in use there − guaranteed chips pending there, the pending
ones on the flavor Kueue's flavor assignment gives them (``webhook.quota.feasibility``).
A guaranteed job is over the balance only when no choice of flavors Kueue could make
(``webhook.quota.feasibility``) holds its chips within the balance of each flavor.
When the Workloads cannot be read the balance is known only from above: usage can only
lower it, so the nominal quota bounds it, and a job beyond the nominal of every flavor it
could get is over it all the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from webhook.kube.quantity import CONTEXT
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.podset import PodSetDemand
from webhook.kueue.potential import Bound
from webhook.kueue.workload import HOLDS, WAITS, ZERO, Shape, WorkloadInfo
from webhook.quota.feasibility import Assigns, Feasibility
from webhook.quota.table import Table


class LedgerView(Protocol):
    """What the quota model and the guaranteed balance read of the counted Workloads (a ``ChipsLedger``)."""

    @property
    def in_use(self) -> Mapping[tuple[str, str], int]:
        """Every priority's chips holding quota per (ClusterQueue, flavor)."""

    @property
    def holding(self) -> Mapping[tuple[str, str], int]: ...

    def waiting_for(self, namespace: str, local_queue: str) -> list[tuple[Shape, int]]: ...


class ChipsLedger:
    """What the Workloads hold and wait for, moved by each one's difference.

    Usage per (ClusterQueue, flavor, resource) of every admitted Workload (Kueue's cache
    keeps the same per ClusterQueue), TPU chips in use per (ClusterQueue, flavor), and
    guaranteed Workloads by state. The store owns one and moves it under its lock; a
    snapshot holds a ``copy``, which nothing moves. The counts are ``Table``s, so a copy
    costs the same at 10 queues and at 10,000.
    """

    def __init__(self, guaranteed: str) -> None:
        self.guaranteed = guaranteed
        #: every priority's usage holding quota: (ClusterQueue, flavor, resource) -> amount
        self.usage: Table[tuple[str, str, str], Decimal] = Table()
        #: every priority's chips holding quota
        self.in_use: Table[tuple[str, str], int] = Table()
        #: guaranteed chips holding quota
        self.holding: Table[tuple[str, str], int] = Table()
        #: guaranteed Workloads waiting: (namespace, LocalQueue) -> shape -> how many (each
        #: inner map replaced, never changed, when it moves)
        self.waiting: Table[tuple[str, str], dict[Shape, int]] = Table()

    def move(self, namespace: str, entry: WorkloadInfo | None, sign: int) -> None:
        """Add (``sign=1``) or remove (``-1``) one entry's contribution."""
        if entry is None:
            return
        guaranteed = entry.priority == self.guaranteed
        if entry.state == HOLDS:
            for flavor, resource, amount in entry.usage:
                key3 = (entry.cluster_queue, flavor, resource)
                total = CONTEXT.add(self.usage.get(key3) or ZERO, CONTEXT.multiply(sign, amount))
                if total:
                    self.usage[key3] = total
                else:
                    self.usage.pop(key3)
            for flavor, chips in entry.chips:
                key = (entry.cluster_queue, flavor)
                _bump(self.in_use, key, sign * chips)
                if guaranteed:
                    _bump(self.holding, key, sign * chips)
        elif entry.state == WAITS and guaranteed:
            where = (namespace, entry.local_queue)
            queue = dict(self.waiting.get(where) or {})
            count = queue.get(entry.shape, 0) + sign
            if count:
                queue[entry.shape] = count
            else:
                queue.pop(entry.shape, None)
            if queue:
                self.waiting[where] = queue
            else:
                self.waiting.pop(where)

    def waiting_for(self, namespace: str, local_queue: str) -> list[tuple[Shape, int]]:
        queue = self.waiting.get((namespace, local_queue))
        return list(queue.items()) if queue else []

    def copy(self) -> ChipsLedger:
        """A ledger with the same counts that moves on its own (a snapshot's; ``audit``'s view less some Workloads)."""
        out = ChipsLedger.__new__(ChipsLedger)
        out.guaranteed = self.guaranteed
        out.usage, out.in_use, out.holding = self.usage.fork(), self.in_use.fork(), self.holding.fork()
        out.waiting = self.waiting.fork()
        return out


def _bump(counter: Table[tuple[str, str], int], key: tuple[str, str], delta: int) -> None:
    total = (counter.get(key) or 0) + delta
    if total:
        counter[key] = total
    else:
        counter.pop(key)


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
    ledger: LedgerView,
    local_queues: Iterable[tuple[str, str]],
    assign: Callable[[Shape], Feasibility],
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


def add_pending(sums: dict[str, int], assignment: Feasibility, shape: Shape, tpu: str, count: int) -> None:
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
    ledger: LedgerView,
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
