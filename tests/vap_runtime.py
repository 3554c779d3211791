"""The exported ValidatingAdmissionPolicy, evaluated the way the API server does, with a real
CEL runtime (cel-expr-python, with the strings and optional extensions Kubernetes enables).

What the API server does for one JobSet CREATE, in order (k8s.io/apiserver's validating
policy plugin): the policy's ``matchConstraints`` (resource, operation, namespaceSelector)
and ``matchConditions`` decide whether it applies; ``variables`` are evaluated (lazily
there, eagerly here: stricter, an error in an unused variable fails here too); every
validation's ``expression`` must be a bool, and for a false one the ``messageExpression``
is evaluated. Any error is a failure of the test: under ``failurePolicy: Fail`` the API
server would refuse the request for it.

The one part of the Kubernetes CEL environment that cel-expr-python lacks is the quantity
library (``isQuantity``, ``quantity``, ``compareTo``); it is supplied here on top of the
webhook's own quantity parser (tests/test_kube_quantity.py holds that parser to Kubernetes').

Also here: ``api_server_view``, the object as a validating admission policy receives it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any

import jsonschema
from cel_expr_python import cel
from cel_expr_python.ext import ext_optional, ext_strings
from support import upstream_crd

from webhook.kube.quantity import QuantityError, parse_quantity
from webhook.kube.scheduling import selector_matches


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _quantity(text: str) -> str:
    # An opaque value for compareTo: the exact decimal, as text. quantity() of a string
    # that is not one is an error in Kubernetes; the exported CEL guards with isQuantity.
    return "quantity:" + str(parse_quantity(text))


def _compare(left: str, right: str) -> int:
    a, b = Decimal(left.removeprefix("quantity:")), Decimal(right.removeprefix("quantity:"))
    return (a > b) - (a < b)


QUANTITY_FUNCTIONS = [
    cel.FunctionDecl("isQuantity", [cel.Overload("is_quantity", cel.Type.BOOL, [cel.Type.STRING], impl=_is_quantity)]),
    cel.FunctionDecl("quantity", [cel.Overload("quantity", cel.Type.DYN, [cel.Type.STRING], impl=_quantity)]),
    cel.FunctionDecl(
        "compareTo",
        [
            cel.Overload(
                "quantity_compare_to", cel.Type.INT, [cel.Type.STRING, cel.Type.STRING], is_member=True, impl=_compare
            )
        ],
    ),
]
ENV = cel.NewEnv(
    variables={
        name: cel.Type.DYN for name in ("object", "oldObject", "request", "namespaceObject", "variables", "params")
    },
    extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional()],
    functions=QUANTITY_FUNCTIONS,
)
RULE_ID = re.compile(r"^\[([a-z0-9-]+)\] ")


class CelFailure(AssertionError):
    """A CEL expression errored or gave the wrong type: the API server would fail the request."""


@lru_cache(maxsize=4096)
def _compiled(expression: str) -> Any:
    return ENV.compile(expression)


def evaluate(expression: str, data: dict[str, Any], want: Any, where: str) -> Any:
    try:
        value = _compiled(expression).eval(data=data)
    except Exception as exc:
        raise CelFailure(f"{where}: {exc}") from exc
    if value.type() != want:
        raise CelFailure(f"{where}: expected {want.name()}, got {value.type().name()}: {value.value()}")
    return value.plain_value()


@dataclass
class Verdict:
    """What the exported policies did to one request."""

    applied: bool = False
    #: rule id -> message, for the validations that failed, per binding action
    denied: dict[str, str] = field(default_factory=dict)
    warned: dict[str, str] = field(default_factory=dict)

    @property
    def fired(self) -> set[str]:
        return set(self.denied) | set(self.warned)


class PolicyRuntime:
    """The exported objects (policies and their bindings) applied to CREATE requests."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
        self.bindings = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"]
        for binding in self.bindings:
            assert binding["spec"]["policyName"] in self.policies, binding
        for policy in self.policies.values():  # every expression compiles up front
            spec = policy["spec"]
            texts = [c["expression"] for c in spec.get("matchConditions", [])]
            texts += [v["expression"] for v in spec.get("variables", [])]
            for validation in spec["validations"]:
                texts += [validation["expression"], validation.get("messageExpression", "")]
            for text in filter(None, texts):
                try:
                    _compiled(text)
                except Exception as exc:
                    raise CelFailure(f"{policy['metadata']['name']}: does not compile: {exc}\n{text[:300]}") from exc

    def review(
        self, obj: dict[str, Any], namespace: str, namespace_labels: dict[str, str], user: dict[str, Any]
    ) -> Verdict:
        labels = {**namespace_labels, "kubernetes.io/metadata.name": namespace}
        namespace_object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}}
        request = {
            "operation": "CREATE",
            "namespace": namespace,
            "name": obj["metadata"]["name"],
            "userInfo": user,
            "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
            "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
            "dryRun": False,
        }
        data: dict[str, Any] = {
            "object": obj,
            "oldObject": None,
            "request": request,
            "namespaceObject": namespace_object,
            "params": None,
        }
        verdict = Verdict()
        for binding in self.bindings:
            policy = self.policies[binding["spec"]["policyName"]]
            spec = policy["spec"]
            constraints = spec["matchConstraints"]
            assert [r["operations"] for r in constraints["resourceRules"]] == [["CREATE"]]
            if not selector_matches(constraints.get("namespaceSelector", {}), labels):
                continue
            name = policy["metadata"]["name"]
            conditions = [
                evaluate(
                    c["expression"], {**data, "variables": {}}, cel.Type.BOOL, f"{name} matchCondition {c['name']}"
                )
                for c in spec.get("matchConditions", [])
            ]
            if not all(conditions):
                continue
            verdict.applied = True
            values: dict[str, Any] = {}
            for variable in spec.get("variables", []):
                values[variable["name"]] = _evaluate_any(variable["expression"], {**data, "variables": values}, name)
            scope = {**data, "variables": values}
            for validation in spec["validations"]:
                rule = RULE_ID.match(validation["message"])
                assert rule, validation["message"]
                where = f"{name} [{rule.group(1)}]"
                if evaluate(validation["expression"], scope, cel.Type.BOOL, where):
                    continue
                message = validation["message"]
                if validation.get("messageExpression"):
                    message = evaluate(validation["messageExpression"], scope, cel.Type.STRING, where + " message")
                    assert message.startswith(f"[{rule.group(1)}] "), message
                    assert "\n" not in message, message
                target = verdict.denied if "Deny" in binding["spec"]["validationActions"] else verdict.warned
                target[rule.group(1)] = message
        return verdict


