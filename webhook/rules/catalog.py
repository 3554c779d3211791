"""The rule catalog: every family's rules, in the order the engine runs them.

A rule is declared once, in its family module (``webhook.rules.<family>``); this module
only collects the families. The config checks its ``rules:`` keys against these IDs
(``load_policy``), and the README's rule table is generated from the declarations
(``tpu-admission rules -o markdown``). The admin guard's rules (``webhook.admin``)
judge Kueue's own objects, not jobs: they are not run here, but their IDs join the ones
the config may name, so their actions and exceptions are set the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from webhook.objects import kinds
from webhook.policy import config
from webhook.policy.config import Policy
from webhook.rules import Rule, cluster, dynamic, forbidden, labels, placement, services, shape, static

RULES: tuple[Rule, ...] = (
    shape.OBJECT_MALFORMED,
    *labels.RULES,
    *forbidden.RULES,
    *placement.RULES,
    *dynamic.RULES,
    *static.RULES,
    *shape.RULES,
    *cluster.RULES,
    *services.RULES,
)

RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}

#: the job rules' IDs; the admin guard adds its own (``webhook.admin.catalog.RULE_IDS``)
RULE_IDS: tuple[str, ...] = tuple(RULES_BY_ID)


def applies_to(rule: Rule) -> str:
    """``all``, or the kinds in the order of ``webhook.objects.kinds.ORDER`` (``JobSet, Job``)."""
    if rule.kinds == kinds.ALL:
        return "all"
    return ", ".join(kind for kind in kinds.ORDER if kind in rule.kinds)


def markdown_table() -> str:
    """The README's rule table, generated so the catalog is written only once."""
    lines = [
        "| rule | family | applies to | modes | checked on | default | why | VAP export |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for rule in RULES:
        modes = "both" if len(rule.modes) == 2 else next(iter(rule.modes))
        paths = "mutate" if rule.subject == "submitted" else "mutate + validate"
        if rule.requires:
            paths += " (cluster)"
        lines.append(
            f"| `{rule.id}` | {rule.family} | {applies_to(rule)} | {modes} | {paths} | "
            f"{rule.default_action.value} | {rule.why} | {_vap_cell(rule.id)} |"
        )
    return "\n".join(lines)


def _vap_cell(rule_id: str) -> str:
    export = RULES_BY_ID[rule_id].vap
    word = "yes" if export.exported else "no"
    return f"{word}: {export.note}" if export.note else word


def load_policy(path: str | Path | None, rule_ids: tuple[str, ...] = RULE_IDS) -> Policy:
    """The policy file (``None``: the embedded default), its rule IDs checked against ``rule_ids``."""
    return config.load_policy(path, rule_ids)


def policy_from_mapping(data: Any, source: str = "config", rule_ids: tuple[str, ...] = RULE_IDS) -> Policy:
    """A policy document, its rule IDs checked against ``rule_ids`` (this catalog's)."""
    return config.policy_from_mapping(data, source, rule_ids)
