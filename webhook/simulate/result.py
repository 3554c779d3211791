"""The simulator's answer: the contract's JSON, a text read at one glance, the webhook's line.

``Result.to_json`` gives the keys of SPEC §12 (``source``, ``kind``, ``namespace``,
``name``, ``outcome``, ``reason``, ``clusterQueue``, ``podSets``, ``preemptions``,
``position``, ``message``) and one more, ``holders``: for a ``wait``, who holds what it
waits for (§12.5 "who holds the rest"), else ``null``. The other numbers behind a ``wait``
(``Numbers``, ``Pools``) and the state's oddities (``notes``) feed the text and the message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from webhook.kueue.amounts import format_amount
from webhook.simulate.state import TPU

ADMIT, PREEMPT, WAIT, NEVER, UNKNOWN = "admit", "preempt", "wait", "never", "unknown"
#: at most this many victims, holders and notes are listed in a text or a message
LISTED = 10
#: a podSet of a job that waits: the one way of saying so, whatever the assigner tried
NO_FLAVOR_YET = "no flavor fits yet"


def _no_flavor(outcome: str) -> str:
    """A podSet without flavors, by outcome: one that starts asks no quota; one that never starts gets none."""
    if outcome in (ADMIT, PREEMPT):
        return "no quota asked"
    return "no flavor assigned" if outcome == NEVER else NO_FLAVOR_YET


def _number(value: Decimal) -> int | str:
    """A JSON number when whole (chips, pods), else the exact decimal as text."""
    return int(value) if value == value.to_integral_value() and abs(value) < 2**63 else format_amount(value)


@dataclass(frozen=True, slots=True)
class PodSetResult:
    name: str
    count: int
    #: resource -> flavor
    flavors: Mapping[str, str]
    #: what this podSet uses of its main resource beyond its queue's nominal quota
    borrows: Decimal = Decimal(0)
    #: that main resource: the TPU one when the podSet asks for chips, else its first resource
    resource: str = ""


@dataclass(frozen=True, slots=True)
class PreemptionResult:
    workload: str
    cluster_queue: str
    priority: int
    reason: str


@dataclass(frozen=True, slots=True)
class Position:
    """The pending Workloads of the job's ClusterQueue Kueue orders before it."""

    ahead: int
    chips_ahead: Decimal
    strategy: str = "BestEffortFIFO"


@dataclass(frozen=True, slots=True)
class Numbers:
    """What a ``wait`` is about: one (flavor, resource) and who holds it."""

    flavor: str
    resource: str
    needs: Decimal
    uses: Decimal
    nominal: Decimal
    #: what the cohort tree could lend the queue now
    lends: Decimal
    cohort: str | None
    #: (ClusterQueue, what it uses) of the queue's cohort tree (or the queue alone), largest first
    holders: tuple[tuple[str, Decimal], ...] = ()
    #: (Workload ``ns/name``, what it uses) of the queue's own admitted Workloads, largest first
    workloads: tuple[tuple[str, Decimal], ...] = ()
    #: the job fits in the queue's own nominal quota, which other queues of the cohort borrow, and
    #: the queue does not reclaim it (``preemption.reclaimWithinCohort: Never``): it waits for them
    lent_out: bool = False


#: the ``holders.resource`` of a placement wait: what is held is whole node pools
NODE_POOLS = "nodePools"


