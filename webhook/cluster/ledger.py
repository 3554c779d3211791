"""Workloads as the balance check needs them, and the guaranteed-chips ledger.

A cached Workload is a ``WorkloadEntry`` (a few slots, strings interned), never the whole
object: at 100,000 Workloads that is the difference between ~40 MB and several GB.
The ledger keeps the chips of guaranteed Workloads per (ClusterQueue, flavor) for those
that hold quota, and per (namespace, LocalQueue, node selector) for those that wait;
each watch event moves the counters by the difference between the old and the new
entry, so a request reads two numbers instead of summing Workloads.

Pending Workloads are kept by LocalQueue and node selector, not by ClusterQueue and
flavor, because which ClusterQueue and flavor they will use is resolved through other
objects (LocalQueues, ResourceFlavors) that may arrive later or change; the store
resolves them when a request reads the balance.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from webhook.quantity import quantity_or_none
from webhook.resources import pod_requests

HOLDS, WAITS, IDLE, FINISHED = "holds", "waits", "idle", "finished"

#: a node selector as a hashable, order-independent key (shared by identical selectors)
SelectorKey = tuple[tuple[str, str], ...]

_SELECTORS: dict[SelectorKey, SelectorKey] = {}


def _selector_key(selector: Mapping[str, Any]) -> SelectorKey:
    key = tuple(sorted((sys.intern(str(k)), sys.intern(str(v))) for k, v in selector.items()))
    return _SELECTORS.setdefault(key, key)


def _intern(value: Any) -> str:
    return sys.intern(str(value)) if value else ""


class WorkloadEntry:
    """The projection of one Workload: its queue, priority, state and TPU chips."""

    __slots__ = ("chips", "cluster_queue", "local_queue", "priority", "state")

    def __init__(
        self,
        local_queue: str,
        cluster_queue: str,
        priority: str,
        state: str,
        chips: tuple[tuple[str | SelectorKey, int], ...],
    ) -> None:
        self.local_queue = local_queue
        self.cluster_queue = cluster_queue
        self.priority = priority
        self.state = state
        #: holding quota: (flavor, chips); waiting: (node selector, chips)
        self.chips = chips


def _conditions(status: Mapping[str, Any]) -> dict[str, bool]:
    out = {}
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict):
            out[str(condition.get("type"))] = condition.get("status") == "True"
    return out


def project(obj: Mapping[str, Any], tpu: str) -> WorkloadEntry:
    """A Workload object (``kueue.x-k8s.io/v1beta2``) reduced to what the ledger needs."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
    assert isinstance(spec, dict) and isinstance(status, dict)
    ref = spec.get("priorityClassRef")
    priority = _intern(ref.get("name")) if isinstance(ref, dict) else ""
    admission = status.get("admission") if isinstance(status.get("admission"), dict) else None
    conditions = _conditions(status)
    chips: list[tuple[str | SelectorKey, int]] = []
    cluster_queue = ""
    if conditions.get("Finished"):
        state = FINISHED
    elif admission is not None:
        state = HOLDS
        cluster_queue = _intern(admission.get("clusterQueue"))
        for assignment in admission.get("podSetAssignments") or ():
            if not isinstance(assignment, dict):
                continue
            used = quantity_or_none((assignment.get("resourceUsage") or {}).get(tpu))
            flavor = (assignment.get("flavors") or {}).get(tpu)
            if used and flavor:
                chips.append((_intern(flavor), int(used)))
    elif spec.get("active", True) is False:
        state = IDLE
    else:
        state = WAITS
        for podset in spec.get("podSets") or ():
            if isinstance(podset, dict):
                pod = ((podset.get("template") or {}).get("spec")) or {}
                per_pod = _requests(pod).get(tpu)
                if per_pod:
                    count = podset.get("count", 1)
                    count = count if isinstance(count, int) else 1
                    chips.append((_selector_key(pod.get("nodeSelector") or {}), int(per_pod) * count))
    return WorkloadEntry(_intern(spec.get("queueName")), cluster_queue, priority, state, tuple(chips))


def _requests(pod: Mapping[str, Any]) -> dict[str, Decimal]:
    def pairs(key: str) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        for container in pod.get(key) or ():
            resources = (container or {}).get("resources") or {}
            yield resources.get("requests") or {}, resources.get("limits") or {}

    return pod_requests(pairs("containers"), pairs("initContainers"))


class GuaranteedLedger:
    """Chips of guaranteed Workloads: holding quota per (CQ, flavor), waiting per (LQ, selector)."""

    def __init__(self, guaranteed: str) -> None:
        self.guaranteed = guaranteed
        self.holding: defaultdict[tuple[str, str], int] = defaultdict(int)
        self.waiting: defaultdict[tuple[str, str], dict[SelectorKey, int]] = defaultdict(dict)

    def move(self, namespace: str, entry: WorkloadEntry | None, sign: int) -> None:
        """Add (``sign=1``) or remove (``-1``) one entry's contribution."""
        if entry is None or entry.priority != self.guaranteed:
            return
        if entry.state == HOLDS:
            for flavor, chips in entry.chips:
                assert isinstance(flavor, str)
                key = (entry.cluster_queue, flavor)
                self.holding[key] += sign * chips
                if not self.holding[key]:
                    del self.holding[key]
        elif entry.state == WAITS:
            for selector, chips in entry.chips:
                assert isinstance(selector, tuple)
                queue = self.waiting[(namespace, entry.local_queue)]
                queue[selector] = queue.get(selector, 0) + sign * chips
                if not queue[selector]:
                    del queue[selector]
                if not queue:
                    del self.waiting[(namespace, entry.local_queue)]

    def waiting_for(self, namespace: str, local_queue: str) -> list[tuple[SelectorKey, int]]:
        queue = self.waiting.get((namespace, local_queue))
        return list(queue.items()) if queue else []
