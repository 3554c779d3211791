"""Compact, read-only views of the cluster objects the cluster-aware rules read.

The caches keep these instead of whole objects: a ClusterQueue becomes its cohort, its
namespace selector, the resources it covers and its quotas per flavor; a Node its labels,
allocatable, blocking taints and whether it is schedulable. Parsing is lenient (a field
of the wrong type reads as absent): the objects come from the API server, which has
already validated them against their schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from webhook.quantity import quantity_or_none

#: resources judged by the node-fit rule (DD-0018: one node must hold them all together)
NODE_FIT_RESOURCES = ("cpu", "memory", "ephemeral-storage")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def string_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in _dict(value).items() if isinstance(v, str | int | float)}


# ---------------------------------------------------------------- label selectors


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A Kubernetes ``LabelSelector``; ``None`` (null) matches nothing, ``{}`` everything."""
    if selector is None:
        return False
    for key, value in _dict(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    for expression in _list(selector.get("matchExpressions")):
        expression = _dict(expression)
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
    parts = [f"{k}={v}" for k, v in sorted(_dict(selector.get("matchLabels")).items())]
    for expression in _list(selector.get("matchExpressions")):
        expression = _dict(expression)
        values = ",".join(str(v) for v in _list(expression.get("values")))
        parts.append(f"{expression.get('key')} {expression.get('operator')} ({values})".replace(" ()", ""))
    return "{" + ", ".join(parts) + "}"


# ---------------------------------------------------------------- quotas


@dataclass(frozen=True, slots=True)
class Quota:
    nominal: Decimal
    borrowing_limit: Decimal | None = None
    lending_limit: Decimal | None = None

    @property
    def lendable(self) -> Decimal:
        """What this queue lends to its cohort: the lending limit, else all of its nominal."""
        return self.nominal if self.lending_limit is None else min(self.lending_limit, self.nominal)


#: flavor -> resource -> quota, flavors in the order of the resource groups
FlavorQuotas = tuple[tuple[str, Mapping[str, Quota]], ...]


def _quotas(resource_groups: Any) -> tuple[frozenset[str], FlavorQuotas]:
    covered: set[str] = set()
    flavors: list[tuple[str, Mapping[str, Quota]]] = []
    for group in _list(resource_groups):
        group = _dict(group)
        covered.update(str(r) for r in _list(group.get("coveredResources")))
        for flavor in _list(group.get("flavors")):
            flavor = _dict(flavor)
            resources: dict[str, Quota] = {}
            for resource in _list(flavor.get("resources")):
                resource = _dict(resource)
                borrowing = resource.get("borrowingLimit")
                lending = resource.get("lendingLimit")
                resources[str(resource.get("name"))] = Quota(
                    quantity_or_none(resource.get("nominalQuota")) or Decimal(0),
                    quantity_or_none(borrowing) if borrowing is not None else None,
                    quantity_or_none(lending) if lending is not None else None,
                )
            flavors.append((str(flavor.get("name")), resources))
    return frozenset(covered), tuple(flavors)


@dataclass(frozen=True, slots=True)
class ClusterQueueInfo:
    name: str
    cohort: str | None
    #: the raw ``namespaceSelector``; ``None`` is Kueue's null selector (matches nothing)
    namespace_selector: Mapping[str, Any] | None
    covered: frozenset[str]
    flavors: FlavorQuotas

    def quota(self, flavor: str, resource: str) -> Quota | None:
        for name, resources in self.flavors:
            if name == flavor:
                return resources.get(resource)
        return None

    def flavors_for(self, resource: str) -> list[str]:
        return [name for name, resources in self.flavors if resource in resources]


def parse_cluster_queue(obj: Mapping[str, Any]) -> ClusterQueueInfo:
    spec = _dict(obj.get("spec"))
    selector = spec.get("namespaceSelector")
    covered, flavors = _quotas(spec.get("resourceGroups"))
    cohort = spec.get("cohortName")
    return ClusterQueueInfo(
        name=str(_dict(obj.get("metadata")).get("name", "")),
        cohort=str(cohort) if cohort else None,
        namespace_selector=selector if isinstance(selector, dict) else None,
        covered=covered,
        flavors=flavors,
    )


@dataclass(frozen=True, slots=True)
class CohortInfo:
    name: str
    parent: str | None
    flavors: FlavorQuotas


def parse_cohort(obj: Mapping[str, Any]) -> CohortInfo:
    spec = _dict(obj.get("spec"))
    parent = spec.get("parentName")
    return CohortInfo(
        name=str(_dict(obj.get("metadata")).get("name", "")),
        parent=str(parent) if parent else None,
        flavors=_quotas(spec.get("resourceGroups"))[1],
    )


@dataclass(frozen=True, slots=True)
class FlavorInfo:
    name: str
    node_labels: Mapping[str, str]


def parse_flavor(obj: Mapping[str, Any]) -> FlavorInfo:
    return FlavorInfo(
        name=str(_dict(obj.get("metadata")).get("name", "")),
        node_labels=string_map(_dict(obj.get("spec")).get("nodeLabels")),
    )


@dataclass(frozen=True, slots=True)
class Capacity:
    """The most a ClusterQueue can ever hold of one flavor's resource (Kueue's rules)."""

    nominal: Decimal
    borrowing_limit: Decimal | None
    cohort: str | None
    #: what the rest of the cohort can lend (``None`` without a cohort)
    cohort_lendable: Decimal | None

    @property
    def maximum(self) -> Decimal:
        if self.cohort is None or self.cohort_lendable is None:
            return self.nominal
        borrow = self.cohort_lendable
        if self.borrowing_limit is not None:
            borrow = min(borrow, self.borrowing_limit)
        return self.nominal + borrow

    def explain(self) -> str:
        nominal = f"nominal {_n(self.nominal)}"
        if self.cohort is None:
            return f"{nominal}, no cohort to borrow from"
        lendable = _n(self.cohort_lendable or Decimal(0))
        if self.borrowing_limit is None:
            return f"{nominal} + {lendable} the rest of cohort {self.cohort} could lend, no borrowing limit"
        return f"{nominal} + borrowing limit {_n(self.borrowing_limit)} (cohort {self.cohort} could lend {lendable})"


def _n(value: Decimal) -> str:
    return format(value.normalize(), "f") if value == value.to_integral_value() else str(value)


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
    metadata = _dict(obj.get("metadata"))
    spec = _dict(obj.get("spec"))
    allocatable = {}
    for key, raw in _dict(_dict(obj.get("status")).get("allocatable")).items():
        value = quantity_or_none(raw)
        if value is not None:
            allocatable[str(key)] = value
    taints = tuple(
        Taint(str(t.get("key", "")), str(t.get("value", "")), str(t.get("effect", "")))
        for t in map(_dict, _list(spec.get("taints")))
        if t.get("effect") in ("NoSchedule", "NoExecute")
    )
    return NodeInfo(
        name=str(metadata.get("name", "")),
        labels=string_map(metadata.get("labels")),
        allocatable=allocatable,
        taints=taints,
        unschedulable=spec.get("unschedulable") is True,
    )


def tolerated(taint: Taint, tolerations: Iterable[Mapping[str, Any]]) -> bool:
    """Kubernetes' toleration matching for one taint."""
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.effect:
            continue
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists" and (not key or key == taint.key):
            return True
        if operator == "Equal" and key == taint.key and (toleration.get("value") or "") == taint.value:
            return True
    return False


@dataclass(frozen=True, slots=True)
class NodeFit:
    """The answer to "does one pod fit on one node that matches its selector"."""

    #: schedulable, tolerated nodes that match the selector
    matching: int
    fits: bool
    #: when nothing fits: the matching node that comes closest, for the message
    closest: NodeInfo | None = None
