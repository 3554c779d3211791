"""The cluster rules' findings, remembered per state of the cluster and shape of the job.

With the cluster's queues, flavors, namespaces and nodes unchanged, the cluster rules'
findings are a function of what they read of the job and, for a guaranteed job, of its
queue's balance (``webhook.rules.cluster.recall_key``: namespace, queue and priority
labels, each podSet's counts, selector, tolerations, affinity and container requests, and
the chips the queue's guaranteed Workloads hold and wait for). Jobs made from one template
read the same, so the engine keeps each answer in the cluster's memo
(``ClusterState.recall``), which every change to those kinds empties; a Workload event
drops nothing, it moves the balance in the key of the guaranteed jobs of its queue. The
first job of a shape after a change runs the rules as ever; so does every job while some
kind cannot be read (its answers may change with the clock alone). Findings are kept as
made and copied out with their action, so a remembered answer is never changed by the
request that reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import localcontext
from typing import Any

import msgspec

from webhook.cluster.state import Recall
from webhook.kube.quantity import CONTEXT
from webhook.policy.findings import Action, Finding
from webhook.rules import Rule, RuleContext
from webhook.rules.cluster import recall_key

#: the cluster rules of a plan, in order, with their actions
Steps = tuple[tuple[Rule, Action], ...]
#: the steps that found something, in order: the rule, its action, the findings it made and
#: the notes on what it could not know (most jobs: none at all, so nothing to hand on)
Outcomes = tuple[tuple[Rule, Action, tuple[Finding, ...], tuple[str, ...]], ...]


def outcomes(steps: Steps, workload: Any, ctx: RuleContext) -> Outcomes:
    """Run the steps' checks (every kind they require can be read), in the quantities' own
    context (they sum and multiply quantities: quota, node fit), where every value the
    parser gives stays exact. A remembered answer needs no context at all."""
    out = []
    with localcontext(CONTEXT):
        for rule, action in steps:
            findings = tuple(rule.check(workload, ctx))
            if findings or ctx.unknown:
                out.append((rule, action, findings, tuple(ctx.unknown)))
                ctx.unknown.clear()
    return tuple(out)


def recalled(recall: Recall, steps: Steps, workload: Any, ctx: RuleContext) -> Outcomes:
    """The steps' outcomes for ``workload``: kept in ``recall`` when a job of its shape came
    since the last change, else worked out and kept. An answer worked out while a watch
    thread applied a Workload event (``Recall.ledger_changes`` moved) may have read two
    states of them, so it is handed on but not kept."""
    before = recall.ledger_changes()
    shape = recall_key(workload, ctx, recall.queue_balance)
    if shape is None:
        return outcomes(steps, workload, ctx)
    key = (id(steps), shape)  # the value holds the steps, so their id is never reused meanwhile
    held = recall.answers.get(key)
    if held is not None and held[0] is steps:
        result: Outcomes = held[1]
        return result
    result = outcomes(steps, workload, ctx)
    if recall.ledger_changes() == before:
        recall.keep(key, (steps, result))
    return result


def replay(results: Outcomes, add: Callable[[Finding], None], skip: Callable[[str, list[str]], None]) -> None:
    """Hand each step's findings on, fresh and with the step's action, then its notes (a skip)."""
    for rule, action, findings, unknown in results:
        for finding in findings:
            add(msgspec.structs.replace(finding, action=action))
        if unknown:
            skip(rule.id, list(unknown))
