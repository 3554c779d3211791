"""Kueue objects → findings: the one decision of ``lint-queues``.

``lint`` is a pure function of the judged set (``webhook.admin.objectset``), the input
entries and the policy. For each input object of a judged kind it runs every admin rule
that applies (mode, kind, an action that is not ``off``), skipping with a note a rule
whose required kinds nobody supplied, and applies the policy's actions and exceptions as
the job engine does. The result is a ``Decision`` per object, so ``check``'s report and
output formats render it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from webhook.admin import AdminContext, AdminRule
from webhook.admin.catalog import ADMIN_RULES
from webhook.admin.kueueobjects import CLUSTER_QUEUE, LOCAL_QUEUE, KueueObject, Skipped
from webhook.admin.objectset import InputEntry, ObjectSet
from webhook.engine.decision import Decision, bound
from webhook.policy.config import Policy
from webhook.policy.findings import Action


@dataclass(slots=True)
class Judged:
    """One input entry and its decision (``None``: not a judged kind, ``skipped`` says why)."""

    entry: InputEntry
    decision: Decision | None
    skipped: str = ""


def plan(policy: Policy) -> list[tuple[AdminRule, Action]]:
    """The admin rules of the policy's mode with their actions, ``off`` ones left out."""
    steps: list[tuple[AdminRule, Action]] = []
    for rule in ADMIN_RULES:
        action = policy.action_for(rule.id, rule.default_action)
        if policy.mode in rule.modes and action is not Action.OFF:
            steps.append((rule, action))
    return steps


def _skip_note(rule: AdminRule, reasons: list[str]) -> str:
    return f"[{rule.id}] skipped: {'; '.join(reasons)}"


def _missing_note(ctx: AdminContext, rule: AdminRule) -> list[str] | None:
    missing = ctx.objects.missing(rule.requires)
    if not missing:
        return None
    reasons = ctx.objects.reasons
    return [
        f"{kind.plural} unknown: {reasons[kind.plural]}"
        if kind.plural in reasons
        # ``tpu-admission snapshot`` writes every kind the guard reads, empty ones included
        else f"no {kind.plural} in the input or --cluster-state (add `{kind.get}` or a `tpu-admission snapshot` file)"
        for kind in missing
    ]


def tier_of(obj: KueueObject, ctx: AdminContext) -> str | None:
    """The tier a queue serves (a ClusterQueue's selector, a LocalQueue's namespace), for the report."""
    if obj.kind is CLUSTER_QUEUE:
        selector = obj.spec.get("namespaceSelector")
        tiers = ctx.selector_tiers(selector if isinstance(selector, dict) else None)
        return tiers[0] if len(tiers) == 1 else None
    if obj.kind is LOCAL_QUEUE:
        return ctx.namespace_tier(obj.namespace)
    return None


def findings_of(
    obj: KueueObject, ctx: AdminContext, steps: list[tuple[AdminRule, Action]], noted: set[str] | None = None
) -> Decision:
    """What the rules found on one object, each finding with its rule's action, and the rules skipped.

    A rule skipped because a kind it needs is unknown is skipped for every object it
    applies to; its note goes on the first of them only (``noted`` holds the rules
    already noted in this run), so 1,000 ClusterQueues do not repeat one sentence.
    """
    decision = Decision(tier=tier_of(obj, ctx))
    for rule, action in steps:
        if obj.kind.kind not in rule.kinds:
            continue
        missing = _missing_note(ctx, rule)
        if missing:
            if noted is None or rule.id not in noted:
                kinds = ", ".join(sorted(rule.kinds))
                decision.skipped.append(rule.id)
                decision.warnings.append(_skip_note(rule, [f"for every {kinds}: {missing[0]}", *missing[1:]]))
                if noted is not None:
                    noted.add(rule.id)
            continue
        for finding in rule.check(obj, ctx):
            finding.action = action
            decision.findings.append(finding)
        if ctx.unknown:
            decision.skipped.append(rule.id)
            decision.warnings.append(_skip_note(rule, sorted(set(ctx.unknown))))
            ctx.unknown.clear()
    return decision


#: how a warning names a refusal an UPDATE did not cause (``settle``'s ``refused_before``)
ALREADY: Final = (
    "[{rule}] already refused before this UPDATE, so it warns: the edit is allowed so the object "
    "can still be fixed; fix it in this edit or the next"
)


def settle(
    decision: Decision, obj: KueueObject, policy: Policy, refused_before: frozenset[str] = frozenset()
) -> Decision:
    """The answer from the findings: the policy's exceptions, then the refusals the old object
    had too (``refused_before``, the webhook's UPDATE) turned into warnings, then the bound
    every answer keeps (``webhook.engine.decision.bound``)."""
    for finding in decision.findings:
        exception = policy.exception_for(finding.rule, obj.namespace, obj.name)
        if exception is not None:
            finding.action, finding.excepted = Action.WARN, exception.reason
            decision.excepted.append(finding.rule)
    already: list[str] = []
    for finding in decision.findings:
        if finding.action is Action.DENY and finding.rule in refused_before:
            finding.action = Action.WARN
            if finding.rule not in already:
                already.append(finding.rule)
    decision.allowed = not any(f.action is Action.DENY for f in decision.findings)
    decision.max_line = policy.limits.max_line_chars
    bound(decision, policy)
    decision.warnings.extend(ALREADY.format(rule=rule) for rule in already)
    return decision


def judge(
    obj: KueueObject, ctx: AdminContext, steps: list[tuple[AdminRule, Action]], noted: set[str] | None = None
) -> Decision:
    """One object's decision: its findings (``findings_of``) settled (``settle``)."""
    return settle(findings_of(obj, ctx, steps, noted), obj, ctx.policy)


def lint(objects: ObjectSet, entries: list[InputEntry], policy: Policy) -> list[Judged]:
    """A decision for every input object the guard judges, in input order."""
    ctx = AdminContext(policy, objects)
    steps = plan(policy)
    noted: set[str] = set()
    out = []
    for entry in entries:
        read = entry.read
        if isinstance(read, Skipped):
            out.append(Judged(entry, None, read.reason))
        elif not read.kind.judged:
            out.append(Judged(entry, None, f"a {read.kind.kind}: read as the cluster the queues are judged against"))
        else:
            out.append(Judged(entry, judge(read, ctx, steps, noted)))
    return out
