"""A ResourceFlavor as Kueue's flavor assigner reads it, and whether a podSet may take it.

It follows kubernetes-sigs/kueue ``pkg/scheduler/flavorassigner`` (facts restated, no
code copied): topology-aware scheduling splits the flavors in two
(``checkPodSetAndFlavorMatchForTAS``). A podSet that asks for a topology is never given
a flavor without ``topologyName``, and one that asks for none passes over the flavors
with one, unless every flavor of the queue is one (TAS implied). A flavor's
``nodeTaints`` (NoSchedule/NoExecute) must be tolerated by the pod's tolerations plus the
flavor's own ``tolerations``; the pod's nodeSelector and required node-affinity terms are
cut down to the keys of *this flavor's* ``nodeLabels`` and must then match those labels
(``flavorSelector``). A term left empty by the cut makes the affinity match anything
(terms are ORed). A flavor without labels matches every pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.kube.jsonvalues import as_dict
from webhook.kube.scheduling import Taint, Toleration, blocking_taints, parse_tolerations, string_map, tolerated
from webhook.kueue.podset import PodSetDemand


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
        node_taints=blocking_taints(spec.get("nodeTaints")),
        tolerations=parse_tolerations(spec.get("tolerations")),
        topology_name=str(spec["topologyName"]) if spec.get("topologyName") else None,
    )


def flavor_mismatch(flavor: FlavorInfo, demand: PodSetDemand, tas_only: bool = False) -> tuple[str, str] | None:
    """Why Kueue would not give ``flavor`` to this podSet ((kind, detail)), or ``None``.

    ``tas_only``: every flavor of the queue is a topology-aware one, so Kueue treats every
    podSet as asking for topology-aware scheduling. Called for a resource group the podSet
    requests from, so a podSet that asks for a topology always overlaps it.
    """
    if flavor.topology_name is None and demand.tas:
        return "tas", "does not support topology-aware scheduling, which this podSet asks for"
    if flavor.topology_name is not None and not demand.tas and not tas_only:
        return "tas", "supports only topology-aware scheduling, which this podSet does not ask for"
    tolerations = (*demand.tolerations, *flavor.tolerations)
    for taint in flavor.node_taints:
        if not tolerated(taint, tolerations):
            return "taint", f"has taint {taint.key}={taint.value}:{taint.effect}, which the pod does not tolerate"
    labels = flavor.node_labels
    for key, value in demand.node_selector:
        if key in labels and labels[key] != value:
            return "mismatch", f"has {key}={labels[key]}, the pod's nodeSelector asks for {value}"
    if demand.affinity:
        terms = []
        for term in demand.affinity:
            kept = tuple(r for r in term if r.key in labels)
            if not kept:
                return None  # a term with none of the flavor's keys matches any flavor (terms are ORed)
            terms.append(kept)
        if not any(all(r.matches(labels) for r in term) for term in terms):
            return "mismatch", "does not match the pod's required node affinity on its nodeLabels"
    return None