@dataclass(frozen=True, slots=True)
class Pools:
    """What a ``TopologyPlacementFailed`` wait is about: static node pools of one topology."""

    topology: str
    flavor: str
    needed: int
    free: int
    total: int
    #: (Workload ``ns/name``, its ClusterQueue, pools it holds hosts in), most first
    holders: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Result:
    outcome: str
    reason: str
    cluster_queue: str
    message: str
    podsets: tuple[PodSetResult, ...] = ()
    preemptions: tuple[PreemptionResult, ...] = ()
    position: Position = Position(0, Decimal(0))
    source: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    numbers: Numbers | None = None
    notes: tuple[str, ...] = ()
    #: the resource counted as chips (``position.chipsAhead``, "borrowing N chips")
    chips: str = TPU
    #: priority -> what people call it (``best-effort``), for the webhook line; not in the JSON
    priority_names: Mapping[int, str] = field(default_factory=dict)
    #: a placement wait's pools
    pools: Pools | None = None

    def amount(self, value: Decimal, resource: str) -> str:
        """``64 chips``, ``32Gi memory``, ``4 cpu``: an amount with what it is of."""
        if resource == self.chips or not resource:
            return f"{format_amount(value)} chips"
        return f"{format_amount(value, resource)} {resource}"

    def to_json(self) -> dict[str, Any]:
        """SPEC §12's result object, key for key."""
        return {
            "source": self.source,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
            "outcome": self.outcome,
            "reason": self.reason,
            "clusterQueue": self.cluster_queue,
            "podSets": [
                {
                    "name": p.name,
                    "count": p.count,
                    "flavors": dict(sorted(p.flavors.items())),
                    "borrows": _number(p.borrows),
                }
                for p in self.podsets
            ],
            "preemptions": [
                {"workload": v.workload, "clusterQueue": v.cluster_queue, "priority": v.priority, "reason": v.reason}
                for v in self.preemptions
            ],
            "position": {"ahead": self.position.ahead, "chipsAhead": _number(self.position.chips_ahead)},
            "message": self.message,
            "holders": self._holders_json(),
        }

    def _holders_json(self) -> dict[str, Any] | None:
        """Who holds what a ``wait`` waits for: the largest ClusterQueues of its cohort tree and
        Workloads of its queue (quota), or the Workloads on the topology's pools (placement)."""
        if self.outcome != WAIT:
            return None
        if self.pools is not None:
            pools = self.pools
            return {
                "flavor": pools.flavor,
                "resource": NODE_POOLS,
                "clusterQueues": [],
                "workloads": [{"name": w, "clusterQueue": q, "amount": n} for w, q, n in pools.holders],
            }
        if self.numbers is None:
            return None
        n, queue = self.numbers, self.cluster_queue
        return {
            "flavor": n.flavor,
            "resource": n.resource,
            "clusterQueues": [{"name": q, "amount": _number(a)} for q, a in n.holders],
            "workloads": [{"name": w, "clusterQueue": queue, "amount": _number(a)} for w, a in n.workloads],
        }

    def text(self, wide: bool = True) -> str:
        """The answer for a person: the outcome first, then the numbers.

        Not ``wide``, a ``wait`` or ``never`` is its outcome, reason, ClusterQueue, message and
        place in line, and a count of the lines left out (the podSets, who holds the quota or the
        node pools, the notes): the why first, the detail on asking."""
        who = f"{self.namespace}/{self.name}" if self.namespace else self.name
        head = f"{self.outcome.upper()}" + (f" ({self.reason})" if self.reason else "")
        lines = [f"{head}  {self.kind + ' ' if self.kind else ''}{who}".rstrip()]
        if self.cluster_queue:
            lines.append(f"  ClusterQueue {self.cluster_queue}")
        lines.append(f"  {self.message}")
        short, lines = lines, []
        for p in self.podsets:
            flavors = ", ".join(f"{r}: {f}" for r, f in sorted(p.flavors.items())) or _no_flavor(self.outcome)
            borrows = f", borrows {self.amount(p.borrows, p.resource)}" if p.borrows else ""
            lines.append(f"  podSet {p.name} ×{p.count}: {flavors}{borrows}")
        for v in self.preemptions[:LISTED]:
            lines.append(f"  preempts {v.workload} ({v.cluster_queue}, priority {v.priority}, {v.reason})")
        if len(self.preemptions) > LISTED:
            lines.append(f"  … and {len(self.preemptions) - LISTED} more")
        if self.numbers is not None:
            n = self.numbers
            r = n.resource
            holders = ", ".join(f"{q} {format_amount(a, r)}" for q, a in n.holders)
            lines.append(
                f"  {r} on {n.flavor}: needs {format_amount(n.needs, r)}, queue uses {format_amount(n.uses, r)} "
                f"of nominal {format_amount(n.nominal, r)}"
                + (f", cohort {n.cohort} lends {format_amount(n.lends, r)}" if n.cohort else "")
            )
            if holders:
                lines.append(f"  largest users: {holders}")
            if n.workloads:
                largest = ", ".join(f"{w} {format_amount(a, r)}" for w, a in n.workloads)
                lines.append(f"  largest in {self.cluster_queue}: {largest}")
        if self.pools is not None:
            where = self.pools
            free = f"{where.free} of {where.total} free"
            lines.append(f"  node pools of {where.topology} ({where.flavor}): needs {where.needed}, {free}")
            if where.holders:
                held = ", ".join(f"{w} ({q}, {plural(n, 'pool')})" for w, q, n in where.holders)
                lines.append(f"  held by: {held}")
        position = []
        if self.position.ahead:
            position.append(
                f"  position: {plural(self.position.ahead, 'Workload')} ahead "
                f"({format_amount(self.position.chips_ahead)} chips),"
                f" {self.position.strategy}"
            )
        notes = [f"  note: {note}" for note in self.notes[:LISTED]]
        if wide or self.outcome not in (WAIT, NEVER):
            return "\n".join([*short, *lines, *position, *notes])
        left_out = len(lines) + len(notes)
        more = [f"  ({plural(left_out, 'more line')}: -o wide)"] if left_out else []
        return "\n".join([*short, *position, *more])

    def warning(self) -> str:
        """The webhook's one ``[simulate]`` line."""
        if self.outcome == ADMIT:
            flavors = sorted({f for p in self.podsets for f in p.flavors.values()})
            borrowed: dict[str, Decimal] = {}
            for p in self.podsets:
                if p.borrows:
                    borrowed[p.resource] = borrowed.get(p.resource, Decimal(0)) + p.borrows
            where = f" on {', '.join(flavors)}" if flavors else ""
            amounts = ", ".join(self.amount(v, r) for r, v in sorted(borrowed.items()))
            return f"[simulate] starts now{where}" + (f", borrowing {amounts}" if amounts else "")
        if self.outcome == PREEMPT:
            return f"[simulate] will preempt {_victims(self.preemptions, self.priority_names)}"
        if self.outcome == WAIT:
            n, pools, ahead = self.numbers, self.pools, self.position.ahead
            parts = []
            if pools is not None:
                wanted = plural(pools.needed, "free " + pools.topology + " node pool")
                parts.append(f"needs {wanted}, {pools.free} of {pools.total} free")
                if pools.holders:
                    parts.append("held by " + _names(w for w, _, _ in pools.holders))
            elif n is not None:
                r = n.resource
                cohort = f", cohort {n.cohort} lends {format_amount(n.lends, r)}" if n.cohort else ""
                if n.lent_out:
                    cohort += f" (borrowed from {self.cluster_queue}, which does not reclaim)"
                unit = "chips" if r == self.chips else r
                used = f"{format_amount(n.uses, r)} of {format_amount(n.nominal, r)}"
                parts.append(f"{self.cluster_queue} uses {used} {n.flavor} {unit}{cohort}")
                held = n.holders if n.cohort else n.workloads
                if held:
                    parts.append("held by " + _names(f"{q} {format_amount(a, r)}" for q, a in held))
            else:
                parts.append(_clip(self.message, WARNING_PART))
            if ahead and self.reason != "StrictFIFO":
                parts.append(f"{plural(ahead, 'Workload')} ahead")
            return "[simulate] will wait: " + "; ".join(parts)
        if self.outcome == NEVER:
            return f"[simulate] will not start: {self.message}"
        return f"[simulate] cannot tell: {self.message}"


