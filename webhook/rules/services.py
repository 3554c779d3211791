"""Resident services: a Deployment is one Workload per pod (RFC-0033's table of kinds).

Kueue admits a Deployment's pods one at a time, so when the replicas do not all fit in
the team's nominal quota the rest run on capacity borrowed from the cohort, which
guaranteed training jobs reclaim: those replicas are evicted and the service runs short.
The RFC's advice is to keep services inside the nominal quota; this rule says so at
submission, as a warning (borrowing is allowed, only fragile).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from webhook.kueue.amounts import format_amount
from webhook.objects.kinds import DEPLOYMENT
from webhook.objects.workload import Workload
from webhook.policy.findings import Action, Finding
from webhook.quota.feasibility import beyond_nominal
from webhook.rules import Message, Rule, RuleContext
from webhook.rules.cluster import FAMILY, NOT_EXPORTED, QUEUES


def _replicas_beyond_nominal(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    tier, cluster = ctx.tier, ctx.cluster
    # Production-like tiers only (the team names its queue): the dev tier shares one queue.
    if tier is None or tier.default_queue is not None or cluster is None:
        return
    queue = ctx.effective_labels.get(ctx.queue_label)
    cluster_queue = cluster.local_queue(workload.namespace, queue) if queue else None
    info = cluster.cluster_queue(cluster_queue) if cluster_queue else None
    if info is None:
        return  # local-queue-not-found reports it
    replicas = workload.replicas
    for podset in workload.podsets:
        # Against the nominal quota of the flavor one pod takes (Kueue's flavor assignment of one pod);
        # None when they fit, or one pod never fits (exceeds-queue-capacity) or is unknown (not zero).
        beyond = beyond_nominal(cluster, info, podset, replicas)
        if beyond is None:
            continue
        flavor, within = beyond.flavor, beyond.fit.within
        over = [
            f"{resource} {format_amount(needed, resource)} over nominal {format_amount(nominal, resource)}"
            for resource, needed, nominal in beyond.fit.over
        ]
        yield REPLICAS_BEYOND_NOMINAL.finding(
            podset.paths.replicas,
            "" if within else "none-fits",
            replicas=replicas,
            cluster_queue=info.name,
            flavor=flavor,
            over=", ".join(over),
            within=within,
        )


_PROBLEM: Final = (
    "{replicas} replicas need more than ClusterQueue {cluster_queue!r} has as nominal quota on flavor {flavor!r} "
    "({over}), and Kueue admits each pod on its own: the replicas beyond it run on borrowed quota, which guaranteed "
    "jobs reclaim by evicting them"
)

REPLICAS_BEYOND_NOMINAL: Final = Rule(
    "replicas-beyond-nominal",
    "Service replicas beyond nominal quota",
    FAMILY,
    _replicas_beyond_nominal,
    {
        "": Message(
            _PROBLEM,
            "run at most {within} replicas to stay within the nominal quota, or ask the admins for more nominal "
            "quota on {flavor!r}",
        ),
        "none-fits": Message(_PROBLEM, "ask the admins for nominal quota on {flavor!r} (not one replica fits in it)"),
    },
    NOT_EXPORTED,
    default_action=Action.WARN,
    requires=QUEUES | {"ResourceFlavors"},
    kinds=frozenset({DEPLOYMENT}),
    why="a Deployment's pods are admitted one by one: replicas beyond the team's nominal quota run on "
    "borrowed quota that guaranteed jobs reclaim",
)

RULES: Final[tuple[Rule, ...]] = (REPLICAS_BEYOND_NOMINAL,)
