"""Workloads as the quota model needs them, the chips ledger, and the guaranteed balance.

A cached Workload is a ``WorkloadEntry`` (a few slots, strings and podSet shapes
interned), never the whole object: on a large cluster that is the difference between
tens of megabytes and gigabytes. Each watch event moves the ledger's counters by the difference
between the old and the new entry, so a request reads counters instead of summing
Workloads.

What counts, as Kueue's cache counts it (``pkg/workload``: ``HasActiveQuotaReservation``,
``IsAdmissible``):

- **in use** (``HOLDS``): condition ``QuotaReserved`` is True, ``Finished`` is not True,
  and ``spec.active`` is not false. Its chips are read from ``status.admission``
  (``podSetAssignments[].resourceUsage`` on ``flavors``), so the flavor is Kueue's own;
  the topology domains its ``topologyAssignment`` places pods in are kept too (static
  mode's placement reads which node pools are held).
- **pending** (``WAITS``): no active reservation, not finished, ``spec.active`` not false,
  and ``WaitingForReplacementPods`` not True, whatever reason its ``QuotaReserved`` False
  condition gives: Kueue writes ``Pending``, ``Inadmissible`` or, with
  ``UnadmittedWorkloadsObservability`` (KEP-10852, on by default from v0.20), a token per
  cause (``WaitingForQuota``, ``ExceedsMaxQuota``, ``NoMatchingFlavor``, …), and every one
  of them names a Workload still in its queue, to be tried again when the cluster changes.
  Pending Workloads are kept by LocalQueue and podSet shape; which ClusterQueue and flavor they
  would use (and whether they could ever fit at all, else they do not count either) is
  resolved by the quota model when a request reads the balance, because that depends on
  objects that may arrive later or change.
- everything else (finished, deactivated, waiting for replacement pods) does not count.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from webhook.kube.jsonvalues import as_dict
from webhook.kube.quantity import CONTEXT, quantity_or_none
from webhook.kube.sharing import Share, unshared
from webhook.kube.topology import NODEPOOL_LABEL
from webhook.kueue.clusterqueue import ClusterQueueInfo
from webhook.kueue.potential import Bound
from webhook.quota.flavorassigner import Assignment, Assigns
from webhook.quota.podsets import PodSetDemand, podset_demand
from webhook.quota.table import Table

ZERO = Decimal(0)
HOLDS, WAITS, IDLE, FINISHED, REPLACING = "holds", "waits", "idle", "finished", "replacing"

Shape = tuple[PodSetDemand, ...]


def _intern(value: Any) -> str:
    return sys.intern(str(value)) if value else ""


class WorkloadEntry:
    """The projection of one Workload: what the ledger counts, and what Kueue's scheduler orders and preempts by.

    One per Workload held, so it keeps slots and shared values only: strings interned,
    usage and podSet shapes shared between the Workloads that have equal ones.
    """

    __slots__ = (
        "chips",
        "cluster_queue",
        "created",
        "evicted",
        "local_queue",
        "owner_kind",
        "owner_name",
        "placed",
        "priority",
        "priority_value",
        "reserved_at",
        "shape",
        "state",
        "uid",
        "usage",
    )

    def __init__(
        self,
        local_queue: str,
        cluster_queue: str,
        priority: str,
        state: str,
        chips: tuple[tuple[str, int], ...] = (),
        shape: Shape = (),
        *,
        uid: str = "",
        priority_value: int = 0,
        created: float = 0.0,
        reserved_at: float = 0.0,
        usage: Usage = (),
        owner_kind: str = "",
        owner_name: str = "",
        evicted: bool = False,
        placed: Placed | None = (),
    ) -> None:
        self.local_queue = local_queue
        self.cluster_queue = cluster_queue
        #: the priority class's name (``spec.priorityClassRef``)
        self.priority = priority
        self.state = state
        #: holding quota: (flavor, chips) from the admission
        self.chips = chips
        #: waiting: its podSets, as the flavor assigner reads them
        self.shape = shape
        self.uid = uid
        #: ``spec.priority``: the value Kueue orders and preempts by
        self.priority_value = priority_value
        #: ``metadata.creationTimestamp``, seconds since the epoch (0: unknown)
        self.created = created
        #: when its ``QuotaReserved`` condition turned True, seconds since the epoch (0: not reserved)
        self.reserved_at = reserved_at
        #: holding quota: (flavor, resource, amount) summed over its podSets, from the admission
        self.usage = usage
        #: its controller owner (the job Kueue made it for), when it names one
        self.owner_kind = owner_kind
        self.owner_name = owner_name
        #: holding quota with ``Evicted`` True: its eviction is under way (Kueue's preemptor tries it first)
        self.evicted = evicted
        #: holding quota: the topology domains its admission's ``topologyAssignment`` places pods in,
        #: as (node label, value) of the node-pool level, else of the lowest level (hostnames);
        #: ``None`` when a ``topologyAssignment`` is there but cannot be read
        self.placed = placed

    def __eq__(self, other: object) -> bool:
        """Same in every slot: a status-only update (most Workload events) changes nothing kept."""
        if not isinstance(other, WorkloadEntry):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]


#: (flavor, resource, amount) of an admitted Workload
Usage = tuple[tuple[str, str, Decimal], ...]
#: (node label, value) of the topology domains an admitted Workload's pods are placed in
Placed = tuple[tuple[str, str], ...]


def _conditions(status: Mapping[str, Any]) -> dict[str, tuple[bool, str, str]]:
    out = {}
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict):
            out[str(condition.get("type"))] = (
                condition.get("status") == "True",
                str(condition.get("reason") or ""),
                str(condition.get("lastTransitionTime") or ""),
            )
    return out


def _seconds(value: Any) -> float:
    """An RFC 3339 time as seconds since the epoch; 0 when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return 0.0


