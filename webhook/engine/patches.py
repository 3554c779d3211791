"""The default-label JSON patch (RFC 6902) for tiers that inject queue and priority."""

from __future__ import annotations

from typing import Any, Final

from webhook.kube.fieldpaths import LABELS, METADATA, pointer_token
from webhook.objects.workload import Workload
from webhook.policy.config import Policy, TierPolicy

JsonPatch = list[dict[str, Any]]

#: the RFC 6901 pointers of the two maps a label patch may create (worked out once)
_METADATA_POINTER: Final = METADATA.pointer()
_LABELS_POINTER: Final = LABELS.pointer()


def default_labels(workload: Workload, tier: TierPolicy, policy: Policy) -> dict[str, str]:
    """The labels to add: the tier's defaults that the user did not set. Never overwrites."""
    added = {}
    labels = workload.labels
    if tier.default_queue is not None and policy.queue_label not in labels:
        added[policy.queue_label] = tier.default_queue
    if tier.default_priority_class is not None and policy.priority_label not in labels:
        added[policy.priority_label] = tier.default_priority_class
    return added


def label_patch(workload: Workload, added: dict[str, str]) -> JsonPatch:
    """Add ``added`` to ``metadata.labels``, creating the map (or metadata) when absent.

    Label keys contain ``/``, which RFC 6901 escapes as ``~1`` in the path.
    """
    if not added:
        return []
    if not workload.has_metadata:
        return [{"op": "add", "path": _METADATA_POINTER, "value": {"labels": dict(added)}}]
    if not workload.has_labels_map:
        # "add" on an existing member (e.g. ``labels: null``) replaces it, as RFC 6902 says.
        return [{"op": "add", "path": _LABELS_POINTER, "value": dict(added)}]
    return [{"op": "add", "path": _label_pointer(key), "value": value} for key, value in added.items()]


def _label_pointer(key: str) -> str:
    """``/metadata/labels/<key>``, the key escaped as one pointer step."""
    return f"{_LABELS_POINTER}/{pointer_token(key)}"
