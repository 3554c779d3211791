"""What is kept of each Workload as written, for ``explain``.

The ledger keeps a projection of each Workload (``webhook.quota.ledger.WorkloadEntry``):
enough to count quota, not to say why a job waits. ``explain`` reads a Workload's
conditions (type, status, reason, message, since when), its AdmissionChecks' states and
messages, ``spec.active``, its priority, its ClusterQueue, its requeue backoff, its
owner references and its ``kueue.x-k8s.io/`` labels (the job-uid label finds it). The
store keeps exactly that per Workload (``workload_record``) and nothing else: no
podSets, no pod templates, no managedFields. The record is a plain dict in the shape of
the Workload, so the explainer reads it as it reads a document from a file.

Memory: one record per Workload, about the size of its conditions' messages. The job objects themselves (JobSets, Jobs,
Deployments) are not watched: a job is found from its Workloads' owner references.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Final

_CONDITION_FIELDS: Final = ("type", "status", "reason", "message", "lastTransitionTime")
_CHECK_FIELDS: Final = ("name", "state", "message", "lastTransitionTime")
_OWNER_FIELDS: Final = ("apiVersion", "kind", "name", "uid", "controller")
_SPEC_FIELDS: Final = ("queueName", "active", "priority", "priorityClassRef", "priorityClassName")
_LABEL_PREFIX: Final = "kueue.x-k8s.io/"


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pick(value: Any, fields: tuple[str, ...]) -> dict[str, Any]:
    source = _dict(value)
    return {key: source[key] for key in fields if key in source}


def _items(value: Any, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    return [_pick(item, fields) for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def workload_record(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a Workload ``explain`` reads (see the module), in the Workload's own shape."""
    metadata, spec, status = _dict(obj.get("metadata")), _dict(obj.get("spec")), _dict(obj.get("status"))
    labels = {
        sys.intern(str(key)): str(value)
        for key, value in _dict(metadata.get("labels")).items()
        if str(key).startswith(_LABEL_PREFIX)
    }
    record_meta: dict[str, Any] = {
        key: metadata[key] for key in ("name", "namespace", "uid", "creationTimestamp") if key in metadata
    }
    if labels:
        record_meta["labels"] = labels
    owners = _items(metadata.get("ownerReferences"), _OWNER_FIELDS)
    if owners:
        record_meta["ownerReferences"] = owners
    record_status: dict[str, Any] = {"conditions": _items(status.get("conditions"), _CONDITION_FIELDS)}
    admission = _dict(status.get("admission"))
    if "clusterQueue" in admission:
        record_status["admission"] = {"clusterQueue": admission["clusterQueue"]}
    if "admissionChecks" in status:
        record_status["admissionChecks"] = _items(status.get("admissionChecks"), _CHECK_FIELDS)
    if "requeueState" in status:
        record_status["requeueState"] = _pick(status.get("requeueState"), ("count", "requeueAt"))
    return {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": "Workload",
        "metadata": record_meta,
        "spec": _pick(spec, _SPEC_FIELDS),
        "status": record_status,
    }
