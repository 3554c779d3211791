"""What is kept of each Workload as written, for ``explain``.

The ledger keeps a projection of each Workload (``webhook.quota.ledger.WorkloadEntry``):
enough to count quota, not to say why a job waits. ``explain`` reads a Workload's
conditions (type, status, reason, message, since when), its AdmissionChecks' states and
messages, ``spec.active``, its priority, its ClusterQueue, its requeue backoff, its
owner references and its ``kueue.x-k8s.io/`` labels (the job-uid label finds it). The
store keeps exactly that per Workload (``workload_record``) and nothing else: no
podSets, no pod templates, no managedFields. The record is a plain dict in the shape of
the Workload, so the explainer reads it as it reads a document from a file.

Memory: one record per Workload. Most of a record is its conditions, and Workloads made
in one burst carry equal ones (the same reasons, messages and times), so each condition,
AdmissionCheck and string in them is shared between the records that hold an equal one
(a bounded table, as the ledger shares usage). bench/README.md has the cost. The job objects themselves (JobSets, Jobs,
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


#: equal strings and conditions of the records, held once; cleared when full (live records keep
#: their own references, so clearing only stops sharing with records made before)
_SHARED: dict[Any, Any] = {}
_SHARED_LIMIT: Final = 65536


def _shared(value: Any) -> Any:
    if len(_SHARED) > _SHARED_LIMIT:
        _SHARED.clear()
    return _SHARED.setdefault(value, value)


def _shared_item(item: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """One condition or AdmissionCheck: its string values shared, and the whole dict shared with
    an equal one (records are never changed in place)."""
    picked = {key: _shared(item[key]) if isinstance(item[key], str) else item[key] for key in fields if key in item}
    try:
        key = ("item", *sorted(picked.items()))
        held: dict[str, Any] = _SHARED.get(key) or _shared_keyed(key, picked)
    except TypeError:  # a value that cannot be hashed (not Kueue's shape): kept as it is
        return picked
    return held


def _shared_keyed(key: Any, value: Any) -> Any:
    if len(_SHARED) > _SHARED_LIMIT:
        _SHARED.clear()
    _SHARED[key] = value
    return value


def _items(value: Any, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    """A list of conditions or AdmissionChecks, each shared, and the list shared with an equal one."""
    if not isinstance(value, list):
        return []
    items = [_shared_item(item, fields) for item in value if isinstance(item, Mapping)]
    key = ("list", *(id(item) for item in items))  # the items are the shared ones: equal items, same ids
    held: list[dict[str, Any]] | None = _SHARED.get(key)
    if held is not None and all(a is b for a, b in zip(held, items, strict=True)):
        return held
    return _shared_keyed(key, items)  # type: ignore[no-any-return]


def _shared_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec fields explain reads, shared with an equal spec (the priority class reference too)."""
    picked = _pick(spec, _SPEC_FIELDS)
    ref = picked.get("priorityClassRef")
    ref_key: Any = None
    if isinstance(ref, Mapping):
        picked["priorityClassRef"] = _shared_item(ref, ("group", "kind", "name"))
        ref_key = tuple(sorted(picked["priorityClassRef"].items()))
    try:
        key = ("spec", ref_key, *sorted((k, v) for k, v in picked.items() if k != "priorityClassRef"))
        held: dict[str, Any] = _SHARED.get(key) or _shared_keyed(key, picked)
    except TypeError:  # a value that cannot be hashed (not Kueue's shape): kept as it is
        return picked
    return held


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
    owners = [_pick(r, _OWNER_FIELDS) for r in metadata.get("ownerReferences") or () if isinstance(r, Mapping)]
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
        "spec": _shared_spec(spec),
        "status": record_status,
    }
