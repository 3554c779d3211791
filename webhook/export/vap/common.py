"""What every exported rule is made of: one ``Validation`` and the helpers the families share."""

from __future__ import annotations

from dataclasses import dataclass

from webhook.export.celtext import (
    TPU_JOBS,
    per_job,
)
from webhook.kube.topology import parse_topology
from webhook.policy.config import Policy
from webhook.policy.findings import Action
from webhook.rules.catalog import RULES_BY_ID


@dataclass(frozen=True, slots=True)
class Validation:
    """One exported rule: ``expression`` is true when the JobSet passes it."""

    rule: str
    expression: str
    message: str
    message_expression: str
    action: Action


def tpu_fix(policy: Policy) -> str:
    tpu = policy.tpu
    return f"request {tpu.resource_name}: {tpu.chips_per_host} in both resources.requests and resources.limits"


def job_rule(policy: Policy, rule: str, bad: str, item: str, summary: str) -> Validation:
    expression, message = per_job(rule, TPU_JOBS, bad, item)
    return validation(policy, rule, expression, f"[{rule}] {summary}", message)


def validation(policy: Policy, rule: str, expression: str, message: str, message_expression: str = "") -> Validation:
    action = policy.action_for(rule, RULES_BY_ID[rule].default_action)
    if action is Action.DENY and any(rule in exception.rules for exception in policy.exceptions):
        # The webhook admits the objects a policy exception covers (with a warning); this
        # export does not carry the exceptions' globs, so it only warns for such a rule
        # rather than refuse what the webhook admits.
        action = Action.WARN
    return Validation(rule, expression, message, message_expression, action)


def static_hosts(policy: Policy) -> dict[str, int]:
    """Hosts per slice of each configured static topology (the VAP knows no cluster)."""
    per_host = policy.tpu.chips_per_host
    out = {}
    for text in sorted(policy.static_topology_set):
        chips = parse_topology(text).chips
        if chips % per_host == 0:
            out[text] = chips // per_host
    return out
