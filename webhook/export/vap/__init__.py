"""``tpu-admission export vap``: the structural rules as a ValidatingAdmissionPolicy.

The API server evaluates a ValidatingAdmissionPolicy (CEL, admissionregistration.k8s.io/v1,
GA in Kubernetes 1.30) in-process: no network hop, nothing to go down. Exporting the rules
that are pure functions of the JobSet and its namespace's tier label keeps them enforced
while every webhook replica is down. The webhook stays the first line (mutation, cluster
rules, every structural rule, better messages); the policy is the safety net.

Everything here is generated from the same policy the server loads: mode, tiers, label
names, whitelists and numbers are inlined as CEL literals, so the export must be
re-run when the policy changes (docs/operations.md says so). Which rules are exported, and
why the others are not, is each rule's own ``VapExport``; a test holds the two together.

Cost. The API server charges every CEL evaluation against a per-expression limit (1M
units) and a per-evaluation budget (10M). Every expression below does constant work per
replicatedJob, plus constant work per container of a TPU podSet, on strings that are
bounded before any regex or ``int()`` runs. The policy's one matchCondition keeps it to
JobSets of at most ``MAX_REPLICATED_JOBS`` replicatedJobs and ``MAX_CONTAINERS``
containers per pod, so the worst case is a fixed number (docs/operations.md, "Cost"); bigger JobSets
are left to the webhook rather than risk a cost error that ``failurePolicy: Fail`` would
turn into a refusal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from webhook.policy.config import Policy
from webhook.policy.findings import Action
from webhook.rules.catalog import RULES
from webhook.rules.cel import ANN, CONTAINERS, JOBS, SEL, Validation, lit

API_VERSION = "admissionregistration.k8s.io/v1"
NAME = "tpu-admission"
WARN_NAME = "tpu-admission-warn"
#: the namespaces the webhook configurations exclude; so does the policy
EXCLUDED_NAMESPACES = ("kube-system", "tpu-admission")


def jobset_create_constraints(policy: Policy, tiers: list[str]) -> dict[str, Any]:
    """JobSet CREATE in the given tiers' namespaces: what the webhook entries match, for both policies."""
    return {
        "resourceRules": [
            {
                "apiGroups": ["jobset.x-k8s.io"],
                "apiVersions": ["v1alpha2"],
                "resources": ["jobsets"],
                "operations": ["CREATE"],
                "scope": "Namespaced",
            }
        ],
        "namespaceSelector": {
            "matchExpressions": [
                {"key": policy.tier_label, "operator": "In", "values": tiers},
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(EXCLUDED_NAMESPACES)},
            ]
        },
    }


MAX_REPLICATED_JOBS = 32
MAX_CONTAINERS = 8
VALIDATION_ACTIONS = ("Deny", "Warn", "Audit")


# ------------------------------------------------------------------ assembling


def validations(policy: Policy) -> list[Validation]:
    """Every exported rule that applies in the policy's mode and is not ``off``, in catalog order."""
    out: list[Validation] = []
    for rule in RULES:
        export = rule.vap.validations
        if export is None or policy.mode not in rule.modes:
            continue
        out.extend(export(policy))
    return [v for v in out if v.action is not Action.OFF]


def variables(policy: Policy) -> list[dict[str, str]]:
    tpu = policy.tpu
    resource, ann, acc = lit(tpu.resource_name), lit(tpu.slice_topology_annotation), lit(tpu.accelerator_label)
    is_tpu = (
        f"{CONTAINERS}.exists(c, {resource} in c.?resources.?requests.orValue({{}}) || "
        f"{resource} in c.?resources.?limits.orValue({{}})) || {ann} in {ANN} || {acc} in {SEL}"
    )
    return [
        {"name": "tier", "expression": f"namespaceObject.metadata.?labels[?{lit(policy.tier_label)}].orValue('')"},
        {"name": "labels", "expression": "object.metadata.?labels.orValue({})"},
        # The TPU podSets (workload.PodSet.is_tpu): what most rules judge.
        {"name": "tpuJobs", "expression": f"{JOBS}.filter(j, {is_tpu})"},
    ]


def within_bounds() -> str:
    """The matchCondition that bounds every expression's cost (module docstring)."""
    return f"{JOBS}.size() <= {MAX_REPLICATED_JOBS} && {JOBS}.all(j, {CONTAINERS}.size() <= {MAX_CONTAINERS})"


def _policy(policy: Policy, name: str, checks: list[Validation]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": NAME}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": jobset_create_constraints(policy, sorted(policy.tiers)),
            "matchConditions": [{"name": "within-cost-bounds", "expression": within_bounds()}],
            "variables": variables(policy),
            "validations": [
                {
                    "expression": v.expression,
                    "message": v.message,
                    **({"messageExpression": v.message_expression} if v.message_expression else {}),
                    "reason": "Forbidden",
                }
                for v in checks
            ],
        },
    }


def _binding(name: str, actions: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": NAME}},
        "spec": {"policyName": name, "validationActions": list(actions)},
    }


def export_objects(policy: Policy, actions: Sequence[str] = ("Deny",)) -> list[dict[str, Any]]:
    """The policies and bindings: deny-level rules bound with ``actions``, warn-level ones with Warn."""
    unknown = [a for a in actions if a not in VALIDATION_ACTIONS]
    if unknown or not actions or ("Deny" in actions and "Warn" in actions):
        raise ValueError(
            f"validation actions {list(actions)!r}: use Deny, Warn or Audit (Deny and Warn do not go together)"
        )
    checks = validations(policy)
    deny = [v for v in checks if v.action is Action.DENY]
    warn = [v for v in checks if v.action is Action.WARN]
    objects = []
    if deny:
        objects += [_policy(policy, NAME, deny), _binding(NAME, actions)]
    if warn:
        objects += [_policy(policy, WARN_NAME, warn), _binding(WARN_NAME, ["Warn"])]
    return objects


def render(policy: Policy, actions: Sequence[str] = ("Deny",)) -> str:
    header = (
        f"# Generated by `tpu-admission export vap` (mode: {policy.mode}). The structural rules of the\n"
        "# webhook as a ValidatingAdmissionPolicy the API server enforces itself; re-generate it\n"
        "# whenever the policy config changes.\n"
    )
    body = yaml.dump_all(
        export_objects(policy, actions), Dumper=yaml.SafeDumper, sort_keys=False, width=1_000_000, allow_unicode=True
    )
    return header + body
