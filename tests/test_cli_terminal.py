"""The command line on a terminal (a pseudo-terminal here): colour, width and progress, and
plain text when piped, with NO_COLOR, and for every machine format."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from support import FIXTURES, JOBSETS

SCRIPT = Path(sys.executable).with_name("tpu-admission")
ESC = "\x1b["
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ["--cluster-state", str(FIXTURES / "cluster"), "--cluster-state", str(FIXTURES / "explain")]


def run(*args: str, stdout_tty: bool = True, stderr_tty: bool = False, **env: str) -> tuple[int, str, str, str]:
    """``tpu-admission ARGS`` with stdout and/or stderr on a pseudo-terminal: the exit code,
    what the terminal showed, and what the pipes got."""
    master, slave = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    environment |= {"TERM": "xterm-256color", "COLUMNS": "100", **env}
    proc = subprocess.Popen(
        [str(SCRIPT), *args],
        stdout=slave if stdout_tty else subprocess.PIPE,
        stderr=slave if stderr_tty else subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=environment,
    )
    os.close(slave)
    shown = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the other end closed (EIO on Linux)
            break
        if not chunk:
            break
        shown.append(chunk)
    os.close(master)
    out, err = proc.communicate(timeout=60)
    text = b"".join(shown).decode().replace("\r\n", "\n")
    return proc.returncode, text, (out or b"").decode(), (err or b"").decode()


def test_check_is_coloured_and_as_wide_as_the_terminal() -> None:
    code, shown, _, _ = run("check", str(JOBSETS))
    piped = subprocess.run([str(SCRIPT), "check", str(JOBSETS)], capture_output=True, text=True, check=False)
    assert code == piped.returncode == 1
    assert f"{ESC}1;31mDENIED{ESC}0m" in shown and f"{ESC}31m  deny{ESC}0m" in shown
    assert ESC not in piped.stdout
    lines = shown.split("\n")
    assert max(len(line) for line in lines if ESC not in line) <= 100  # wrapped to the terminal
    assert max(len(line) for line in piped.stdout.splitlines()) > 100  # a pipe gets each line whole


@pytest.mark.parametrize("env", [{"NO_COLOR": "1"}, {"TERM": "dumb"}])
def test_no_color_and_a_dumb_terminal_turn_the_colour_off(env: dict[str, str]) -> None:
    _, shown, _, _ = run("check", str(JOBSETS), **env)
    assert "DENIED" in shown and f"{ESC}1;31m" not in shown and f"{ESC}31m" not in shown


@pytest.mark.parametrize("output", ["json", "yaml", "github", "sarif", "junit"])
def test_machine_formats_are_never_coloured_or_wrapped(output: str) -> None:
    _, shown, _, _ = run("check", str(JOBSETS), "-o", output)
    piped = subprocess.run([str(SCRIPT), "check", str(JOBSETS), "-o", output], capture_output=True, check=False)
    assert shown.encode() == piped.stdout
    assert ESC not in shown


def test_explain_is_laid_out_for_the_terminal_and_for_80_columns_when_piped() -> None:
    target = ["explain", "jobset/llm-pretrain-a3f8", "-n", "kubemaker", *EXAMPLE, "-o", "wide"]
    _, shown, _, _ = run(*target, COLUMNS="120")
    piped = subprocess.run([str(SCRIPT), *target], capture_output=True, text=True, check=False)
    assert max(len(line) for line in piped.stdout.splitlines()) <= 80
    assert 80 < max(len(line) for line in shown.split("\n")) <= 120


def test_progress_is_shown_on_a_terminals_stderr_only() -> None:
    state = ["--cluster-state", str(FIXTURES / "cluster")]
    code, shown, out, _ = run("check", str(JOBSETS), *state, stdout_tty=False, stderr_tty=True)
    assert code == 1
    assert "checking 6 document(s)" in shown and "reading the cluster state" in shown
    assert ESC not in out and out.splitlines()[-1].startswith("6 checked")
    _, _, _, err = run("check", str(JOBSETS), stdout_tty=True, stderr_tty=False)
    assert err == ""  # a piped stderr gets no spinner


def test_simulate_colours_the_outcome() -> None:
    _, shown, _, _ = run("simulate", str(JOBSETS / "rfc-4.6-static-single.yaml"), "--cluster-state",
                         str(FIXTURES / "cluster"))  # fmt: skip
    assert shown.startswith(f"{ESC}1;32mADMIT{ESC}0m  JobSet kubemaker/eval-4x8x8")
