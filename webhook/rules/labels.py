"""Labels, tiers and queues: what the user wrote on the object's own labels.

All five judge the labels as submitted (the mutating path) and on UPDATE only the label
keys that changed. Their CEL exports are safe on the validating side of the API server:
mutation only adds labels, so a missing one was never written, and a value Kueue fills
in (``default``) is one the webhook refuses too, as missing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from webhook.kube.fieldpaths import LABELS
from webhook.objects.workload import Workload
from webhook.policy.config import Policy
from webhook.policy.findings import Finding
from webhook.rules import Message, Rule, RuleContext, VapExport
from webhook.rules.cel import LABELS as CEL_LABELS
from webhook.rules.cel import TIER, Expr, Validation, cat, lit, lits, template_parts

FAMILY: Final = "labels"
#: why the label rules may judge the final object: mutation only adds labels, so a missing
#: one was never written, and a value Kueue fills in (``default``) the webhook refuses too
_USER_WROTE: Final = "mutation only adds labels: a missing one was never written"
#: the kind a ValidatingAdmissionPolicy judges (the export covers JobSet CREATE)
_EXPORTED_KIND: Final = "JobSet"


def _queue_name_matches(pattern: str, name: str) -> bool:
    """Whether ``name`` matches the tier's queue-name pattern, whole."""
    return re.fullmatch(pattern, name) is not None


def _map(values: dict[str, str]) -> str:
    return "{" + ", ".join(f"{lit(k)}: {lit(v)}" for k, v in values.items()) + "}"


# ------------------------------------------------------------------ queue-label-missing


def _queue_label_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    key = ctx.queue_label
    tier = ctx.tier
    if tier is None or tier.default_queue is not None or not ctx.label_in_scope(key):
        return
    if key not in workload.labels:
        yield QUEUE_LABEL_MISSING.finding(LABELS.key(key), tier=ctx.tier_name, kind=workload.kind, key=key)


def _queue_label_missing_cel(policy: Policy) -> Iterator[Validation]:
    q = policy.queue_label
    strict = [name for name, tier in policy.tiers.items() if tier.default_queue is None]
    if not strict:
        return
    rule = QUEUE_LABEL_MISSING
    path = str(LABELS.key(q))
    yield rule.validation(
        policy,
        f"!({TIER} in {lits(strict)}) || {lit(q)} in {CEL_LABELS}",
        f"{path}: this tier requires an explicit queue and the JobSet has none",
        f"'[{rule.id}] ' + " + rule.cel_item([path], tier=Expr(TIER), kind=_EXPORTED_KIND, key=q),
    )


QUEUE_LABEL_MISSING: Final = Rule(
    "queue-label-missing",
    "Queue label missing",
    FAMILY,
    _queue_label_missing,
    {
        "": Message(
            "the {tier} tier requires an explicit queue and the {kind} has none",
            'add the label {key}: "<team>-queue" naming your team\'s LocalQueue',
        )
    },
    VapExport(_USER_WROTE, _queue_label_missing_cel),
    subject="submitted",
    on_update=True,
    why="the production tier names its team queue explicitly; nothing is injected there",
)


# ------------------------------------------------------------------ queue-label-invalid


