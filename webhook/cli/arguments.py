"""What several commands' parsers share: the parser class, how a subcommand is made, and
the flags of the commands that judge files (``check``, ``audit``, ``lint-queues``), so
each is spelled once and reads the same way in every command."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, Final, NoReturn

from webhook.cli.formatters import FORMATTERS
from webhook.objects.request import UserInfo

#: the exit-code line every judging command's help ends its list with
EXIT_USAGE_LINE: Final = "  2  bad usage, an invalid policy config, or a file that cannot be read"

#: how a list of paths after ``--cluster-state`` ends, said in the help and in the error
STATE_PATHS_END: Final = (
    "--cluster-state takes every path up to the next flag: give the manifests before it, or end its paths with --"
)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose subcommands refuse what they do not know themselves.

    argparse hands a subcommand's unknown arguments up to the top-level parser, which then
    prints its own usage (``tpu-admission [-h] [--version] COMMAND ...``) for a mistake in
    ``check``'s flags. Here the parser that was given them refuses them, with its usage.
    Subparsers are made of the parent's class, so every level behaves alike.
    """

    #: the paths the last ``--cluster-state`` took, when it took more than one (see ``error``)
    state_paths: Sequence[str] = ()

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        if self.state_paths and "required: PATH" in message:
            # ``check --cluster-state state.yaml job.yaml``: the flag took the manifest too
            message += f" ({STATE_PATHS_END}; it took {', '.join(self.state_paths)})"
        super().error(message)


class _StatePaths(argparse.Action):
    """``--cluster-state PATH...``: one or more paths, and the flag may be repeated."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        paths = list(values)
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or ()), *paths])
        if isinstance(parser, Parser) and len(paths) > 1:
            parser.state_paths = paths


def subparser(commands: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` keeps its description's layout (examples, exit codes)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return parser


def add_cluster_state(parser: Any, what: str, *, after_paths: bool = True) -> None:
    """``--cluster-state PATH...``, as every command that reads state files spells it: one
    or more paths, and repeatable. ``after_paths``: the command takes positional paths
    too, so the help says where the state's paths end.

    ``parser`` may be a mutually exclusive group (``audit``: files or a live cluster).
    """
    end = STATE_PATHS_END if after_paths else "one or more; the flag may be repeated"
    parser.add_argument("--cluster-state", nargs="+", action=_StatePaths, metavar="PATH", help=f"{what} ({end})")


def add_submitter_flags(parser: argparse.ArgumentParser) -> None:
    """``--user NAME`` and ``--group G``: who submits, as the API server's ``userInfo`` would say.

    Read by ``queue-not-permitted``: where what they leave out (the name, the groups) could
    permit the job, that rule is skipped with a warning naming the flag (a dry run does not
    know its submitter, and unknown is not nobody).
    """
    parser.add_argument(
        "--user",
        metavar="NAME",
        help="the submitting user, as the API server names it (e.g. system:serviceaccount:NS:NAME), for "
        "queuePermissions; where the name or groups left out could permit the job, that rule is skipped with a "
        "warning",
    )
    parser.add_argument(
        "--group",
        action="append",
        metavar="G",
        help="a group of the submitting user, for queuePermissions (repeatable)",
    )


def submitter(args: argparse.Namespace) -> UserInfo:
    """The ``userInfo`` ``--user`` and ``--group`` give (empty: unknown)."""
    return UserInfo(username=args.user or "", groups=tuple(dict.fromkeys(args.group or ())))


def add_judging_flags(parser: argparse.ArgumentParser, *, config: str, cluster_state: str, strict: str) -> None:
    """``PATH...``, ``--config``, ``--mode``, ``--cluster-state``, ``--strict`` and ``--output``,
    each command saying in its own words what its config, state and warnings are."""
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files, directories, or - for stdin")
    parser.add_argument("--config", help=config)
    parser.add_argument("--mode", choices=["static", "dynamic"], help="override the config's mode")
    add_cluster_state(parser, cluster_state)
    parser.add_argument("--strict", action="store_true", help=strict)
    parser.add_argument("--output", choices=list(FORMATTERS), default="text", help="report format (default: text)")
