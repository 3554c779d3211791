"""Compact, read-only views of the cluster objects the cluster-aware rules read, beside Kueue's.

The caches keep these instead of whole objects: a ResourceFlavor becomes its node labels,
taints and tolerations; a Node its labels, allocatable, blocking taints and whether it is
schedulable; label selectors and node affinity are matched here. ClusterQueues and Cohorts
are the Kueue model's (``webhook.kueue.clusterqueue``, ``webhook.kueue.cohort``). Parsing is lenient (a field
of the wrong type reads as absent): the objects come from the API server, which has
already validated them against their schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from webhook.kube.jsonvalues import as_dict
from webhook.kube.quantity import quantity_or_none

#: resources judged by the node-fit rule (DD-0018: one node must hold them all together)
NODE_FIT_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def string_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_dict(value).items() if isinstance(v, str | int | float)}


# ---------------------------------------------------------------- label selectors


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A Kubernetes ``LabelSelector``; ``None`` (null) matches nothing, ``{}`` everything."""
    if selector is None:
        return False
    for key, value in as_dict(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    for expression in _list(selector.get("matchExpressions")):
        expression = as_dict(expression)
        key = str(expression.get("key"))
        values = _list(expression.get("values"))
        operator = expression.get("operator")
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False  # an operator we do not know: the API server would have refused it
    return True


def describe_selector(selector: Mapping[str, Any] | None) -> str:
    if selector is None:
        return "null"
    parts = [f"{k}={v}" for k, v in sorted(as_dict(selector.get("matchLabels")).items())]
    for expression in _list(selector.get("matchExpressions")):
        expression = as_dict(expression)
        values = ",".join(str(v) for v in _list(expression.get("values")))
        parts.append(f"{expression.get('key')} {expression.get('operator')} ({values})".replace(" ()", ""))
    return "{" + ", ".join(parts) + "}"


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str


def parse_tolerations(value: Any) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            str(t.get("key") or ""),
            str(t.get("operator") or "Equal"),
            str(t.get("value") or ""),
            str(t.get("effect") or ""),
        )
        for t in map(as_dict, _list(value))
    )


@dataclass(frozen=True, slots=True)
class FlavorInfo:
    name: str
    node_labels: Mapping[str, str]
    #: ``spec.nodeTaints`` that block scheduling (NoSchedule, NoExecute)
    node_taints: tuple[Taint, ...] = ()
    #: ``spec.tolerations``: Kueue adds them to the pods it admits on this flavor
    tolerations: tuple[Toleration, ...] = ()
    #: ``spec.topologyName``: a topology-aware-scheduling flavor
    topology_name: str | None = None


def parse_flavor(obj: Mapping[str, Any]) -> FlavorInfo:
    spec = as_dict(obj.get("spec"))
    return FlavorInfo(
        name=str(as_dict(obj.get("metadata")).get("name", "")),
        node_labels=string_map(spec.get("nodeLabels")),
        node_taints=_blocking_taints(spec.get("nodeTaints")),
        tolerations=parse_tolerations(spec.get("tolerations")),
        topology_name=str(spec["topologyName"]) if spec.get("topologyName") else None,
    )


# ---------------------------------------------------------------- node affinity


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``NodeSelectorRequirement`` of a required node-affinity term."""

    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Kubernetes' node selector requirement semantics (``nodeaffinity``)."""
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator in ("Gt", "Lt") and present and len(self.values) == 1:
            try:
                have, bound = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > bound if self.operator == "Gt" else have < bound
        return False


#: required node affinity: terms ORed, each term's requirements ANDed (``matchFields`` dropped)
Affinity = tuple[tuple[Requirement, ...], ...]


def parse_required_affinity(pod_spec: Mapping[str, Any]) -> Affinity:
    """``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``."""
    required = as_dict(
        as_dict(as_dict(pod_spec.get("affinity")).get("nodeAffinity")).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
    )
    terms = []
    for term in map(as_dict, _list(required.get("nodeSelectorTerms"))):
        terms.append(
            tuple(
                Requirement(
                    str(e.get("key", "")), str(e.get("operator", "")), tuple(str(v) for v in _list(e.get("values")))
                )
                for e in map(as_dict, _list(term.get("matchExpressions")))
            )
        )
    return tuple(terms)


# ---------------------------------------------------------------- nodes


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


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
        taints=_blocking_taints(spec.get("taints")),
        unschedulable=spec.get("unschedulable") is True,
    )


def _blocking_taints(value: Any) -> tuple[Taint, ...]:
    """NoSchedule and NoExecute taints (PreferNoSchedule never blocks)."""
    return tuple(
        Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
        for t in map(as_dict, _list(value))
        if t.get("effect") in ("NoSchedule", "NoExecute")
    )


def tolerated(taint: Taint, tolerations: Iterable[Toleration]) -> bool:
    """Kubernetes' toleration matching for one taint."""
    for toleration in tolerations:
        if toleration.effect and toleration.effect != taint.effect:
            continue
        key = toleration.key
        if toleration.operator == "Exists" and (not key or key == taint.key):
            return True
        if toleration.operator == "Equal" and key == taint.key and toleration.value == taint.value:
            return True
    return False


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
