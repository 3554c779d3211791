"""Labels, tiers and queues (SPEC §4, first table): what the user wrote on the object's own labels."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from webhook.kube.fieldpaths import LABELS
from webhook.objects.workload import Workload
from webhook.policy.findings import Finding
from webhook.rules import RuleContext


@lru_cache(maxsize=32)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _queue_name_matches(pattern: str, name: str) -> bool:
    """Whether ``name`` matches the tier's queue-name pattern, whole."""
    return _pattern(pattern).fullmatch(name) is not None


def queue_label_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    key = ctx.queue_label
    tier = ctx.tier
    if tier is None or tier.default_queue is not None or not ctx.label_in_scope(key):
        return
    if key not in workload.labels:
        yield Finding(
            "queue-label-missing",
            LABELS.key(key),
            f"the {ctx.tier_name} tier requires an explicit queue and the {workload.kind} has none",
            f'add the label {key}: "<team>-queue" naming your team\'s LocalQueue',
        )


def queue_label_invalid(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    key = ctx.queue_label
    tier = ctx.tier
    value = workload.labels.get(key)
    if tier is None or value is None or not ctx.label_in_scope(key):
        return
    if tier.default_queue is not None:
        if value != tier.default_queue:
            yield Finding(
                "queue-label-invalid",
                LABELS.key(key),
                f"queue {value!r} is not this tier's queue: the {ctx.tier_name} tier submits "
                f"only to {tier.default_queue!r}",
                f"remove the label (it is filled in) or set it to {tier.default_queue!r}",
            )
    elif tier.queue_name_pattern is not None and not _queue_name_matches(tier.queue_name_pattern, value):
        yield Finding(
            "queue-label-invalid",
            LABELS.key(key),
            f"queue name {value!r} does not match {tier.queue_name_pattern}",
            'use your team\'s LocalQueue, named "<team>-queue" (e.g. team-a-queue)',
        )


def priority_label_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    key = ctx.priority_label
    tier = ctx.tier
    if tier is None or tier.default_priority_class is not None or not ctx.label_in_scope(key):
        return
    if key not in workload.labels:
        yield Finding(
            "priority-label-missing",
            LABELS.key(key),
            f"the {ctx.tier_name} tier requires an explicit priority class and the {workload.kind} has none",
            f"add the label {key} with one of: {', '.join(tier.allowed_priority_classes)}",
        )


def priority_class_not_allowed(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    key = ctx.priority_label
    tier = ctx.tier
    value = workload.labels.get(key)
    if tier is None or value is None or not ctx.label_in_scope(key):
        return
    if value not in tier.allowed_priority_classes:
        allowed = ", ".join(tier.allowed_priority_classes)
        fix = f"use one of: {allowed}"
        if tier.default_priority_class is not None:
            fix = f"remove the label (it is filled in as {tier.default_priority_class!r}) or {fix}"
        yield Finding(
            "priority-class-not-allowed",
            LABELS.key(key),
            f"priority class {value!r} is not allowed in the {ctx.tier_name} tier",
            fix,
        )


def queue_not_permitted(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    key = ctx.queue_label
    queue = ctx.effective_labels.get(key)
    if queue is None or not ctx.label_in_scope(key):
        return
    permission = ctx.policy.queue_permissions.get(queue)
    if permission is None:
        return
    if ctx.user.username in permission.users or set(ctx.user.groups) & set(permission.groups):
        return
    yield Finding(
        "queue-not-permitted",
        LABELS.key(key),
        f"user {ctx.user.username!r} may not submit to queue {queue!r}",
        "submit to your own team's queue, or ask the cluster admins to grant access",
    )
