"""The default-label JSON patch (RFC 6902) for tiers that inject queue and priority."""

from __future__ import annotations

import binascii
from functools import lru_cache
from typing import Any, Final

from webhook.kube.fieldpaths import LABELS, METADATA
from webhook.objects.workload import Workload
from webhook.policy.config import Policy, TierPolicy
from webhook.wire.jsonwire import encode

JsonPatch = list[dict[str, Any]]

#: the RFC 6901 pointers of the two maps a label patch may create (worked out once)
_METADATA_POINTER: Final = METADATA.pointer()
_LABELS_POINTER: Final = LABELS.pointer()


def default_labels(workload: Workload, tier: TierPolicy, policy: Policy) -> dict[str, str]:
    """The labels to add: the tier's defaults that the user did not set. Never overwrites."""
    wanted = {
        policy.queue_label: tier.default_queue,
        policy.priority_label: tier.default_priority_class,
    }
    return {key: value for key, value in wanted.items() if value is not None and key not in workload.labels}


def label_patch(workload: Workload, added: dict[str, str]) -> JsonPatch:
    """Add ``added`` to ``metadata.labels``, creating the map (or metadata) when absent.

    Label keys contain ``/``, which RFC 6901 escapes as ``~1`` in the path.
    """
    return _ops(workload.has_metadata, workload.has_labels_map, added)


def _ops(has_metadata: bool, has_labels_map: bool, added: dict[str, str]) -> JsonPatch:
    if not added:
        return []
    if not has_metadata:
        return [{"op": "add", "path": _METADATA_POINTER, "value": {"labels": dict(added)}}]
    if not has_labels_map:
        # "add" on an existing member (e.g. ``labels: null``) replaces it, as RFC 6902 says.
        return [{"op": "add", "path": _LABELS_POINTER, "value": dict(added)}]
    return [{"op": "add", "path": _label_pointer(key), "value": value} for key, value in added.items()]


def patch_wire(patch: JsonPatch) -> str:
    """``patch`` as an AdmissionReview response carries it: base64 of its JSON."""
    # binascii directly: base64.b64encode is a Python wrapper around the same call
    return binascii.b2a_base64(encode(patch), newline=False).decode("ascii")


def label_patch_wire(workload: Workload, added: dict[str, str]) -> str:
    """``patch_wire(label_patch(workload, added))``, worked out once per shape.

    A policy's label patches come in a handful of shapes (which map exists, which of the
    tier's defaults are missing), and their keys and values are the policy's, never the
    object's: a small cache holds them all, and a patched answer skips encoding.
    """
    return _label_patch_wire(workload.has_metadata, workload.has_labels_map, tuple(added.items()))


@lru_cache(maxsize=64)  # keys: the policy's label names and the tiers' default values
def _label_patch_wire(has_metadata: bool, has_labels_map: bool, added: tuple[tuple[str, str], ...]) -> str:
    return patch_wire(_ops(has_metadata, has_labels_map, dict(added)))


@lru_cache(maxsize=16)  # the keys are the policy's queue and priority labels
def _label_pointer(key: str) -> str:
    return LABELS.key(key).pointer()