def _queue_label_invalid(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    key = ctx.queue_label
    tier = ctx.tier
    value = workload.labels.get(key)
    if tier is None or value is None or not ctx.label_in_scope(key):
        return
    if tier.default_queue is not None:
        if value != tier.default_queue:
            yield QUEUE_LABEL_INVALID.finding(
                LABELS.key(key), "tier-queue", value=value, tier=ctx.tier_name, queue=tier.default_queue
            )
    elif tier.queue_name_pattern is not None and not _queue_name_matches(tier.queue_name_pattern, value):
        yield QUEUE_LABEL_INVALID.finding(LABELS.key(key), "pattern", value=value, pattern=tier.queue_name_pattern)


def _queue_label_invalid_cel(policy: Policy) -> Iterator[Validation]:
    rule = QUEUE_LABEL_INVALID
    q = policy.queue_label
    value = f"{CEL_LABELS}[{lit(q)}]"
    checks, texts = [], []
    for name, tier in policy.tiers.items():
        if tier.default_queue is not None:
            checks.append(f"{TIER} == {lit(name)} ? {value} == {lit(tier.default_queue)}")
            parts = rule.cel_parts("tier-queue", value=Expr(value), tier=name, queue=tier.default_queue)
        elif tier.queue_name_pattern is not None:
            # The webhook uses Python's fullmatch; RE2's matches() searches, so anchor it.
            anchored = f"^(?:{tier.queue_name_pattern})$"
            checks.append(f"{TIER} == {lit(name)} ? {value}.matches({lit(anchored)})")
            parts = rule.cel_parts("pattern", value=Expr(value), pattern=tier.queue_name_pattern)
        else:
            continue
        texts.append(f"{TIER} == {lit(name)} ? " + cat(*parts))
    if not checks:
        return
    path = str(LABELS.key(q))
    yield rule.validation(
        policy,
        f"!({lit(q)} in {CEL_LABELS}) || ({' : '.join(checks)} : true)",
        f"{path}: the queue is not one this tier may use",
        f"'[{rule.id}] ' + " + cat(f"{path}: ", Expr(f"({' : '.join(texts)} : '')")),
    )


QUEUE_LABEL_INVALID: Final = Rule(
    "queue-label-invalid",
    "Queue label invalid",
    FAMILY,
    _queue_label_invalid,
    {
        "tier-queue": Message(
            "queue {value!r} is not this tier's queue: the {tier} tier submits only to {queue!r}",
            "remove the label (it is filled in) or set it to {queue!r}",
        ),
        "pattern": Message(
            "queue name {value!r} does not match {pattern}",
            'use your team\'s LocalQueue, named "<team>-queue" (e.g. team-a-queue)',
        ),
    },
    VapExport(_USER_WROTE, _queue_label_invalid_cel),
    subject="submitted",
    on_update=True,
    why="production queues are <team>-queue; a dev namespace has only its default queue",
)


# ------------------------------------------------------------------ priority-label-missing


def _priority_label_missing(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    key = ctx.priority_label
    tier = ctx.tier
    if tier is None or tier.default_priority_class is not None or not ctx.label_in_scope(key):
        return
    if key not in workload.labels:
        yield PRIORITY_LABEL_MISSING.finding(
            LABELS.key(key),
            tier=ctx.tier_name,
            kind=workload.kind,
            key=key,
            allowed=", ".join(tier.allowed_priority_classes),
        )


def _priority_label_missing_cel(policy: Policy) -> Iterator[Validation]:
    p = policy.priority_label
    tiers = policy.tiers
    strict = [name for name, tier in tiers.items() if tier.default_priority_class is None]
    if not strict:
        return
    rule = PRIORITY_LABEL_MISSING
    allowed = {name: ", ".join(tiers[name].allowed_priority_classes) for name in strict}
    path = str(LABELS.key(p))
    yield rule.validation(
        policy,
        f"!({TIER} in {lits(strict)}) || {lit(p)} in {CEL_LABELS}",
        f"{path}: this tier requires an explicit priority class and the JobSet has none",
        f"'[{rule.id}] ' + "
        + rule.cel_item([path], tier=Expr(TIER), kind=_EXPORTED_KIND, key=p, allowed=Expr(f"{_map(allowed)}[{TIER}]")),
    )


PRIORITY_LABEL_MISSING: Final = Rule(
    "priority-label-missing",
    "Priority label missing",
    FAMILY,
    _priority_label_missing,
    {
        "": Message(
            "the {tier} tier requires an explicit priority class and the {kind} has none",
            "add the label {key} with one of: {allowed}",
        )
    },
    VapExport(_USER_WROTE, _priority_label_missing_cel),
    subject="submitted",
    on_update=True,
    why="production jobs say guaranteed or best-effort; Kueue's defaulting would hide a missing one",
)


# ------------------------------------------------------------------ priority-class-not-allowed


def _priority_wording(default: str | None) -> str:
    """A tier that fills the priority in tells the user the label may simply go."""
    return "defaulted" if default is not None else ""


def _priority_class_not_allowed(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    key = ctx.priority_label
    tier = ctx.tier
    value = workload.labels.get(key)
    if tier is None or value is None or not ctx.label_in_scope(key):
        return
    if value not in tier.allowed_priority_classes:
        yield PRIORITY_CLASS_NOT_ALLOWED.finding(
            LABELS.key(key),
            _priority_wording(tier.default_priority_class),
            value=value,
            tier=ctx.tier_name,
            allowed=", ".join(tier.allowed_priority_classes),
            default=tier.default_priority_class,
        )


def _priority_class_not_allowed_cel(policy: Policy) -> Iterator[Validation]:
    rule = PRIORITY_CLASS_NOT_ALLOWED
    p = policy.priority_label
    tiers = policy.tiers
    allowed_lists = "{" + ", ".join(f"{lit(n)}: {lits(t.allowed_priority_classes)}" for n, t in tiers.items()) + "}"
    # The problem reads the tier from the namespace; the fix, which differs per tier, is
    # worked out here per tier from the same wording.
    fixes = {
        name: rule.messages[_priority_wording(tier.default_priority_class)].fix.format(
            allowed=", ".join(tier.allowed_priority_classes), default=tier.default_priority_class
        )
        for name, tier in tiers.items()
    }
    value = f"{CEL_LABELS}[{lit(p)}]"
    path = str(LABELS.key(p))
    problem = template_parts(rule.messages[""].problem, {"value": Expr(value), "tier": Expr(TIER)})
    yield rule.validation(
        policy,
        f"!({lit(p)} in {CEL_LABELS}) || !({TIER} in {allowed_lists}) || {value} in {allowed_lists}[{TIER}]",
        f"{path}: the priority class is not allowed in this tier",
        f"'[{rule.id}] ' + " + cat(f"{path}: ", *problem, "; ", Expr(f"{_map(fixes)}[{TIER}]")),
    )


PRIORITY_CLASS_NOT_ALLOWED: Final = Rule(
    "priority-class-not-allowed",
    "Priority class not allowed",
    FAMILY,
    _priority_class_not_allowed,
    {
        "": Message("priority class {value!r} is not allowed in the {tier} tier", "use one of: {allowed}"),
        "defaulted": Message(
            "priority class {value!r} is not allowed in the {tier} tier",
            "remove the label (it is filled in as {default!r}) or use one of: {allowed}",
        ),
    },
    VapExport(_USER_WROTE, _priority_class_not_allowed_cel),
    subject="submitted",
    on_update=True,
    why="each tier has its own priority classes (production: guaranteed/best-effort, dev: default)",
)


# ------------------------------------------------------------------ queue-not-permitted

#: why ``queue-not-permitted`` is skipped, by what is unknown: the API server always names
#: the user and its groups (every authenticated user is in ``system:authenticated``), so an
#: empty one is a caller that does not know (``check`` without ``--user`` or ``--group``)
_NOBODY: Final = "the submitter is unknown (no user name or group); check takes them as --user NAME and --group G"
_NO_NAME: Final = (
    "the submitter's user name is unknown and its groups ({groups}) are not permitted on queue {queue!r}; "
    "check takes the name as --user NAME"
)
_NO_GROUPS: Final = (
    "the submitter's groups are unknown and user {user!r} is not permitted on queue {queue!r} by name; "
    "check takes them as --group G"
)


def _queue_not_permitted(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    key = ctx.queue_label
    queue = ctx.effective_labels.get(key)
    if queue is None or not ctx.label_in_scope(key):
        return
    permission = ctx.policy.queue_permissions.get(queue)
    if permission is None:
        return
    user, groups = ctx.user.username, ctx.user.groups
    if user in permission.users or set(groups) & set(permission.groups):
        return
    # Not permitted by what is known; refused only if what is not known could not permit it.
    if not user and not groups and (permission.users or permission.groups):
        ctx.unknown.append(_NOBODY)
    elif not user and permission.users:
        ctx.unknown.append(_NO_NAME.format(groups=", ".join(groups), queue=queue))
    elif not groups and permission.groups:
        ctx.unknown.append(_NO_GROUPS.format(user=user, queue=queue))
    elif groups and not user:
        yield QUEUE_NOT_PERMITTED.finding(LABELS.key(key), "groups", groups=", ".join(groups), queue=queue)
    else:
        yield QUEUE_NOT_PERMITTED.finding(LABELS.key(key), user=user, queue=queue)


def _queue_not_permitted_cel(policy: Policy) -> Iterator[Validation]:
    permissions = policy.queue_permissions
    if not permissions:
        return
    rule = QUEUE_NOT_PERMITTED
    q = policy.queue_label
    users = "{" + ", ".join(f"{lit(k)}: {lits(v.users)}" for k, v in permissions.items()) + "}"
    groups = "{" + ", ".join(f"{lit(k)}: {lits(v.groups)}" for k, v in permissions.items()) + "}"
    queue = f"{CEL_LABELS}[{lit(q)}]"
    user = "request.userInfo.?username.orValue('')"
    path = str(LABELS.key(q))
    yield rule.validation(
        policy,
        f"!({lit(q)} in {CEL_LABELS}) || !({queue} in {users}) || {user} in "
        f"{users}[{queue}] || request.userInfo.?groups.orValue([]).exists(g, g in {groups}[{queue}])",
        f"{path}: you may not submit to this queue",
        f"'[{rule.id}] ' + " + rule.cel_item([path], user=Expr(user), queue=Expr(queue)),
    )


QUEUE_NOT_PERMITTED: Final = Rule(
    "queue-not-permitted",
    "Queue not permitted",
    FAMILY,
    _queue_not_permitted,
    {
        "": Message(
            "user {user!r} may not submit to queue {queue!r}",
            "submit to your own team's queue, or ask the cluster admins to grant access",
        ),
        # a caller that knows only the groups (check --group) and a queue that names no user
        "groups": Message(
            "groups {groups} may not submit to queue {queue!r}",
            "submit to your own team's queue, or ask the cluster admins to grant access",
        ),
    },
    VapExport("from request.userInfo; exported only when queuePermissions is set", _queue_not_permitted_cel),
    subject="submitted",
    on_update=True,
    why="off unless queuePermissions is configured: who may submit to which queue",
)

RULES: Final = (
    QUEUE_LABEL_MISSING,
    QUEUE_LABEL_INVALID,
    PRIORITY_LABEL_MISSING,
    PRIORITY_CLASS_NOT_ALLOWED,
    QUEUE_NOT_PERMITTED,
)
