"""``tpu-admission version``: the version, as ``kubectl version --client`` prints its own."""

from __future__ import annotations

import argparse
import json
from typing import Any, Final

from webhook import __version__
from webhook.cli.arguments import add_output, emit, subparser

HELP: Final = """\
Print this program's version (the same as --version), or as JSON or YAML.

examples:
  tpu-admission version
  tpu-admission version -o json

exit codes:
  0  printed
  2  bad usage
"""


def run(args: argparse.Namespace) -> int:
    document = {"clientVersion": {"name": "tpu-admission", "version": __version__}}
    if args.output == "json":
        emit(json.dumps(document, indent=2))
    elif args.output == "yaml":
        emit(f"clientVersion:\n  name: tpu-admission\n  version: {__version__}")
    else:
        emit(f"tpu-admission {__version__}")
    return 0


def add_parser(commands: Any) -> None:
    """The ``version`` subcommand's parser."""
    parser = subparser(commands, "version", "print the version", HELP)
    add_output(parser, ("text", "json", "yaml"), what="format")
    parser.set_defaults(run=run)
