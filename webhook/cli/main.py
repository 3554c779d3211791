"""``tpu-admission``: a thin dispatcher over one module per subcommand.

``COMMANDS`` names each subcommand's module and one-line summary. ``main`` imports only
the module of the command that runs (each module's ``add_parser`` builds its parser,
its ``run`` functions import what they need when they run), so ``--help`` and a
command's own ``--help`` answer without loading the engine, the rules or the Kubernetes
client. ``build_parser`` builds every command's parser (for the tests, the README's
checks and shell completion).

``kubectl_main`` is the same program as a kubectl plugin (``kubectl tpu ...``); both
accept kubectl's global flags (``--kubeconfig``, ``--context``, ``-n``, ``-A``) before
the command as well as after it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from webhook import __version__
from webhook.cli.arguments import Parser, UsageError

__all__ = ["COMMANDS", "build_parser", "kubectl_main", "main"]
EXIT_OK, EXIT_USAGE = 0, 2
#: a process killed by SIGPIPE exits 128 + 13 in a shell; we end the same way, quietly
EXIT_BROKEN_PIPE = 141


class Command(NamedTuple):
    module: str
    summary: str


#: every subcommand: its module (which has ``add_parser``, or ``add_NAME``) and summary, in ``--help``'s order
COMMANDS: Final = {
    "serve": Command("webhook.cli.serve", "run the HTTPS admission webhook server"),
    "serve-advisor": Command(
        "webhook.cli.serve_advisor", "run simulate, explain and quota as an aggregated API server"
    ),
    "check": Command("webhook.cli.check", "check manifests as the webhook would (CI dry run)"),
    "audit": Command("webhook.cli.audit", "judge the JobSets, Jobs and Deployments that exist now"),
    "explain": Command("webhook.cli.explain", "why a job is not running, and until when"),
    "quota": Command("webhook.cli.explain", "the cohort tree's quota, usage, borrowing and lending"),
    "simulate": Command("webhook.cli.simulate", "what Kueue would do with these jobs if submitted now"),
    "lint-queues": Command(
        "webhook.cli.lint_queues", "refuse a Kueue configuration that breaks the quota model (GitOps pipeline)"
    ),
    "snapshot": Command("webhook.cli.snapshot", "print (or write) a --cluster-state file from a live cluster"),
    "certs": Command("webhook.cli.certs", "certificate helpers for admins"),
    "config": Command("webhook.cli.config", "validate a policy file and print the effective policy"),
    "export": Command("webhook.cli.export", "export the policy for the API server itself"),
    "rules": Command("webhook.cli.rules", "list the rule catalog, or describe rules"),
    "completion": Command("webhook.cli.completion", "print a shell completion script (bash or zsh)"),
    "version": Command("webhook.cli.version", "print the version"),
}

#: kubectl's global flags that take a value, and those that do not, as they may come before the command
_GLOBAL_VALUED: Final = frozenset({"--kubeconfig", "--context", "-n", "--namespace"})
_GLOBAL_SWITCHES: Final = frozenset({"-A", "--all-namespaces"})

_MAIN_HELP = """\
Admission webhook for JobSets on a Kueue-managed GKE TPU (tpu7x) cluster, and the
same checks as a CI dry run. As a kubectl plugin: kubectl tpu COMMAND.

examples:
  tpu-admission serve
  tpu-admission check manifests/ --mode dynamic -o github
  tpu-admission lint-queues kueue/ --cluster-state cluster-state.yaml
  tpu-admission explain jobset/llm-pretrain-a3f8 -n kubemaker
  tpu-admission simulate -f job.yaml --context prod
  tpu-admission config --config policy.yaml
  tpu-admission export vap --config policy.yaml
  tpu-admission snapshot > cluster-state.yaml
  tpu-admission rules slice-topology-missing
  source <(tpu-admission completion bash)
  tpu-admission COMMAND --help        more on one command

The commands that read a cluster find it as kubectl does (--kubeconfig, $KUBECONFIG,
~/.kube/config, in a pod the in-cluster config) and take --context; -o/--output is the
output format in every command.
"""


def _add(commands: Any, name: str) -> None:
    """Import ``name``'s module and let it build its parser."""
    module = importlib.import_module(COMMANDS[name].module)
    builder = getattr(module, f"add_{name.replace('-', '_')}", None) or module.add_parser
    builder(commands)


def build_parser(only: str | None = None, prog: str = "tpu-admission") -> argparse.ArgumentParser:
    """The parser with every command's (``only``: that command's; the others by name and summary)."""
    parser = Parser(prog=prog, description=_MAIN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        if only is None or name == only:
            _add(commands, name)
        else:
            commands.add_parser(name, help=command.summary)
    return parser


def hoist_global_flags(argv: Sequence[str]) -> list[str]:
    """kubectl's global flags given before the command (``--context prod quota``) moved after
    it, where the command's parser reads them; everything else stays in place."""
    before: list[str] = []
    rest = list(argv)
    while rest and rest[0].startswith("-"):
        flag, _, _ = rest[0].partition("=")
        if flag in _GLOBAL_SWITCHES or ("=" in rest[0] and flag in _GLOBAL_VALUED):
            before.append(rest.pop(0))
        elif flag in _GLOBAL_VALUED and len(rest) > 1:
            before += [rest.pop(0), rest.pop(0)]
        else:
            break
    if before and rest and rest[0] in COMMANDS:
        return [rest[0], *before, *rest[1:]]
    return [*before, *rest]


def _command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is not a flag."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None, prog: str = "tpu-admission") -> int:
    words = hoist_global_flags(sys.argv[1:] if argv is None else argv)
    command = _command_of(words)
    parser = build_parser(only=command if command in COMMANDS else "", prog=prog)
    if not words:  # as kubectl: no command is a request for the help
        parser.print_help()
        return EXIT_OK
    try:
        args = parser.parse_args(words)
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe surfaces here, not in the interpreter's exit
        return code
    except UsageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`check ... | head`): no traceback, and no second error
        # when the interpreter flushes stdout at exit (the Python docs' recipe).
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        from webhook.policy.config import ConfigError

        if not isinstance(exc, ConfigError):
            raise
        print(f"{prog}: {exc}", file=sys.stderr)
        return EXIT_USAGE


def kubectl_main() -> int:
    """``kubectl-tpu``: kubectl runs it for ``kubectl tpu ...``; usage and messages say ``kubectl tpu``."""
    return main(prog="kubectl tpu")
