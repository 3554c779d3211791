"""Each ClusterQueue's admitted Workloads in Kueue's candidate order, read lazily by the preemptor.

Kueue sorts every candidate before it removes the first (``CandidatesOrdering``: evicted
first, other queues before the preemptor's own, lower priority first, most recently admitted
first, then UID). Within one queue that order is fixed, whoever asks: so each queue keeps
its Workloads sorted once (``QueueIndex``), evicted apart from running, and a preemptor
merges the queues it may take from, reading only as far as it needs. The priority policies
are prefixes of that order (``LowerPriority``: everything below the preemptor's priority),
found by bisection instead of a scan.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from webhook.kueue.resources import FlavorResource
from webhook.kueue.workload import AdmittedWorkload

T = TypeVar("T")
#: a Workload's place within its queue's candidate order: (priority, -admitted at, UID)
Order = tuple[int, float, str]


def order(workload: AdmittedWorkload, now: datetime) -> Order:
    """The tail of ``CandidatesOrdering`` (a Workload not yet admitted counts as admitted now)."""
    return (workload.priority, -(workload.reserved or now).timestamp(), workload.uid)


@dataclass(frozen=True, slots=True)
class _Part:
    workloads: tuple[AdmittedWorkload, ...]
    priorities: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class QueueIndex:
    """One ClusterQueue's admitted Workloads, evicted and running apart, each in candidate order."""

    evicted: _Part
    running: _Part


def build_index(workloads: Iterable[AdmittedWorkload], now: datetime) -> QueueIndex:
    parts = []
    for evicted in (True, False):
        chosen = sorted((w for w in workloads if w.evicted is evicted), key=lambda w: order(w, now))
        parts.append(_Part(tuple(chosen), tuple(w.priority for w in chosen)))
    return QueueIndex(parts[0], parts[1])


def eligible(
    index: QueueIndex | None,
    policy: str,
    priority: int,
    created: datetime,
    need: frozenset[FlavorResource],
    evicted: bool,
) -> Iterator[AdmittedWorkload]:
    """The queue's Workloads ``policy`` lets a preemptor of ``priority`` (created at ``created``) take,
    that use a (flavor, resource) in ``need``, in candidate order (``SatisfiesPreemptionPolicy``)."""
    if index is None or policy not in ("LowerPriority", "LowerOrNewerEqualPriority", "Any"):
        return
    part = index.evicted if evicted else index.running
    if policy == "LowerPriority":
        end = bisect_left(part.priorities, priority)
    elif policy == "LowerOrNewerEqualPriority":
        end = bisect_right(part.priorities, priority)
    else:
        end = len(part.workloads)
    for i in range(end):
        workload = part.workloads[i]
        if workload.priority == priority and policy == "LowerOrNewerEqualPriority" and not created < workload.created:
            continue
        if any(fr in need for fr in workload.usage):
            yield workload


def may_have(index: QueueIndex | None, policy: str, priority: int) -> bool:
    """Whether ``eligible`` could yield anything, from the lowest priorities alone (no scan)."""
    if index is None:
        return False
    lowest = [p.priorities[0] for p in (index.evicted, index.running) if p.priorities]
    if not lowest or policy == "Never":
        return False
    if policy == "LowerPriority":
        return min(lowest) < priority
    if policy == "LowerOrNewerEqualPriority":
        return min(lowest) <= priority
    return policy == "Any"


def merged(sources: Iterable[Iterator[AdmittedWorkload]], now: datetime) -> Iterator[AdmittedWorkload]:
    """Several queues' candidates as one sequence in candidate order."""
    return heapq.merge(*sources, key=lambda w: order(w, now))


class Peekable(Generic[T]):
    """An iterator whose next item can be looked at without taking it."""

    __slots__ = ("_head", "_items", "_more")

    def __init__(self, items: Iterator[T]) -> None:
        self._items = items
        self._more = True
        self._head: T | None = None
        self._advance()

    def _advance(self) -> None:
        try:
            self._head = next(self._items)
        except StopIteration:
            self._more, self._head = False, None

    def __bool__(self) -> bool:
        return self._more

    def peek(self) -> T:
        assert self._more and self._head is not None
        return self._head

    def pop(self) -> T:
        head = self.peek()
        self._advance()
        return head
