"""WorkloadPriorityClass rules: the three classes of RFC-0033, and the default one.

RFC-0033 4.2 creates exactly three: ``guaranteed`` (1000), ``best-effort`` (100) and
``default`` (10). ``default`` is what Kueue gives a job with no priority label (with its
``WorkloadPriorityClassDefaulting`` gate); without it Kueue falls back to the pods'
PriorityClass, and a CI PriorityClass of 1,000,000 outranks guaranteed (免标签投递).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from webhook.admin import NOT_EXPORTED, AdminContext, AdminRule
from webhook.admin.kueueobjects import PRIORITY_CLASS, KueueObject
from webhook.kube.fieldpaths import METADATA, ROOT
from webhook.policy.findings import Finding
from webhook.rules import Message, Rule

FAMILY: Final = "priority"
WPC: Final = frozenset({PRIORITY_CLASS.kind})


def _allowed(ctx: AdminContext) -> str:
    return ", ".join(f"{name} {value}" for name, value in ctx.policy.kueue.priority_values.items())


def _not_allowed(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    values = ctx.policy.kueue.priority_values
    value = obj.data.get("value")
    if obj.name not in values:
        yield WPC_NOT_ALLOWED.finding(METADATA.child("name"), "name", name=obj.name, allowed=_allowed(ctx))
    elif value != values[obj.name] or isinstance(value, bool):
        yield WPC_NOT_ALLOWED.finding(
            ROOT.child("value"), "value", name=obj.name, value=value, expected=values[obj.name], allowed=_allowed(ctx)
        )


WPC_NOT_ALLOWED: Final[AdminRule] = Rule(
    "wpc-not-allowed",
    "WorkloadPriorityClass outside the priority enumeration",
    FAMILY,
    _not_allowed,
    {
        "name": Message(
            "WorkloadPriorityClass {name!r} is not one of the platform's classes ({allowed}): any job naming it "
            "gets a priority the quota model does not account for, and the webhook refuses it in every tier",
            "delete it, or add it to the policy's kueue.priorityValues and a tier's allowedPriorityClasses",
        ),
        "value": Message(
            "WorkloadPriorityClass {name!r} has value {value}, not {expected}: preemption follows the values, so "
            "the order {allowed} no longer holds",
            "set value: {expected}",
        ),
    },
    NOT_EXPORTED,
    kinds=WPC,
    why="priorities decide who preempts whom: only the enumerated classes and values (RFC-0033 测试计划 优先级枚举)",
)


def _default_missing(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    wanted = sorted({t.default_priority_class for t in ctx.policy.tiers.values() if t.default_priority_class})
    have = {o.name for o in ctx.objects.of(PRIORITY_CLASS)}
    for name in wanted:
        if name not in have:
            yield WPC_DEFAULT_MISSING.finding(METADATA.child("name"), default=name, have=", ".join(sorted(have)))


WPC_DEFAULT_MISSING: Final[AdminRule] = Rule(
    "wpc-default-missing",
    "No default WorkloadPriorityClass",
    FAMILY,
    _default_missing,
    {
        "": Message(
            "there is no WorkloadPriorityClass named {default!r} (there are: {have}): a job without a priority "
            "label falls back to its pods' PriorityClass, and a CI PriorityClass of 1,000,000 outranks guaranteed",
            "create WorkloadPriorityClass {default!r} (RFC-0033 gives it value 10)",
        )
    },
    NOT_EXPORTED,
    requires=frozenset({"WorkloadPriorityClasses"}),
    kinds=WPC,
    why="without the default class, unlabelled jobs take their pods' priority and can outrank production",
)

RULES: Final[tuple[AdminRule, ...]] = (WPC_NOT_ALLOWED, WPC_DEFAULT_MISSING)
