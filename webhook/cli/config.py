"""``tpu-admission config``: validate a policy file and print the effective policy."""

from __future__ import annotations

import argparse
from typing import Any, Final

from webhook.cli.arguments import subparser


def run_config(args: argparse.Namespace) -> int:
    """Print the effective policy (the defaults, or FILE validated and filled in)."""
    import yaml

    from webhook.admin.catalog import load_policy

    policy = load_policy(args.config)
    print(yaml.safe_dump(policy.model_dump(by_alias=True, mode="json"), sort_keys=False), end="")
    return 0


HELP: Final = """\
Validate a policy file and print the effective policy: every key, with the file's
values filled in over the RFC-0033 defaults. With no --config: the defaults.

examples:
  tpu-admission config > policy.yaml
  tpu-admission config --config policy.yaml

exit codes:
  0  the policy is valid (printed)
  2  the file cannot be read or is invalid; the message names the key
"""


def add_parser(commands: Any) -> None:
    """The ``config`` subcommand's parser."""
    config = subparser(commands, "config", "validate a policy file and print the effective policy", HELP)
    config.add_argument("--config", help="policy config YAML (default: print the RFC-0033 defaults)")
    config.set_defaults(run=run_config)
