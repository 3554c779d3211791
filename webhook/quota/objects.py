"""Nodes as the node-fit rule and the capacity checks read them.

The caches keep a Node as its labels, allocatable, blocking taints and whether it is
schedulable, not the whole object. ResourceFlavors, ClusterQueues and Cohorts are the
Kueue model's (``webhook.kueue``); selectors, affinity, taints and tolerations are
Kubernetes' (``webhook.kube.scheduling``). Parsing is lenient (a field of the wrong type
reads as absent): the objects come from the API server, which has already validated them
against their schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from webhook.kube.jsonvalues import as_dict
from webhook.kube.quantity import quantity_or_none
from webhook.kube.scheduling import Taint, blocking_taints, string_map

#: resources judged by the node-fit rule (DD-0018: one node must hold them all together)
NODE_FIT_RESOURCES = ("cpu", "memory", "ephemeral-storage")


# ---------------------------------------------------------------- nodes


@dataclass(frozen=True, slots=True)
class NodeInfo:
    name: str
    labels: Mapping[str, str]
    allocatable: Mapping[str, Decimal]
    #: NoSchedule and NoExecute taints (PreferNoSchedule never blocks)
    taints: tuple[Taint, ...]
    unschedulable: bool


def parse_node(obj: Mapping[str, Any]) -> NodeInfo:
    metadata = as_dict(obj.get("metadata"))
    spec = as_dict(obj.get("spec"))
    allocatable = {}
    for key, raw in as_dict(as_dict(obj.get("status")).get("allocatable")).items():
        value = quantity_or_none(raw)
        if value is not None:
            allocatable[str(key)] = value
    return NodeInfo(
        name=str(metadata.get("name", "")),
        labels=string_map(metadata.get("labels")),
        allocatable=allocatable,
        taints=blocking_taints(spec.get("taints")),
        unschedulable=spec.get("unschedulable") is True,
    )


def node_fit_requests(per_pod: Mapping[str, Decimal], tpu: str) -> dict[str, Decimal]:
    """Of one pod's requests, those one node must hold together: CPU, memory, disk and TPU chips."""
    return {r: v for r, v in per_pod.items() if r in (*NODE_FIT_RESOURCES, tpu)}


@dataclass(frozen=True, slots=True)
class NodeShortfall:
    """The matching node that comes closest to holding a pod, and where it falls short."""

    node: NodeInfo
    #: resource -> what the node has allocatable, for each requested resource
    offered: Mapping[str, Decimal]
    #: the requested resources it has less of than the pod asks, sorted
    short: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NodeFit:
    """The answer to "does one pod fit on one node that matches its selector"."""

    #: schedulable, tolerated nodes that match the selector
    matching: int
    fits: bool
    #: when nothing fits: the matching node that comes closest, for the message
    closest: NodeInfo | None = None

    def shortfall(self, wanted: Mapping[str, Decimal]) -> NodeShortfall | None:
        """Where the closest node falls short of ``wanted``; ``None`` when a node holds it, or
        when no node matches at all (unknown capacity, not zero: DD-0018)."""
        node = self.closest
        if self.fits or self.matching == 0 or node is None:
            return None
        offered = {r: node.allocatable.get(r, Decimal(0)) for r in wanted}
        return NodeShortfall(node, offered, tuple(r for r in sorted(wanted) if offered[r] < wanted[r]))
