"""The engine's state from Kueue's objects as stored: the reader the wiring hands a state to.

ClusterQueues, Cohorts and ResourceFlavors go through the quota model's parsers, Workloads
through ``workloads.from_document``; LocalQueues and Namespaces are read here (a LocalQueue is
its ClusterQueue and stop policy, a Namespace its labels). Fair sharing comes from Kueue's
Configuration (the decoded ``controller_manager_config.yaml`` of ConfigMap
``kueue-system/kueue-manager-config``): in ``v1beta2`` a ``fairSharing`` block turns it on;
in ``v1beta1`` only with ``enable: true``. A kind the caller could not read is named in
``missing``, so the engine answers ``unknown`` where it would decide.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from webhook.quota.objects import parse_cluster_queue, parse_cohort, parse_flavor, string_map
from webhook.simulate.state import (
    DEFAULT_STRATEGIES,
    AdmittedWorkload,
    FairSharing,
    LocalQueueInfo,
    PendingWorkload,
    State,
)
from webhook.simulate.workloads import from_document

STRATEGIES = frozenset(DEFAULT_STRATEGIES)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def fair_sharing(configuration: Mapping[str, Any] | None) -> FairSharing:
    """Kueue's ``fairSharing`` setting; strategies default as Kueue's ``parseStrategies`` does."""
    if configuration is None or not isinstance(configuration.get("fairSharing"), dict):
        return FairSharing(False)
    block = configuration["fairSharing"]
    if str(configuration.get("apiVersion", "")).endswith("/v1beta1") and block.get("enable") is not True:
        return FairSharing(False)
    strategies = block.get("preemptionStrategies")
    chosen = tuple(s for s in strategies if s in STRATEGIES) if isinstance(strategies, list) else ()
    return FairSharing(True, chosen or DEFAULT_STRATEGIES)


def parse_local_queue(obj: Mapping[str, Any]) -> LocalQueueInfo:
    metadata, spec = _dict(obj.get("metadata")), _dict(obj.get("spec"))
    return LocalQueueInfo(
        str(metadata.get("namespace", "")),
        str(metadata.get("name", "")),
        str(spec.get("clusterQueue", "")),
        str(spec.get("stopPolicy") or "None"),
    )


def state_from_objects(
    objects: Iterable[Mapping[str, Any]],
    configuration: Mapping[str, Any] | None = None,
    missing: Iterable[str] = (),
    now: datetime | None = None,
) -> State:
    """A ``State`` of every ClusterQueue, Cohort, ResourceFlavor, LocalQueue, Namespace and Workload in
    ``objects`` (other kinds are ignored); Namespaces' labels are used only when some are given."""
    queues, cohorts, flavors, local_queues = {}, {}, {}, {}
    labels: dict[str, dict[str, str]] = {}
    admitted: list[AdmittedWorkload] = []
    pending: list[PendingWorkload] = []
    for obj in objects:
        kind = obj.get("kind")
        if kind == "ClusterQueue":
            queue = parse_cluster_queue(obj)
            queues[queue.name] = queue
        elif kind == "Cohort":
            cohort = parse_cohort(obj)
            cohorts[cohort.name] = cohort
        elif kind == "ResourceFlavor":
            flavor = parse_flavor(obj)
            flavors[flavor.name] = flavor
        elif kind == "LocalQueue":
            local = parse_local_queue(obj)
            local_queues[(local.namespace, local.name)] = local
        elif kind == "Namespace":
            metadata = _dict(obj.get("metadata"))
            labels[str(metadata.get("name", ""))] = string_map(metadata.get("labels"))
        elif kind == "Workload":
            workload = from_document(obj)
            if isinstance(workload, AdmittedWorkload):
                admitted.append(workload)
            elif workload is not None:
                pending.append(workload)
    return State(
        queues,
        cohorts,
        flavors,
        local_queues,
        tuple(admitted),
        tuple(pending),
        fair_sharing(configuration),
        frozenset(missing),
        labels or None,
        now or datetime.now().astimezone(),
    )
