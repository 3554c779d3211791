"""Kubernetes' scheduling vocabulary: label selectors, node affinity, taints and tolerations.

Kueue's flavor eligibility, the node-fit rule and the admin guard all match pods against
labels and taints with these; they restate Kubernetes' own semantics
(``k8s.io/component-helpers/scheduling/corev1``). Parsing is lenient (a field of the wrong
type reads as absent): the objects come from the API server, which has already validated
them against their schema.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.kube.jsonvalues import as_dict


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
class Taint:
    key: str
    value: str
    effect: str


def blocking_taints(value: Any) -> tuple[Taint, ...]:
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
