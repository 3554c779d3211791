"""``tpu-admission rules``: the rule catalog, or what one rule checks and why."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any, Final

from webhook.cli.arguments import UsageError, add_output, emit, subparser

if TYPE_CHECKING:
    from webhook.rules import Rule

OUTPUTS: Final = ("text", "json", "yaml", "markdown", "admin-markdown")


def _catalog() -> tuple[Rule[Any, Any], ...]:
    from webhook.admin import catalog as admin
    from webhook.rules.catalog import RULES

    return (*RULES, *admin.ADMIN_RULES)


def describe(rule: Rule[Any, Any]) -> dict[str, Any]:
    """One rule as ``rules ID`` shows it: what it applies to, when it runs, its wordings, why."""
    return {
        "id": rule.id,
        "title": rule.title,
        "family": rule.family,
        "defaultAction": rule.default_action.value,
        "appliesTo": sorted(rule.kinds),
        "modes": sorted(rule.modes),
        "clusterState": sorted(rule.requires),
        "onUpdate": rule.on_update,
        "why": rule.why,
        "messages": [{"problem": m.problem, "fix": m.fix} for m in rule.messages.values()],
    }


def _described_text(described: dict[str, Any]) -> str:
    lines = [f"{described['id']}: {described['title']}"]
    for key, label in (
        ("family", "family"),
        ("defaultAction", "default action"),
        ("appliesTo", "applies to"),
        ("modes", "modes"),
        ("clusterState", "cluster state read"),
        ("why", "why"),
    ):
        value = described[key]
        shown = ", ".join(value) if isinstance(value, list) else value
        if shown:
            lines.append(f"  {label + ':':19} {shown}")
    for message in described["messages"]:
        lines.append(f"  says:               {message['problem']}; {message['fix']}")
    return "\n".join(lines)


def _render(documents: list[dict[str, Any]], output: str) -> str:
    if output == "json":
        return json.dumps(documents, indent=2)
    import yaml

    return str(yaml.safe_dump(documents, sort_keys=False)).rstrip("\n")


def run_rules(args: argparse.Namespace) -> int:
    from webhook.admin import catalog as admin
    from webhook.kube.typos import did_you_mean
    from webhook.rules.catalog import markdown_table

    catalog = _catalog()
    if args.rule_ids:
        by_id = {rule.id: rule for rule in catalog}
        for rule_id in args.rule_ids:
            if rule_id not in by_id:
                meant = did_you_mean(rule_id, list(by_id))
                hint = f"; did you mean {meant!r}?" if meant else "; tpu-admission rules lists them"
                raise UsageError(f"rules: {rule_id!r} is not a rule{hint}")
        catalog = tuple(by_id[rule_id] for rule_id in args.rule_ids)
        if args.output in ("markdown", "admin-markdown"):
            raise UsageError(f"rules: -o {args.output} is the whole catalog's table: give no RULE")
    if args.output == "markdown":
        emit(markdown_table())
    elif args.output == "admin-markdown":
        emit(admin.markdown_table())
    elif args.output in ("json", "yaml"):
        emit(_render([describe(rule) for rule in catalog], args.output))
    elif args.rule_ids:
        emit("\n\n".join(_described_text(describe(rule)) for rule in catalog))
    else:
        emit("\n".join(f"{rule.id:38} {rule.default_action.value:5} {rule.title}" for rule in catalog))
    return 0


HELP: Final = """\
List the rule catalog: ID, default action and title (the job rules, then the admin
guard's, which lint-queues runs), or the README's Markdown table of the job rules, or
docs/admin-guard.md's table of the admin rules. With RULE IDs: what each of those rules
checks, where, and how it words a finding.

examples:
  tpu-admission rules
  tpu-admission rules slice-topology-missing
  tpu-admission rules -o json
  tpu-admission rules -o markdown
  tpu-admission rules -o admin-markdown

--format is the older name of -o/--output.

exit codes:
  0  printed
  2  bad usage (an unknown -o, or a RULE that is not one)
"""


def add_parser(commands: Any) -> None:
    """The ``rules`` subcommand's parser."""
    rules = subparser(commands, "rules", "list the rule catalog, or describe rules", HELP)
    rules.add_argument("rule_ids", nargs="*", metavar="RULE", help="describe these rules (default: list them all)")
    add_output(rules, OUTPUTS, what="text: one line per rule; markdown: the README's table; admin-markdown: "
               "docs/admin-guard.md's")  # fmt: skip
    rules.add_argument("--format", dest="output", choices=OUTPUTS, help=argparse.SUPPRESS)
    rules.set_defaults(run=run_rules)
