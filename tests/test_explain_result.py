"""The JSON answer is SPEC §13's shape exactly, for every state; quota amounts are JSON numbers."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import jsonschema
import msgspec
import pytest
from explain_builders import (
    StoredJobSet,
    amounts,
    preemptor_workload,
    queued_workload,
    rfc_example_one,
    rfc_example_two,
    simulation,
    tpu_pool,
    workload_index,
)

from webhook.explain.explainer import ExplainRequest, explain
from webhook.explain.result import document, number, quota_numbers

_NULLABLE_STRING = {"type": ["string", "null"]}
_NUMBERS = {
    "type": "object",
    "additionalProperties": False,
    "required": ["nominal", "inUse", "borrowed", "pending"],
    "properties": {key: {"type": "number"} for key in ("nominal", "inUse", "borrowed", "pending")},
}
#: SPEC §13's JSON, restated as a schema: every field required, nothing else allowed
SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["results", "errors"],
    "properties": {
        "errors": {"type": "array", "items": {"type": "string"}},
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": [
                    "kind",
                    "namespace",
                    "name",
                    "workload",
                    "state",
                    "reason",
                    "since",
                    "clusterQueue",
                    "preemptor",
                    "simulation",
                    "quota",
                    "message",
                ],
                "properties": {
                    "kind": {"type": "string"},
                    "namespace": {"type": "string"},
                    "name": {"type": "string"},
                    "workload": _NULLABLE_STRING,
                    "state": {
                        "enum": [
                            "NotManaged",
                            "Queued",
                            "ProvisioningSlice",
                            "Starting",
                            "Running",
                            "Preempted",
                            "Finished",
                            "Failed",
                            "Deactivated",
                        ]
                    },
                    "reason": _NULLABLE_STRING,
                    "since": _NULLABLE_STRING,
                    "clusterQueue": _NULLABLE_STRING,
                    "preemptor": {
                        "oneOf": [
                            {"type": "null"},
                            {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["workload", "job", "clusterQueue", "priority"],
                                "properties": {
                                    "workload": _NULLABLE_STRING,
                                    "job": _NULLABLE_STRING,
                                    "clusterQueue": _NULLABLE_STRING,
                                    "priority": {"type": ["integer", "null"]},
                                },
                            },
                        ]
                    },
                    "simulation": {"type": ["object", "null"]},
                    "quota": {
                        "oneOf": [
                            {"type": "null"},
                            {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["clusterQueue", "cohort"],
                                "properties": {
                                    "clusterQueue": {
                                        "type": "object",
                                        "additionalProperties": {"type": "object", "additionalProperties": _NUMBERS},
                                    },
                                    "cohort": _NULLABLE_STRING,
                                },
                            },
                        ]
                    },
                    "message": {"type": "string"},
                },
            },
        },
    },
}

WORKLOADS = {
    "NotManaged": [],
    "Queued": [queued_workload().obj()],
    "ProvisioningSlice": [rfc_example_one().condition("Admitted", "False").check("tpu7x-slice", "Pending").obj()],
    "Starting": [rfc_example_one().obj()],
    "Preempted": [rfc_example_two().obj(), preemptor_workload().obj()],
    "Finished": [rfc_example_one().condition("Finished", "True", "Succeeded").obj()],
    "Failed": [rfc_example_one().condition("Finished", "True", "Failed").obj()],
    "Deactivated": [queued_workload().active(False).obj()],
}


@pytest.mark.parametrize("state", sorted(WORKLOADS))
def test_every_state_answers_in_section_13s_shape(state: str) -> None:
    request = ExplainRequest(
        "JobSet", StoredJobSet().obj(), workload_index(WORKLOADS[state]), tpu_pool(), lambda: simulation("wait")
    )
    answer = document([explain(request).result()], ["other.yaml: not found"])
    jsonschema.validate(answer, SCHEMA)
    decoded = msgspec.json.decode(msgspec.json.encode(answer))
    assert (decoded["results"][0]["state"], decoded["errors"]) == (state, ["other.yaml: not found"])


def test_the_schema_refuses_what_section_13_does_not_have() -> None:
    request = ExplainRequest("JobSet", StoredJobSet().obj(), workload_index(WORKLOADS["Starting"]), tpu_pool())
    answer = document([explain(request).result()])
    answer["results"][0]["extra"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(answer, SCHEMA)


def test_amounts_are_json_numbers_whole_or_fractional() -> None:
    assert (number(Decimal("128")), number(Decimal("0.5")), number(Decimal("1.0"))) == (128, 0.5, 1)
    numbers = quota_numbers({"cpu": {"cpu": amounts(4, 2)}, "a": {"memory": amounts(2**40)}})
    assert list(numbers) == ["a", "cpu"]
    assert msgspec.to_builtins(numbers["a"]["memory"]) == {
        "nominal": 1099511627776,
        "inUse": 0,
        "borrowed": 0,
        "pending": 0,
    }