def _owner(metadata: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of the ``controller: true`` owner reference; ("", "") when none."""
    for reference in metadata.get("ownerReferences") or ():
        if isinstance(reference, dict) and reference.get("controller") is True:
            return _intern(reference.get("kind")), str(reference.get("name") or "")
    return "", ""


def _usage(admission: Mapping[str, Any]) -> Usage:
    """Per (flavor, resource), what the admission's podSets use (``resourceUsage`` on ``flavors``)."""
    sums: dict[tuple[str, str], Decimal] = {}
    for assignment in map(as_dict, admission.get("podSetAssignments") or ()):
        flavors = as_dict(assignment.get("flavors"))
        for resource, raw in as_dict(assignment.get("resourceUsage")).items():
            amount, flavor = quantity_or_none(raw), flavors.get(resource)
            if amount is not None and flavor:
                key = (_intern(flavor), _intern(resource))
                sums[key] = CONTEXT.add(sums.get(key, ZERO), amount)
    return tuple(sorted((flavor, resource, amount) for (flavor, resource), amount in sums.items()))


def _placed(admission: Mapping[str, Any], shared: Share) -> Placed | None:
    """The domains of every podSet's ``topologyAssignment`` (shared); ``None`` when one cannot be read."""
    found: set[tuple[str, str]] = set()
    for assignment in map(as_dict, admission.get("podSetAssignments") or ()):
        topology = assignment.get("topologyAssignment")
        if topology is None:
            continue
        domains = _domains(topology)
        if domains is None:
            return None
        found.update(domains)
    return shared(tuple(sorted(found)))


def _domains(topology: Any) -> set[tuple[str, str]] | None:
    """(label, value) per domain of one ``topologyAssignment``: v1beta2's ``slices`` (values per level,
    each ``universal`` or ``individual`` prefix + roots + suffix) or v1beta1's ``domains`` (values)."""
    levels = topology.get("levels") if isinstance(topology, dict) else None
    if not isinstance(levels, list) or not levels or not all(isinstance(level, str) and level for level in levels):
        return None
    at = levels.index(NODEPOOL_LABEL) if NODEPOOL_LABEL in levels else len(levels) - 1
    label = _intern(levels[at])
    found: set[tuple[str, str]] = set()
    if "slices" in topology:
        slices = topology["slices"]
        if not isinstance(slices, list):
            return None
        for piece in slices:
            values = _slice_values(piece, len(levels), at)
            if values is None:
                return None
            found.update((label, value) for value in values)
        return found
    domains = topology.get("domains")
    if not isinstance(domains, list):
        return None
    for domain in domains:
        values = domain.get("values") if isinstance(domain, dict) else None
        if not isinstance(values, list) or len(values) != len(levels) or not isinstance(values[at], str):
            return None
        found.add((label, _intern(values[at])))
    return found


def _slice_values(piece: Any, levels: int, at: int) -> list[str] | None:
    """The values at level ``at`` of one v1beta2 ``TopologyAssignmentSlice``."""
    if not isinstance(piece, dict):
        return None
    count, per_level = piece.get("domainCount"), piece.get("valuesPerLevel")
    if type(count) is not int or count < 1 or not isinstance(per_level, list) or len(per_level) != levels:
        return None
    level = per_level[at]
    if not isinstance(level, dict):
        return None
    universal, individual = level.get("universal"), level.get("individual")
    if isinstance(universal, str) and universal and individual is None:
        return [_intern(universal)]
    if universal is not None or not isinstance(individual, dict):
        return None
    roots, prefix, suffix = individual.get("roots"), individual.get("prefix") or "", individual.get("suffix") or ""
    if not isinstance(roots, list) or len(roots) != count or not isinstance(prefix, str) or not isinstance(suffix, str):
        return None
    if not all(isinstance(root, str) for root in roots):
        return None
    return [_intern(f"{prefix}{root}{suffix}") for root in roots]


def project(obj: Mapping[str, Any], tpu: str, shared: Share = unshared) -> WorkloadEntry:
    """A Workload object (``kueue.x-k8s.io/v1beta2``) reduced to what the ledger and the scheduler need;
    ``shared``: the store's sharing table (``webhook.kube.sharing``)."""
    metadata, spec, status = as_dict(obj.get("metadata")), as_dict(obj.get("spec")), as_dict(obj.get("status"))
    ref = spec.get("priorityClassRef")
    priority = _intern(ref.get("name")) if isinstance(ref, dict) else ""
    value = spec.get("priority")
    owner_kind, owner_name = _owner(metadata)
    common: dict[str, Any] = {
        "uid": str(metadata.get("uid") or ""),
        "priority_value": shared(value) if type(value) is int else 0,
        "created": _seconds(metadata.get("creationTimestamp")),
        "owner_kind": owner_kind,
        "owner_name": owner_name,
    }
    queue = _intern(spec.get("queueName"))
    conditions = _conditions(status)
    reserved, _, since = conditions.get("QuotaReserved", (False, "", ""))
    if conditions.get("Finished", (False, "", ""))[0]:
        return WorkloadEntry(queue, "", priority, FINISHED, **common)
    if spec.get("active", True) is False:
        return WorkloadEntry(queue, "", priority, IDLE, **common)
    if reserved:
        admission = as_dict(status.get("admission"))
        usage = _usage(admission)
        chips = tuple((flavor, int(amount)) for flavor, resource, amount in usage if resource == tpu and amount)
        return WorkloadEntry(
            queue,
            _intern(admission.get("clusterQueue")),
            priority,
            HOLDS,
            shared(chips),
            reserved_at=_seconds(since),
            usage=shared(usage),
            evicted=conditions.get("Evicted", (False, "", ""))[0],
            placed=_placed(admission, shared),
            **common,
        )
    if conditions.get("WaitingForReplacementPods", (False, "", ""))[0]:
        return WorkloadEntry(queue, "", priority, REPLACING, **common)
    return WorkloadEntry(queue, "", priority, WAITS, shape=shape_of(spec, shared), **common)


def shape_of(spec: Mapping[str, Any], shared: Share = unshared) -> Shape:
    """A Workload's ``spec.podSets`` as the flavor assigner reads them (shared between equal shapes).

    A podSet asks for topology-aware scheduling when Kueue wrote a ``topologyRequest`` on it
    (from the job's annotations, as ``webhook.quota.podsets.asks_for_tas`` reads them).
    """
    podsets = []
    for podset in map(as_dict, spec.get("podSets") or ()):
        pod = as_dict(as_dict(podset.get("template")).get("spec"))
        count = podset.get("count", 1)
        demand = podset_demand(str(podset.get("name", "")), pod, count if isinstance(count, int) else 1, share=shared)
        if "topologyRequest" in podset:
            demand = podset_demand(demand.name, pod, demand.count, dict(demand.requests), tas=True, share=shared)
        podsets.append(demand)
    return shared(tuple(podsets))


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

    def move(self, namespace: str, entry: WorkloadEntry | None, sign: int) -> None:
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
