"""The default-label patch, and its wire form: base64 of the patch's JSON."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import pytest
from support import load_jobset

from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.policy.config import Policy
from webhook.wire.reviews import patch_wire, review_response

DYNAMIC = Policy(mode="dynamic")
QUEUE, PRIORITY = "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/priority-class"


def _shape(name: str) -> dict[str, Any]:
    """The dev-tier JobSet with its metadata in one of the shapes a label patch must handle."""
    obj = load_jobset("falcon-migration")
    metadata = obj["metadata"]
    if name == "no metadata":
        del obj["metadata"]
    elif name == "labels null":
        metadata["labels"] = None
    elif name == "no labels map":
        metadata.pop("labels", None)
    elif name == "queue set":
        metadata["labels"] = {"app": "sft", QUEUE: "default"}
    elif name == "priority set":
        metadata["labels"] = {PRIORITY: "default"}
    elif name == "both set":
        metadata["labels"] = {QUEUE: "default", PRIORITY: "default"}
    return obj


SHAPES = ["no metadata", "labels null", "no labels map", "queue set", "priority set", "both set"]
#: the patch each shape gets, as RFC 6902 operations
EXPECTED: dict[str, list[dict[str, Any]]] = {
    "no metadata": [{"op": "add", "path": "/metadata", "value": {"labels": {QUEUE: "default", PRIORITY: "default"}}}],
    "labels null": [{"op": "add", "path": "/metadata/labels", "value": {QUEUE: "default", PRIORITY: "default"}}],
    "no labels map": [{"op": "add", "path": "/metadata/labels", "value": {QUEUE: "default", PRIORITY: "default"}}],
    "queue set": [{"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1priority-class", "value": "default"}],
    "priority set": [{"op": "add", "path": "/metadata/labels/kueue.x-k8s.io~1queue-name", "value": "default"}],
    "both set": [],
}


def _decide(obj: dict[str, Any]) -> Decision:
    return decide(obj, AdmissionFacts(operation="CREATE", stage="mutate", namespace="default", kind="JobSet"), DYNAMIC)


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_gets_its_patch_and_the_wire_form_of_that_patch(shape: str) -> None:
    obj = _shape(shape)
    decision = _decide(obj)
    assert decision.allowed
    assert decision.patch == EXPECTED[shape]
    response = review_response("u", decision)["response"]
    if not decision.patch:
        assert "patch" not in response and "patchType" not in response
        return
    assert response["patchType"] == "JSONPatch" and response["patch"] == patch_wire(decision.patch)
    assert json.loads(base64.b64decode(response["patch"])) == decision.patch
    patched = jsonpatch.apply_patch(obj, decision.patch)
    assert {QUEUE: "default", PRIORITY: "default"}.items() <= patched["metadata"]["labels"].items()
