"""The default-label patch and its wire form: the cached base64 is the patch's, byte for byte."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import pytest
from support import load_jobset

from webhook.engine.decision import AdmissionFacts, Decision, decide
from webhook.engine.patches import _label_patch_wire, patch_wire
from webhook.policy.config import Policy
from webhook.wire.reviews import review_response

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
    return decide(obj, AdmissionFacts("CREATE", "mutate", "default", kind="JobSet"), DYNAMIC)


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_gets_its_patch_and_the_wire_form_of_that_patch(shape: str) -> None:
    obj = _shape(shape)
    decision = _decide(obj)
    assert decision.allowed
    assert decision.patch == EXPECTED[shape]
    if not decision.patch:
        assert decision.patch_wire == ""
        assert "patch" not in review_response("u", decision)["response"]
        return
    assert json.loads(base64.b64decode(decision.patch_wire)) == decision.patch
    assert decision.patch_wire == patch_wire(decision.patch)
    patched = jsonpatch.apply_patch(obj, decision.patch)
    assert {QUEUE: "default", PRIORITY: "default"}.items() <= patched["metadata"]["labels"].items()


@pytest.mark.parametrize("shape", SHAPES[:-1])
def test_an_answer_is_the_same_bytes_whether_the_engine_gave_the_wire_form_or_not(shape: str) -> None:
    decision = _decide(_shape(shape))
    cached = review_response("u", decision)
    decision.patch_wire = ""  # as a Decision built elsewhere: review_response encodes the patch
    assert review_response("u", decision) == cached
    assert cached["response"]["patchType"] == "JSONPatch"


def test_the_wire_cache_holds_shapes_not_objects() -> None:
    """Its keys are the policy's label names and the tier's values: a stream of different
    objects of one shape adds one entry, whatever their names, labels and sizes."""

    def labelled(index: int) -> dict[str, Any]:
        obj = _shape("no labels map")
        obj["metadata"]["name"] = f"job-{index}"
        obj["metadata"]["labels"] = {f"team-{index}": "x" * index}
        return obj

    _decide(labelled(0))
    before = _label_patch_wire.cache_info().currsize
    for index in range(1, 200):
        assert _decide(labelled(index)).patch_wire
    assert _label_patch_wire.cache_info().currsize == before
