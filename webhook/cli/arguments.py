"""What several commands' parsers share: how a subcommand is made, and the flags of the
commands that judge files (``check``, ``lint-queues``), so each is spelled once."""

from __future__ import annotations

import argparse
from typing import Any, Final

from webhook.cli.formatters import FORMATTERS

#: the exit-code line every judging command's help ends its list with
EXIT_USAGE_LINE: Final = "  2  bad usage, an invalid policy config, or a file that cannot be read"


def subparser(commands: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` keeps its description's layout (examples, exit codes)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return parser


def add_judging_flags(parser: argparse.ArgumentParser, *, config: str, cluster_state: str, strict: str) -> None:
    """``PATH...``, ``--config``, ``--mode``, ``--cluster-state``, ``--strict`` and ``--output``,
    each command saying in its own words what its config, state and warnings are."""
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, directories, or - for stdin")
    parser.add_argument("--config", help=config)
    parser.add_argument("--mode", choices=["static", "dynamic"], help="override the config's mode")
    parser.add_argument("--cluster-state", action="append", metavar="PATH", help=cluster_state)
    parser.add_argument("--strict", action="store_true", help=strict)
    parser.add_argument("--output", choices=list(FORMATTERS), default="text", help="report format (default: text)")
