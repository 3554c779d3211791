"""Every structural rule against its allowed and disallowed examples (rule_examples.yaml)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from rule_cases import CASES, RuleCase
from support import assert_example_findings, upstream_crd

import webhook
from webhook.engine.decision import AdmissionFacts, decide
from webhook.objects import kinds
from webhook.objects.workloadschema import (
    PODSET_COUNT_MAX,
    PODSET_NAME_MAX_LENGTH,
    PODSET_NAME_PATTERN,
    WORKLOAD_MAX_PODSETS,
)
from webhook.policy.findings import Finding
from webhook.rules import Rule
from webhook.rules.catalog import RULES, RULES_BY_ID
from webhook.rules.cluster import FAMILY as CLUSTER_FAMILY


def findings_for(case: RuleCase) -> list[Finding]:
    obj = case.object()
    facts = AdmissionFacts(namespace=obj["metadata"].get("namespace", "default"), user=case.user, kind=case.kind)
    decision = decide(obj, facts, case.policy())
    return [f for f in decision.findings if f.rule == case.rule]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_rule_example(case: RuleCase) -> None:
    assert_example_findings(case.rule, case.fires, findings_for(case), case.path, case.count, case.message)


STRUCTURAL = [(rule, kind) for rule in RULES if not rule.requires for kind in kinds.ORDER if kind in rule.kinds]


@pytest.mark.parametrize(("rule", "kind"), STRUCTURAL, ids=lambda v: getattr(v, "id", v))
def test_every_structural_rule_has_both_kinds_of_example(rule: Rule, kind: str) -> None:
    """For every kind a rule applies to, an allowed and a refused example of that kind."""
    outcomes = {case.fires for case in CASES if case.rule == rule.id and case.kind == kind}
    assert outcomes == {True, False}, f"{rule.id} needs an allowed and a disallowed {kind} example"


def test_examples_stay_within_the_kinds_a_rule_applies_to() -> None:
    """A refused example of a kind the rule does not apply to could never fire."""
    for case in CASES:
        assert case.kind in RULES_BY_ID[case.rule].kinds or not case.fires, case.id


def test_the_rules_that_read_the_cluster_are_exactly_the_cluster_family() -> None:
    """The engine asks the cluster, memoizes findings on the snapshot and words a skip for the
    cluster family's rules only: a rule that requires a kind of cluster state must be one of them."""
    assert [rule.id for rule in RULES if bool(rule.requires) != (rule.family == CLUSTER_FAMILY)] == []


def test_the_cluster_family_comes_last_in_the_catalog() -> None:
    """The engine runs the cluster family's rules after the others (their findings are memoized per
    snapshot): listed last, findings stay in catalog order."""
    families = [rule.family == CLUSTER_FAMILY for rule in RULES]
    assert families == sorted(families) and any(families)


def test_examples_name_only_catalog_rules() -> None:
    known = {rule.id for rule in RULES}
    assert {case.rule for case in CASES} <= known


def test_rules_read_the_policy_models_themselves_and_those_are_frozen() -> None:
    """``ctx.tpu`` and ``ctx.tier`` are the policy's own models, not copies: they cannot
    change under a rule, and a field added to ``TpuPolicy`` or ``TierPolicy`` reaches it."""
    import pydantic

    from webhook.objects.request import UserInfo
    from webhook.policy.config import Policy, TierPolicy, TpuPolicy
    from webhook.rules import RuleContext

    policy = Policy()
    tier = policy.tiers["dev"]
    ctx = RuleContext(
        policy=policy, tier_name="dev", tier=tier, operation="CREATE", user=UserInfo(), effective_labels={}
    )
    assert ctx.tpu is policy.tpu and ctx.tier is tier
    for model in (policy, policy.tpu, tier, policy.super_slice, policy.limits):
        assert model.model_config.get("frozen") is True
    with pytest.raises(pydantic.ValidationError):
        policy.tpu.chips_per_host = 8  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        tier.default_queue = "other"  # type: ignore[misc]
    assert isinstance(ctx.tpu, TpuPolicy) and isinstance(ctx.tier, TierPolicy)


def test_a_long_slice_size_is_read() -> None:
    from webhook.rules.placement import kueue_integer

    assert kueue_integer("0" * 300 + "16") == 16
    assert kueue_integer("+" + "1" * 300 + "x") is None
    assert kueue_integer("16") == 16 and kueue_integer(" 16") is None


def test_a_long_queue_name_is_matched() -> None:
    from webhook.rules.labels import _queue_name_matches

    pattern = "^[a-z0-9-]+-queue$"
    assert _queue_name_matches(pattern, "a" * 300 + "-queue") is True
    assert _queue_name_matches(pattern, "A" * 300 + "-queue") is False
    assert _queue_name_matches(pattern, "team-a-queue") is True
    assert _queue_name_matches(pattern, "team-a") is False


@pytest.mark.parametrize(
    "raw", [4, "4", "4.0", "4000m", "+4", " 4", "04", True, 4.0, 4.5, "8", 8, 0, None, "4Ki", "", [4], {"a": 4}]
)
def test_the_chips_shortcut_answers_as_the_quantity_parse_does(raw: object) -> None:
    """``tpu-request-invalid`` compares the usual spellings as they are; every value must
    get the answer parsing it as a quantity gives (the rule's behaviour before the shortcut)."""
    from decimal import Decimal

    from webhook.kube.quantity import quantity_or_none
    from webhook.rules.shape import _is_chips

    assert _is_chips(raw, 4, "4", Decimal(4)) is (quantity_or_none(raw) == Decimal(4))


def _literals(tree: ast.AST) -> list[ast.Constant]:
    """The string constants of a module (f-strings' parts too), its docstrings and its help
    texts (module constants named ``*HELP``: examples for the user, as the README's) left out."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    docstrings |= {
        id(constant)
        for node in getattr(tree, "body", [])
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and any(
            isinstance(target, ast.Name) and target.id.endswith("HELP")
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        and node.value is not None
        for constant in ast.walk(node.value)
        if isinstance(constant, ast.Constant)
    }
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def test_a_rule_id_is_written_once_in_the_product() -> None:
    """One rule, one home: every other module takes the ID from the rule's declaration."""
    package = Path(webhook.__file__).parent
    written: dict[str, list[str]] = {rule.id: [] for rule in RULES}
    patterns = {rule.id: re.compile(rf"(?<![\w-]){re.escape(rule.id)}(?![\w-])") for rule in RULES}
    for path in sorted(package.rglob("*.py")):
        for literal in _literals(ast.parse(path.read_text(encoding="utf-8"))):
            for rule_id, pattern in patterns.items():
                if pattern.search(literal.value):
                    written[rule_id].append(f"{path.relative_to(package)}:{literal.lineno}")
    assert {rule_id: where for rule_id, where in written.items() if len(where) != 1} == {}


def test_the_workload_limits_are_the_workload_crds() -> None:
    """The limits ``workload-schema-exceeded`` declares are those of the Workload CRD Kueue serves
    (its storage version), as the API server would apply them to the Workload Kueue makes."""
    crd = upstream_crd("kueue.x-k8s.io_workloads.yaml")
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    podsets = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["podSets"]
    podset = podsets["items"]["properties"]
    int32 = {"int32": 2**31 - 1}
    assert (
        podsets["maxItems"],
        podset["name"]["maxLength"],
        podset["name"]["pattern"],
        int32[podset["count"]["format"]],
    ) == (WORKLOAD_MAX_PODSETS, PODSET_NAME_MAX_LENGTH, PODSET_NAME_PATTERN, PODSET_COUNT_MAX)
