"""The queue and priority label rules, per tier, as CEL (``webhook/rules/labels.py``)."""

from __future__ import annotations

from webhook.export.vap.common import Validation, validation
from webhook.policy.config import Policy
from webhook.rules.cel import (
    LABELS,
    TIER,
    Expr,
    cat,
    lit,
    lits,
    shown,
)


def label_rules(policy: Policy) -> list[Validation]:
    q, p = policy.queue_label, policy.priority_label
    tiers = policy.tiers
    out: list[Validation] = []
    strict_queue = [name for name, tier in tiers.items() if tier.default_queue is None]
    if strict_queue:
        rule = "queue-label-missing"
        out.append(
            validation(
                policy,
                rule,
                f"!({TIER} in {lits(strict_queue)}) || {lit(q)} in {LABELS}",
                f'[{rule}] metadata.labels["{q}"]: this tier requires an explicit queue and the JobSet has none',
                f"'[{rule}] ' + "
                + cat(
                    f'metadata.labels["{q}"]: the ',
                    Expr(TIER),
                    " tier requires an explicit queue and the JobSet has none; "
                    f'add the label {q}: "<team>-queue" naming your team\'s LocalQueue',
                ),
            )
        )
    # queue-label-invalid: the tier's only queue, or its name pattern
    rule = "queue-label-invalid"
    value = f"{LABELS}[{lit(q)}]"
    checks, texts = [], []
    for name, tier in tiers.items():
        if tier.default_queue is not None:
            checks.append(f"{TIER} == {lit(name)} ? {value} == {lit(tier.default_queue)}")
            texts.append(
                f"{TIER} == {lit(name)} ? "
                + cat(
                    "queue ",
                    shown(value),
                    f" is not this tier's queue: the {name} tier submits only to {tier.default_queue!r}; "
                    f"remove the label (it is filled in) or set it to {tier.default_queue!r}",
                )
            )
        elif tier.queue_name_pattern is not None:
            # The webhook uses Python's fullmatch; RE2's matches() searches, so anchor it.
            anchored = f"^(?:{tier.queue_name_pattern})$"
            checks.append(f"{TIER} == {lit(name)} ? {value}.matches({lit(anchored)})")
            texts.append(
                f"{TIER} == {lit(name)} ? "
                + cat(
                    "queue name ",
                    shown(value),
                    f" does not match {tier.queue_name_pattern}; "
                    'use your team\'s LocalQueue, named "<team>-queue" (e.g. team-a-queue)',
                )
            )
    if checks:
        out.append(
            validation(
                policy,
                rule,
                f"!({lit(q)} in {LABELS}) || ({' : '.join(checks)} : true)",
                f'[{rule}] metadata.labels["{q}"]: the queue is not one this tier may use',
                f"'[{rule}] ' + " + cat(f'metadata.labels["{q}"]: ', Expr(f"({' : '.join(texts)} : '')")),
            )
        )
    strict_priority = [name for name, tier in tiers.items() if tier.default_priority_class is None]
    if strict_priority:
        rule = "priority-label-missing"
        allowed = {name: ", ".join(tiers[name].allowed_priority_classes) for name in strict_priority}
        out.append(
            validation(
                policy,
                rule,
                f"!({TIER} in {lits(strict_priority)}) || {lit(p)} in {LABELS}",
                f'[{rule}] metadata.labels["{p}"]: this tier requires an explicit priority class '
                "and the JobSet has none",
                f"'[{rule}] ' + "
                + cat(
                    f'metadata.labels["{p}"]: the ',
                    Expr(TIER),
                    " tier requires an explicit priority class and the JobSet has none; "
                    f"add the label {p} with one of: ",
                    Expr(f"{_map(allowed)}[{TIER}]"),
                ),
            )
        )
    rule = "priority-class-not-allowed"
    allowed_lists = "{" + ", ".join(f"{lit(n)}: {lits(t.allowed_priority_classes)}" for n, t in tiers.items()) + "}"
    fixes = {}
    for name, tier in tiers.items():
        fix = f"use one of: {', '.join(tier.allowed_priority_classes)}"
        if tier.default_priority_class is not None:
            fix = f"remove the label (it is filled in as {tier.default_priority_class!r}) or {fix}"
        fixes[name] = fix
    value = f"{LABELS}[{lit(p)}]"
    out.append(
        validation(
            policy,
            rule,
            f"!({lit(p)} in {LABELS}) || !({TIER} in {allowed_lists}) || {value} in {allowed_lists}[{TIER}]",
            f'[{rule}] metadata.labels["{p}"]: the priority class is not allowed in this tier',
            f"'[{rule}] ' + "
            + cat(
                f'metadata.labels["{p}"]: priority class ',
                shown(value),
                " is not allowed in the ",
                Expr(TIER),
                " tier; ",
                Expr(f"{_map(fixes)}[{TIER}]"),
            ),
        )
    )
    if policy.queue_permissions:
        rule = "queue-not-permitted"
        users = "{" + ", ".join(f"{lit(k)}: {lits(v.users)}" for k, v in policy.queue_permissions.items()) + "}"
        groups = "{" + ", ".join(f"{lit(k)}: {lits(v.groups)}" for k, v in policy.queue_permissions.items()) + "}"
        queue = f"{LABELS}[{lit(q)}]"
        out.append(
            validation(
                policy,
                rule,
                f"!({lit(q)} in {LABELS}) || !({queue} in {users}) || request.userInfo.?username.orValue('') in "
                f"{users}[{queue}] || request.userInfo.?groups.orValue([]).exists(g, g in {groups}[{queue}])",
                f'[{rule}] metadata.labels["{q}"]: you may not submit to this queue',
                f"'[{rule}] ' + "
                + cat(
                    f'metadata.labels["{q}"]: user ',
                    shown("request.userInfo.?username.orValue('')"),
                    " may not submit to queue ",
                    shown(queue),
                    "; submit to your own team's queue, or ask the cluster admins to grant access",
                ),
            )
        )
    return out


def _map(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{lit(k)}: {lit(v)}" for k, v in values.items()) + "}"
