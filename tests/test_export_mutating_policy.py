"""``export map``: the MutatingAdmissionPolicy adds exactly the labels the webhook's patch adds.

Its JSON patch expression is evaluated by a real CEL runtime (cel-expr-python; the
``JSONPatch`` type Kubernetes declares is given here as a protobuf message with the same
fields) on the rule-example corpus and a fuzz corpus, applied to the object as the API
server hands it over, and the result compared with the webhook's own patch applied.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any

import jsonpatch
import kubernetes_validate
import pytest
import yaml
from cel_expr_python import cel
from cel_expr_python.ext import ext_optional, ext_strings
from fuzzing import targeted_jobsets
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, struct_pb2
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from rule_cases import CASES, RuleCase
from vap_runtime import CelFailure, api_server_view

from webhook.cli.main import main as cli_main
from webhook.engine.decision import AdmissionFacts, decide
from webhook.engine.patches import default_labels, label_patch
from webhook.export import mutating_policy
from webhook.objects.kinds import JOBSET
from webhook.objects.readers import read_workload
from webhook.policy.config import Policy

VERSIONS = ("1.36", kubernetes_validate.latest_version())


@lru_cache(maxsize=1)
def env() -> Any:
    pool = descriptor_pool.DescriptorPool()
    struct = descriptor_pb2.FileDescriptorProto()
    struct_pb2.DESCRIPTOR.CopyToProto(struct)
    pool.Add(struct)
    patch = descriptor_pb2.FileDescriptorProto(
        name="jsonpatch.proto", dependency=["google/protobuf/struct.proto"], syntax="proto3"
    )
    message = patch.message_type.add(name="JSONPatch")
    string, optional = (
        descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
        descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    for number, name in enumerate(("op", "path", "from"), 1):
        message.field.add(name=name, number=number, type=string, label=optional)
    message.field.add(
        name="value",
        number=4,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
        type_name=".google.protobuf.Value",
        label=optional,
    )
    pool.Add(patch)
    names = ("object", "oldObject", "request", "namespaceObject", "variables", "params")
    return cel.NewEnv(
        descriptor_pool=pool,
        variables={name: cel.Type.DYN for name in names},
        extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()],
    )


def evaluate(expression: str, data: dict[str, Any]) -> Any:
    try:
        value = env().compile(expression).eval(data=data)
    except Exception as exc:  # compile errors surface as RuntimeError
        raise CelFailure(str(exc)) from exc
    if value.type() == cel.Type.ERROR:
        raise CelFailure(str(value.value()))
    return value.plain_value()


def apply_policy(policy: Policy, obj: dict[str, Any], namespace: str, tier: str | None) -> dict[str, Any]:
    """The object after the exported policy, as the API server would apply it."""
    objects = mutating_policy.export_objects(policy)
    if not objects:
        return obj
    spec = objects[0]["spec"]
    labels = {"kubernetes.io/metadata.name": namespace, **({policy.tier_label: tier} if tier else {})}
    selector = spec["matchConstraints"]["namespaceSelector"]["matchExpressions"]
    if labels.get(selector[0]["key"]) not in selector[0]["values"] or namespace in selector[1]["values"]:
        return obj
    data: dict[str, Any] = {
        "object": obj,
        "oldObject": None,
        "request": {"operation": "CREATE", "namespace": namespace},
        "namespaceObject": {"metadata": {"name": namespace, "labels": labels}},
        "params": None,
        "variables": {},
    }
    data["variables"] = {v["name"]: evaluate(v["expression"], data) for v in spec["variables"]}
    patch: list[dict[str, Any]] = []
    for mutation in spec["mutations"]:
        assert mutation["patchType"] == "JSONPatch"
        result = evaluate(mutation["jsonPatch"]["expression"], data)
        assert isinstance(result, list), result
        patch += [json_format.MessageToDict(op, preserving_proto_field_name=True) for op in result]
    for op in patch:
        assert op["op"] == "add" and op["path"].startswith("/metadata/labels"), op
    return jsonpatch.apply_patch(obj, patch) if patch else obj


def compare(obj: Any, policy: Policy, namespace: str) -> dict[str, Any] | None:
    view = api_server_view(obj, namespace)
    if view is None:
        return None
    decision = decide(copy.deepcopy(view), AdmissionFacts(namespace=namespace), policy)
    after = apply_policy(policy, copy.deepcopy(view), namespace, decision.tier)
    expected = view
    if decision.tier is not None:
        workload = read_workload(JOBSET, view, policy, namespace)
        added = default_labels(workload, policy.tiers[decision.tier], policy)
        expected = jsonpatch.apply_patch(view, label_patch(workload, added))
    assert after == expected, (after["metadata"], expected["metadata"])
    if decision.patch:
        assert jsonpatch.apply_patch(view, decision.patch) == after
    # The webhook, run after the policy, has nothing left to add and decides the same.
    again = decide(copy.deepcopy(after), AdmissionFacts(namespace=namespace), policy)
    assert again.patch == [] and again.allowed == decision.allowed
    return after


@pytest.mark.parametrize("version", VERSIONS)
def test_export_is_schema_valid(version: str) -> None:
    objects = list(yaml.safe_load_all(mutating_policy.render(Policy())))
    assert [o["kind"] for o in objects] == ["MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"]
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)


def test_no_tier_injects_nothing_exported() -> None:
    policy = Policy(tiers={"production": {"allowedPriorityClasses": ["guaranteed"]}}, namespaceTiers={})
    assert mutating_policy.export_objects(policy) == []


def test_cli_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["export", "map"]) == 0
    assert list(yaml.safe_load_all(capsys.readouterr().out)) == mutating_policy.export_objects(Policy())


#: the export covers JobSets only (its matchConstraints); Jobs and Deployments stay with the webhook
JOBSET_CASES = [case for case in CASES if case.kind == JOBSET]


@pytest.mark.parametrize("case", JOBSET_CASES, ids=lambda c: c.id)
def test_rule_examples_get_the_webhooks_labels(case: RuleCase) -> None:
    obj = case.object()
    namespace = obj["metadata"].get("namespace", "default")
    result = compare(obj, case.policy(), namespace)
    assert result is not None or case.rule == "jobset-malformed"


@pytest.mark.parametrize(
    "labels",
    [None, {}, {"kueue.x-k8s.io/queue-name": "team-a-queue"}, {"kueue.x-k8s.io/priority-class": "default"}, {"a": "b"}],
)
@pytest.mark.parametrize("namespace", ["default", "kubemaker"])
def test_label_shapes(labels: dict[str, str] | None, namespace: str) -> None:
    obj = targeted_base()
    if labels is None:
        obj["metadata"].pop("labels", None)
    else:
        obj["metadata"]["labels"] = labels
    after = compare(obj, Policy(), namespace)
    assert after is not None
    if namespace == "default":
        assert {"kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/priority-class"} <= set(after["metadata"]["labels"])
        for key, value in (labels or {}).items():
            assert after["metadata"]["labels"][key] == value, "a user's label was overwritten"
    else:
        assert after["metadata"].get("labels") == labels


def targeted_base() -> dict[str, Any]:
    from support import load_jobset

    obj = load_jobset("rfc-4.6-static")
    obj["metadata"].pop("namespace", None)
    return obj


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(obj=targeted_jobsets(), namespace=st.sampled_from(["kubemaker", "default", "falcon-jobs", "unlabelled"]))
def test_fuzz_corpus_gets_the_webhooks_labels(obj: dict[str, Any], namespace: str) -> None:
    after = compare(obj, Policy(), namespace)
    assume(after is not None)
    event("labels added" if after and after["metadata"].get("labels") != obj["metadata"].get("labels") else "unchanged")
