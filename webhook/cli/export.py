"""``tpu-admission export``: the policy as admission policies the API server evaluates itself."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, Final

from webhook.cli.arguments import EXIT_USAGE_LINE, UsageError, subparser


def _validation_actions(text: str, known: Sequence[str]) -> list[str]:
    """``--validation-actions``: the binding's actions, each named as Kubernetes spells it, no
    action twice (the API server refuses a duplicate), Deny not with Warn; a typo gets a did-you-mean."""
    from webhook.kube.typos import did_you_mean

    actions = [part.strip() for part in text.split(",")]
    for action in actions:
        if action not in known:
            meant = did_you_mean(action, known)
            hint = f"; did you mean {meant!r}?" if meant else f"; use {', '.join(known)}"
            raise UsageError(f"--validation-actions: {action!r} is not a validation action{hint}")
    if len(set(actions)) < len(actions):
        raise UsageError(f"--validation-actions: {text!r} names an action twice; name each once")
    if "Deny" in actions and "Warn" in actions:
        raise UsageError(
            "--validation-actions: Deny and Warn do not go together (Deny already tells the user); "
            "use Deny, or Warn,Audit"
        )
    return actions


def run_export_vap(args: argparse.Namespace) -> int:
    from webhook.admin.catalog import load_policy
    from webhook.export import vap

    actions = _validation_actions(args.validation_actions, vap.VALIDATION_ACTIONS)
    try:
        print(vap.render(load_policy(args.config), actions), end="")
    except ValueError as exc:
        raise UsageError(f"--validation-actions: {exc}") from None
    return 0


def run_export_map(args: argparse.Namespace) -> int:
    from webhook.admin.catalog import load_policy
    from webhook.export import mutating_policy

    print(mutating_policy.render(load_policy(args.config)), end="")
    return 0


HELP: Final = f"""\
Print the policy as admission policies the API server evaluates itself (multi-document
YAML on stdout): "vap" exports the structural rules as a ValidatingAdmissionPolicy and
its binding, "map" the tiers' default labels as a MutatingAdmissionPolicy and its
binding (Kubernetes 1.36 or later). Re-run the export when the policy changes.

examples:
  tpu-admission export vap --config policy.yaml | kubectl apply -f -
  tpu-admission export vap --validation-actions Warn,Audit > vap.yaml
  tpu-admission export map | kubectl apply -f -

exit codes:
  0  printed
{EXIT_USAGE_LINE}
"""


def add_parser(commands: Any) -> None:
    """The ``export`` subcommand's parsers."""
    export = subparser(commands, "export", "export the policy for the API server itself", HELP)
    export_sub = export.add_subparsers(dest="export_command", required=True, metavar="FORMAT")
    export_vap = subparser(export_sub, "vap", "the structural rules as a ValidatingAdmissionPolicy (YAML)", HELP)
    export_vap.add_argument("--config", help="policy config YAML (default: RFC-0033 defaults)")
    export_vap.add_argument("--validation-actions", default="Deny", help="the binding's actions: Deny, or Warn,Audit")
    export_vap.set_defaults(run=run_export_vap)
    export_map = subparser(export_sub, "map", "the default labels as a MutatingAdmissionPolicy (YAML)", HELP)
    export_map.add_argument("--config", help="policy config YAML (default: RFC-0033 defaults)")
    export_map.set_defaults(run=run_export_map)
