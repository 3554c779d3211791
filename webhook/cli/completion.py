"""``tpu-admission completion bash|zsh``: a shell completion script, written from the parsers.

The script is generated from ``build_parser`` (every command, its subcommands, its flags
and their choices), so it never lists a flag the program does not take. zsh runs the
bash script through its ``bashcompinit``, as kubectl's own zsh completion once did.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any, Final

from webhook.cli.arguments import emit, subparser

HELP: Final = """\
Print a completion script for bash or zsh: commands, their flags, the values of flags
that take a fixed set (-o FORMAT, --mode) and file names everywhere else. Works for
tpu-admission and for the kubectl plugin's kubectl-tpu.

examples:
  source <(tpu-admission completion bash)
  tpu-admission completion bash > /etc/bash_completion.d/tpu-admission
  tpu-admission completion zsh > "${fpath[1]}/_tpu-admission"

exit codes:
  0  printed
  2  bad usage (a shell other than bash or zsh)
"""


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> tuple[list[str], dict[str, list[str]]]:
    """The parser's flags, and the fixed values of those that have them."""
    flags: list[str] = []
    choices: dict[str, list[str]] = {}
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue
        flags += action.option_strings
        if action.option_strings and action.choices is not None:
            for flag in action.option_strings:
                choices[flag] = [str(choice) for choice in action.choices]
    return flags, choices


def _words(words: list[str]) -> str:
    return shlex.quote(" ".join(words))


def _cases(path: str, parser: argparse.ArgumentParser, lines: list[str]) -> None:
    """One ``case`` arm per command path (``check``, ``certs generate``), and the arms of its subcommands."""
    subcommands = _subcommands(parser)
    flags, choices = _flags(parser)
    lines.append(f'        "{path}")')
    if choices:
        lines.append('            case "$prev" in')
        for flag, values in choices.items():
            lines.append(f'                {flag}) COMPREPLY=($(compgen -W {_words(values)} -- "$cur")); return;;')
        lines.append("            esac")
    lines.append(f"            flags={_words(flags)} subcommands={_words(list(subcommands))};;")
    for name, sub in subcommands.items():
        _cases(f"{path} {name}".strip(), sub, lines)


def bash(parser: argparse.ArgumentParser) -> str:
    lines = [
        "# tpu-admission completion for bash: source <(tpu-admission completion bash)",
        "_tpu_admission() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" path="" word',
        '    local flags="" subcommands=""',
        '    local commands="|${_tpu_admission_paths}|"',
        '    for word in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do',
        '        if [[ "$word" != -* && "$commands" == *"|${path:+$path }$word|"* ]]; then',
        '            path="${path:+$path }$word"',
        "        fi",
        "    done",
        '    case "$path" in',
    ]
    _cases("", parser, lines)
    lines += [
        "    esac",
        '    if [[ "$cur" == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$flags" -- "$cur"))',
        '    elif [[ -n "$subcommands" ]]; then',
        '        COMPREPLY=($(compgen -W "$subcommands" -- "$cur"))',
        "    fi  # else nothing: bash offers file names (-o default)",
        "}",
    ]
    paths: list[str] = []

    def collect(path: str, sub: argparse.ArgumentParser) -> None:
        for name, child in _subcommands(sub).items():
            paths.append(f"{path} {name}".strip())
            collect(f"{path} {name}".strip(), child)

    collect("", parser)
    # a path of several words (certs generate) is matched whole: the paths are |-separated
    lines.insert(1, f"_tpu_admission_paths={shlex.quote('|'.join(paths))}")
    lines.append("complete -o default -F _tpu_admission tpu-admission kubectl-tpu")
    return "\n".join(lines)


def zsh(parser: argparse.ArgumentParser) -> str:
    return "\n".join(
        [
            "#compdef tpu-admission kubectl-tpu",
            "# tpu-admission completion for zsh, through zsh's bash completion support",
            "autoload -U +X bashcompinit && bashcompinit",
            bash(parser),
        ]
    )


def run(args: argparse.Namespace) -> int:
    from webhook.cli.main import build_parser

    parser = build_parser()
    emit(bash(parser) if args.shell == "bash" else zsh(parser))
    return 0


def add_parser(commands: Any) -> None:
    """The ``completion`` subcommand's parser."""
    parser = subparser(commands, "completion", "print a shell completion script (bash or zsh)", HELP)
    parser.add_argument("shell", choices=("bash", "zsh"), metavar="SHELL", help="bash or zsh")
    parser.set_defaults(run=run)
