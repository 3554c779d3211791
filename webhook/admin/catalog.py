"""The admin guard's rule catalog: every family's rules, in the order ``lint`` runs them.

A rule is declared once, in its family module; this module only collects them. The
policy's ``rules: {ID: deny|warn|off}`` and ``exceptions`` name these IDs as they name
the job rules' (``load_policy`` here checks both against the config), and
``docs/admin-guard.md``'s rule table is generated from them (``markdown_table``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from webhook.admin import AdminRule, clusterqueues, configuration, flavors, localqueues, priorities, quotas, refs
from webhook.policy.config import Policy
from webhook.rules import catalog as job_catalog

ADMIN_RULES: Final[tuple[AdminRule, ...]] = (
    *quotas.RULES,
    *clusterqueues.RULES,
    *localqueues.RULES,
    *priorities.RULES,
    *flavors.RULES,
    *refs.RULES,
    *configuration.RULES,
)

ADMIN_RULES_BY_ID: Final[dict[str, AdminRule]] = {rule.id: rule for rule in ADMIN_RULES}

#: every ID the policy's ``rules:`` and ``exceptions:`` may name: the job rules', then the admin guard's
RULE_IDS: Final[tuple[str, ...]] = (*job_catalog.RULE_IDS, *ADMIN_RULES_BY_ID)


def load_policy(path: str | Path | None) -> Policy:
    """The policy file as the commands load it: every rule ID checked, the job rules' and the admin guard's."""
    return job_catalog.load_policy(path, RULE_IDS)


def policy_from_mapping(data: Any, source: str = "config") -> Policy:
    """A policy document, every rule ID checked (``load_policy``)."""
    return job_catalog.policy_from_mapping(data, source, RULE_IDS)


#: rules Kueue's own webhook enforces too (the "K" mark): kept for the offline pipeline,
#: which must fail before ``kubectl apply`` does
KUEUE_REFUSES: Final[frozenset[str]] = frozenset({quotas.CQ_LIMIT_INVALID.id})


def _marks(rule: AdminRule) -> str:
    marks = [rule.default_action.value]
    if rule.requires & {"Nodes", "Namespaces"}:
        marks.append("S")
    if rule.id in KUEUE_REFUSES:
        marks.append("K")
    return " ".join(marks)


def markdown_table() -> str:
    """docs/admin-guard.md's rule table, generated so the catalog is written only once."""
    lines = [
        "| rule | kinds | modes | default | needs | why |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for rule in ADMIN_RULES:
        modes = "both" if len(rule.modes) == 2 else next(iter(rule.modes))
        kinds = ", ".join(sorted(rule.kinds))
        needs = ", ".join(sorted(rule.requires)) or "-"
        lines.append(f"| `{rule.id}` | {kinds} | {modes} | {_marks(rule)} | {needs} | {rule.why} |")
    return "\n".join(lines)
