"""What several commands' parsers share: the parser class, how a subcommand is made, and
the flags kubectl users know (``-o/--output``, ``-f/--filename``, ``--kubeconfig``,
``--context``, ``-n/--namespace``, ``-A``) and those of the commands that judge files
(``check``, ``audit``, ``lint-queues``), so each is spelled once and reads the same way in
every command.

Only the standard library is imported here: every command's parser is built from this
module, and ``--help`` must not wait for the engine, the rules or the Kubernetes client.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from webhook.objects.request import UserInfo
    from webhook.policy.config import Policy

#: the exit-code line every judging command's help ends its list with
EXIT_USAGE_LINE: Final = "  2  bad usage, an invalid policy config, or a file that cannot be read"

#: ``check``'s and ``lint-queues``' report formats (``webhook.cli.formatters.FORMATTERS``' keys)
REPORT_OUTPUTS: Final = ("text", "json", "yaml", "github", "junit", "sarif")

#: what a ``--cluster-state`` flag takes, said in every command's help
STATE_PATH_NOTE: Final = "one path each; repeat the flag for more"


class UsageError(Exception):
    """Bad flags or input: ``main`` prints the message and exits 2."""


def emit(text: str) -> None:
    """Print and flush now, so a closed pipe surfaces here, where ``main`` handles it."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose subcommands refuse what they do not know themselves.

    argparse hands a subcommand's unknown arguments up to the top-level parser, which then
    prints its own usage (``tpu-admission [-h] [--version] COMMAND ...``) for a mistake in
    ``check``'s flags. Here the parser that was given them refuses them, with its usage.
    Subparsers are made of the parent's class, so every level behaves alike.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            message = f"unrecognized arguments: {' '.join(extras)}"
            takes_paths = any(action.dest == "paths" for action in self._actions)
            if "--cluster-state" in self._option_string_actions and not takes_paths and extras[0][:1] != "-":
                message += f" (--cluster-state takes {STATE_PATH_NOTE})"
            self.error(message)
        return parsed, extras


def subparser(commands: Any, name: str, summary: str, description: str) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` keeps its description's layout (examples, exit codes)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        name, help=summary, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    return parser


def add_cluster_state(parser: Any, what: str) -> None:
    """``--cluster-state PATH``, as every command that reads state files spells it: one path
    per flag, repeatable, so it never takes the manifests that follow it.

    ``parser`` may be a mutually exclusive group (``audit``: files or a live cluster).
    """
    parser.add_argument("--cluster-state", action="append", metavar="PATH", help=f"{what} ({STATE_PATH_NOTE})")


def add_output(parser: Any, choices: Sequence[str], default: str = "text", what: str = "report format") -> None:
    """``-o/--output FORMAT``: the format of what is printed, as kubectl's ``-o``."""
    parser.add_argument(
        "-o", "--output", choices=list(choices), default=default, metavar="FORMAT",
        help=f"{what}: {', '.join(choices)} (default: {default})",
    )  # fmt: skip


def add_paths(parser: argparse.ArgumentParser) -> None:
    """The files to read: as positional ``PATH...`` and as kubectl's ``-f/--filename`` (repeatable);
    ``paths`` (``read_paths``) is both together, at least one."""
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files, directories, or - for stdin")
    parser.add_argument(
        "-f", "--filename", action="append", default=[], metavar="PATH",
        help="a file or directory to read, as kubectl's -f (repeatable; the same as a PATH)",
    )  # fmt: skip


def read_paths(args: argparse.Namespace) -> list[str]:
    """``PATH...`` and ``-f`` together; none at all is a usage error."""
    paths = [*args.paths, *args.filename]
    if not paths:
        raise UsageError(f"{args.command}: give the files to read: PATH... or -f PATH (- for stdin)")
    return paths


def add_cluster_flags(parser: Any, *, context: Any = None) -> None:
    """``--kubeconfig`` and ``--context``: the cluster, found as kubectl finds it. ``parser`` may
    be a group exclusive with ``--cluster-state``; then ``context`` is where ``--context`` goes."""
    parser.add_argument(
        "--kubeconfig", metavar="FILE",
        help="the cluster (default, as kubectl: $KUBECONFIG, a list of files, else ~/.kube/config; in a pod the "
        "in-cluster config)",
    )  # fmt: skip
    (context or parser).add_argument(
        "--context", metavar="NAME", help="the kubeconfig context to use (default: its current one)"
    )


def add_namespace_flags(parser: Any, *, what: str, all_namespaces: bool = True) -> None:
    """``-n/--namespace NS`` (repeatable where ``all_namespaces``) and ``-A/--all-namespaces``."""
    if all_namespaces:
        parser.add_argument(
            "-n", "--namespace", action="append", metavar="NS", help=f"{what} (repeatable; default: all)"
        )
        parser.add_argument(
            "-A", "--all-namespaces", action="store_true", help="every namespace (the default; as kubectl's -A)"
        )
    else:
        parser.add_argument("-n", "--namespace", metavar="NS", help=what)


def add_allow_empty(parser: argparse.ArgumentParser, what: str = "checked") -> None:
    """``--allow-empty``: an input with nothing to judge is then not a failure."""
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help=f"exit 0 when nothing was {what} (default: exit 1, as kubectl apply fails on no objects)",
    )


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
    from webhook.objects.request import UserInfo

    return UserInfo(username=args.user or "", groups=tuple(dict.fromkeys(args.group or ())))


def add_judging_flags(parser: argparse.ArgumentParser, *, config: str, cluster_state: str, strict: str) -> None:
    """``PATH...``/``-f``, ``--config``, ``--mode``, ``--cluster-state``, ``--strict``,
    ``--allow-empty`` and ``-o/--output``, each command saying in its own words what its
    config, state and warnings are."""
    add_paths(parser)
    parser.add_argument("--config", help=config)
    parser.add_argument("--mode", choices=["static", "dynamic"], help="override the config's mode")
    add_cluster_state(parser, cluster_state)
    parser.add_argument("--strict", action="store_true", help=strict)
    add_allow_empty(parser)
    add_output(parser, REPORT_OUTPUTS)


def judging_policy(args: argparse.Namespace) -> tuple[Policy, str]:
    """The policy of ``--config`` with ``--mode`` applied, and where its mode came from
    (``--mode``, ``config`` or ``default``: the summary says when it is only the default)."""
    from webhook.admin.catalog import load_policy

    policy = load_policy(args.config)
    source = "--mode" if args.mode else "config" if "mode" in policy.model_fields_set else "default"
    if args.mode:
        policy = policy.model_copy(update={"mode": args.mode})
    return policy, source
