"""LocalQueue rules: the queues jobs are sent to, named and placed as the tiers need.

RFC-0033 4.2: in production (``kubemaker``) each team's LocalQueue is ``<team>-queue``
pointing to ClusterQueue ``<team>``, and no LocalQueue is named ``default`` (Kueue would
put every unlabelled job there, the namespace's system components included); in dev
every namespace has one LocalQueue, ``default``, which the webhook injects into jobs
that name none (免标签投递). A LocalQueue must be in a namespace its ClusterQueue selects.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from webhook.admin import NOT_EXPORTED, AdminContext, AdminRule
from webhook.admin.kueueobjects import CLUSTER_QUEUE, LOCAL_QUEUE, NAMESPACE, KueueObject
from webhook.kube.fieldpaths import METADATA, SPEC
from webhook.kube.scheduling import describe_selector, selector_matches
from webhook.policy.findings import Finding
from webhook.rules import Message, Rule

FAMILY: Final = "localqueue"
NAME: Final = METADATA.child("name")
TARGET: Final = SPEC.child("clusterQueue")


def _target(obj: KueueObject) -> str:
    return str(obj.spec.get("clusterQueue") or "")


def _default_names(ctx: AdminContext) -> set[str]:
    return {tier.default_queue for tier in ctx.policy.tiers.values() if tier.default_queue}


def _name_convention(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    tier_name = ctx.namespace_tier(obj.namespace)
    if tier_name is None:
        return  # an unmanaged namespace
    tier = ctx.policy.tiers[tier_name]
    where = {"name": obj.name, "namespace": obj.namespace, "tier": tier_name}
    if tier.default_queue:
        if obj.name != tier.default_queue:
            yield LQ_NAME_CONVENTION.finding(NAME, "dev", default=tier.default_queue, **where)
        return
    if obj.name in _default_names(ctx):
        yield LQ_NAME_CONVENTION.finding(NAME, "default", **where)
        return
    pattern = tier.queue_name_pattern
    if pattern and not re.search(pattern, obj.name):
        yield LQ_NAME_CONVENTION.finding(NAME, "pattern", pattern=pattern, **where)
        return
    team = obj.name.removesuffix("-queue")
    if obj.name.endswith("-queue") and _target(obj) and _target(obj) != team:
        yield LQ_NAME_CONVENTION.finding(TARGET, "team", team=team, target=_target(obj), **where)


LQ_NAME_CONVENTION: Final[AdminRule] = Rule(
    "lq-name-convention",
    "LocalQueue name against its tier's convention",
    FAMILY,
    _name_convention,
    {
        "dev": Message(
            "LocalQueue {name!r} is in {tier}-tier namespace {namespace!r}, whose jobs name no queue: the webhook "
            "sends them to {default!r}, so a queue of another name is never used",
            "name it {default!r} (one per {tier} namespace, RFC-0033 免标签投递)",
        ),
        "default": Message(
            "a LocalQueue named {name!r} in {tier}-tier namespace {namespace!r} captures every job there without a "
            "queue label: Kueue sends them to it, the namespace's system components included",
            "name it <team>-queue, after the team's ClusterQueue (RFC-0033: production has no default queue)",
        ),
        "pattern": Message(
            "LocalQueue {name!r} in {tier}-tier namespace {namespace!r} does not match {pattern}: jobs there must "
            "name it in their queue label, and the webhook refuses names off the pattern",
            "name it <team>-queue, after the team's ClusterQueue",
        ),
        "team": Message(
            "LocalQueue {name!r} points to ClusterQueue {target!r}, not {team!r}: in a shared namespace the queue "
            "label is the team boundary, so {team}'s jobs would spend {target}'s quota",
            "point it to ClusterQueue {team!r}, or name it {target}-queue",
        ),
    },
    NOT_EXPORTED,
    kinds=frozenset({LOCAL_QUEUE.kind}),
    why="the queue label is the team boundary in production, and the default queue the entry point in dev (4.2)",
)


# ---------------------------------------------------------------- lq-default-missing


def _dev_namespaces(ctx: AdminContext) -> dict[str, str]:
    """Dev-tier namespaces (labels when Namespaces are known, else the config's map) → their tier."""
    dev = set(ctx.dev_tiers())
    found: dict[str, str] = {}
    if ctx.objects.knows(NAMESPACE):
        for ns in ctx.objects.of(NAMESPACE):
            tier = ns.labels.get(ctx.policy.tier_label)
            if tier in dev:
                found[ns.name] = tier
    else:
        found = {ns: tier for ns, tier in ctx.policy.namespace_tiers.items() if tier in dev}
    return found


def _missing_defaults(ctx: AdminContext) -> dict[str, str]:
    """Dev namespaces without their default LocalQueue → the name it should have."""

    def make() -> dict[str, str]:
        missing = {}
        for namespace, tier in _dev_namespaces(ctx).items():
            default = ctx.policy.tiers[tier].default_queue or ""
            if ctx.objects.get(LOCAL_QUEUE, default, namespace) is None:
                missing[namespace] = default
        return missing

    return ctx.cached("missing-default-queues", make)  # type: ignore[no-any-return]


def _default_missing(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    missing = _missing_defaults(ctx)
    if obj.kind is LOCAL_QUEUE:
        if obj.namespace in missing:
            yield LQ_DEFAULT_MISSING.finding(NAME, namespace=obj.namespace, default=missing[obj.namespace])
        return
    selector = obj.spec.get("namespaceSelector")
    if not isinstance(selector, dict):
        return
    for namespace, default in sorted(missing.items()):
        labels = ctx.namespace_view(namespace)
        if labels is not None and selector_matches(selector, labels):
            yield LQ_DEFAULT_MISSING.finding(SPEC.child("namespaceSelector"), namespace=namespace, default=default)


LQ_DEFAULT_MISSING: Final[AdminRule] = Rule(
    "lq-default-missing",
    "Dev-tier namespace without its default LocalQueue",
    FAMILY,
    _default_missing,
    {
        "": Message(
            "dev-tier namespace {namespace!r} has no LocalQueue {default!r}: the webhook injects queue-name "
            '{default} into every job there that names none, and they stay pending ("LocalQueue {default} '
            "doesn't exist\")",
            "create LocalQueue {default!r} in {namespace!r}, pointing to the dev ClusterQueue",
        )
    },
    NOT_EXPORTED,
    requires=frozenset({"LocalQueues"}),
    kinds=frozenset({LOCAL_QUEUE.kind, CLUSTER_QUEUE.kind}),
    why="dev jobs carry no queue label: without the default LocalQueue every one is stranded (RFC-0033 免标签投递)",
)


# ---------------------------------------------------------------- lq-namespace-not-selected


def _not_selected(obj: KueueObject, ctx: AdminContext) -> Iterator[Finding]:
    target = ctx.objects.get(CLUSTER_QUEUE, _target(obj))
    if target is None:
        return  # ref-not-found says so
    labels = ctx.namespace_view(obj.namespace)
    if labels is None:
        ctx.unknown.append(
            f"the labels of namespace {obj.namespace!r} (no Namespace object, not in the policy's namespaceTiers)"
        )
        return
    selector = target.spec.get("namespaceSelector")
    selector = selector if isinstance(selector, dict) else None
    if selector_matches(selector, labels):
        return
    why = (
        "has no namespaceSelector (null matches no namespace)"
        if selector is None
        else (f"selects {describe_selector(selector)}")
    )
    shown = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "none"
    yield LQ_NAMESPACE_NOT_SELECTED.finding(
        TARGET, target=target.name, why=why, namespace=obj.namespace, labels=shown, label=ctx.policy.tier_label
    )


LQ_NAMESPACE_NOT_SELECTED: Final[AdminRule] = Rule(
    "lq-namespace-not-selected",
    "LocalQueue in a namespace its ClusterQueue does not select",
    FAMILY,
    _not_selected,
    {
        "": Message(
            "ClusterQueue {target!r} {why}, and namespace {namespace!r} (labels: {labels}) does not match: every "
            'job sent to this LocalQueue waits with "namespace doesn\'t match ClusterQueue selector"',
            "create the LocalQueue in a namespace of the queue's tier, point it to that tier's ClusterQueue, or "
            "fix the namespace's {label} label",
        )
    },
    NOT_EXPORTED,
    requires=frozenset({"ClusterQueues"}),
    kinds=frozenset({LOCAL_QUEUE.kind}),
    why="a Workload is admitted only from namespaces its ClusterQueue selects (kubernetes-sigs/kueue#301)",
)

RULES: Final[tuple[AdminRule, ...]] = (LQ_NAME_CONVENTION, LQ_DEFAULT_MISSING, LQ_NAMESPACE_NOT_SELECTED)
