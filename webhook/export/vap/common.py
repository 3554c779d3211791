"""What the not-yet-declared families' CEL shares (legacy: moving into the rule families)."""

from __future__ import annotations

from webhook.policy.config import Policy
from webhook.rules.catalog import RULES_BY_ID
from webhook.rules.cel import TPU_JOBS, Validation, per_job, static_hosts, tpu_fix
from webhook.rules.cel import validation as _validation

__all__ = ["Validation", "job_rule", "static_hosts", "tpu_fix", "validation"]


def job_rule(policy: Policy, rule: str, bad: str, item: str, summary: str) -> Validation:
    expression, message = per_job(rule, TPU_JOBS, bad, item)
    return validation(policy, rule, expression, f"[{rule}] {summary}", message)


def validation(policy: Policy, rule: str, expression: str, message: str, message_expression: str = "") -> Validation:
    return _validation(policy, rule, RULES_BY_ID[rule].default_action, expression, message, message_expression)