def _evaluate_any(expression: str, data: dict[str, Any], where: str) -> Any:
    try:
        return _compiled(expression).eval(data=data).plain_value()
    except Exception as exc:
        raise CelFailure(f"{where} variable: {exc}") from exc


# ------------------------------------------------------------------ the API server's view


@lru_cache(maxsize=1)
def _jobset_validator() -> Any:
    crd = upstream_crd("jobset.x-k8s.io_jobsets.yaml")
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2"]
    schema = version["schema"]["openAPIV3Schema"]
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)(schema)


_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_QUALIFIED_NAME = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)


def _qualified(key: Any) -> bool:
    if not isinstance(key, str) or not _QUALIFIED_NAME.fullmatch(key):
        return False
    prefix, _, name = key.rpartition("/")
    return len(name) <= 63 and len(prefix) <= 253


def _without_nulls(node: Any) -> Any:
    """ObjectMeta decoding and the structural schema's pruning drop ``null`` fields
    (none of the JobSet's fields is nullable)."""
    if isinstance(node, dict):
        return {key: _without_nulls(value) for key, value in node.items() if value is not None}
    if isinstance(node, list):
        return [_without_nulls(value) for value in node]
    return node


_META_FIELDS = ("name", "generateName", "namespace", "labels", "annotations")
_INT64 = range(-(2**63), 2**63)


def _prune(node: Any, schema: dict[str, Any]) -> Any:
    """Drop the fields the structural schema does not know, as the API server does."""
    if isinstance(node, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return node
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        out = {}
        for key, value in node.items():
            if properties is not None and key in properties:
                out[key] = _prune(value, properties[key])
            elif isinstance(extra, dict):
                out[key] = _prune(value, extra)
            elif properties is None and extra is None and schema.get("type") == "object":
                out[key] = value  # a free-form object (top-level metadata: handled by the caller)
        return out
    if isinstance(node, list) and isinstance(schema.get("items"), dict):
        return [_prune(value, schema["items"]) for value in node]
    return node


def _ints_fit(node: Any) -> bool:
    """JSON numbers beyond int64 decode as floats, which an integer field refuses."""
    if isinstance(node, dict):
        return all(_ints_fit(value) for value in node.values())
    if isinstance(node, list):
        return all(_ints_fit(value) for value in node)
    return not isinstance(node, int) or isinstance(node, bool) or node in _INT64


def api_server_view(obj: Any, namespace: str) -> dict[str, Any] | None:
    """The object as a validating admission policy sees it on CREATE, or ``None`` when the
    API server refuses it before (not a valid JobSet per the CRD schema, bad metadata).

    The API server fills in ``metadata.namespace``, generates a name from ``generateName``
    (five characters) and applies the schema's defaults before validating admission.
    """
    obj = _without_nulls(obj)
    if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
        return None
    obj = _prune(obj, _jobset_validator().schema)
    obj["metadata"] = {key: value for key, value in obj["metadata"].items() if key in _META_FIELDS}
    if not _ints_fit(obj):
        return None
    if next(_jobset_validator().iter_errors(obj), None) is not None:
        return None
    metadata = obj["metadata"]
    labels, annotations = metadata.get("labels", {}), metadata.get("annotations", {})
    if not isinstance(labels, dict) or not isinstance(annotations, dict):
        return None  # ObjectMeta does not decode
    if any(not isinstance(metadata.get(key, ""), str) for key in ("name", "generateName", "namespace")):
        return None
    for key, value in labels.items():
        if not _qualified(key) or not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
            return None
    for key, value in annotations.items():
        if not _qualified(key) or not isinstance(value, str):
            return None
    if metadata.get("namespace") not in (None, namespace):
        return None
    view = obj  # already a copy
    meta = view["metadata"]
    meta["namespace"] = namespace
    name, generate = meta.get("name"), meta.get("generateName")
    if not (isinstance(name, str) and name):
        if not (isinstance(generate, str) and generate):
            return None
        meta["name"] = generate + "x7k2q"
    for job in (view.get("spec") or {}).get("replicatedJobs") or []:
        job.setdefault("replicas", 1)  # the CRD's default
        job.setdefault("groupName", "default")
    return view
