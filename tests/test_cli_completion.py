"""``tpu-admission completion``: the bash script, run by bash itself on typed command lines."""

from __future__ import annotations

import shlex
import subprocess

from support import run_cli

from webhook.cli.main import COMMANDS

SCRIPT = run_cli("completion", "bash").stdout


def complete(*words: str) -> list[str]:
    """What bash offers for the last of ``words`` (the word being typed) after the others."""
    line = " ".join(shlex.quote(word) for word in words)
    program = (
        f"{SCRIPT}\nCOMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _tpu_admission; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.split()


def test_commands_then_their_flags_then_the_values_of_a_flag() -> None:
    assert complete("tpu-admission", "") == list(COMMANDS)
    assert complete("tpu-admission", "--") == ["--help", "--version"]
    assert complete("tpu-admission", "ch") == ["check"]
    assert complete("tpu-admission", "check", "--cl") == ["--cluster-state"]
    assert complete("tpu-admission", "check", "-o", "") == ["text", "json", "yaml", "github", "junit", "sarif"]
    assert complete("tpu-admission", "--context", "prod", "audit", "--all") == ["--all-namespaces", "--allow-empty"]
    assert complete("tpu-admission", "certs", "g") == ["generate"]
    assert complete("tpu-admission", "certs", "generate", "--fo") == ["--force"]
    assert complete("kubectl-tpu", "export", "") == ["vap", "map"]


def test_a_path_is_left_to_bash_file_names() -> None:
    """No word list for a path: the script is registered with -o default, so bash offers files."""
    assert complete("tpu-admission", "check", "jo") == []
    assert SCRIPT.rstrip().endswith("complete -o default -F _tpu_admission tpu-admission kubectl-tpu")


def test_zsh_runs_the_same_script_through_its_bash_completion() -> None:
    script = run_cli("completion", "zsh").stdout
    assert script.splitlines()[:3] == [
        "#compdef tpu-admission kubectl-tpu",
        "# tpu-admission completion for zsh, through zsh's bash completion support",
        "autoload -U +X bashcompinit && bashcompinit",
    ]
    assert script.endswith(SCRIPT)


def test_another_shell_is_a_usage_error() -> None:
    done = run_cli("completion", "fish")
    assert done.returncode == 2 and "invalid choice: 'fish'" in done.stderr