#: the longest a part of the webhook's line gets (names are up to 253 characters)
WARNING_PART = 160
#: holders named in the webhook's line
WARNING_HOLDERS = 3


def _clip(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _names(items: Iterable[str]) -> str:
    """At most ``WARNING_HOLDERS`` names, the whole clipped to ``WARNING_PART``."""
    return _clip(", ".join(list(items)[:WARNING_HOLDERS]), WARNING_PART)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


_WHY = {
    "InClusterQueue": "of lower priority in its own queue",
    "InCohortReclamation": "to reclaim quota",
    "InCohortReclaimWhileBorrowing": "to reclaim quota while borrowing",
    "InCohortFairSharing": "for fair sharing",
}


def _victims(victims: tuple[PreemptionResult, ...], names: Mapping[int, str]) -> str:
    """``2 best-effort Workloads of team-b to reclaim quota``, grouped by queue, reason and priority name."""
    groups: dict[tuple[str, str, str], int] = {}
    for v in victims:
        key = (v.cluster_queue, v.reason, names.get(v.priority, ""))
        groups[key] = groups.get(key, 0) + 1
    parts = [
        f"{count} {name + ' ' if name else ''}Workload{'s' if count != 1 else ''} of {queue} {_WHY.get(reason, reason)}"
        for (queue, reason, name), count in groups.items()
    ]
    return ", ".join(parts)
