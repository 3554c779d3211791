"""What the command line does differently on a terminal: colour, width and progress.

On a terminal the text answers are printed through ``rich``: coloured (verdicts, outcomes,
deny and warn lines) and wrapped to the terminal's width, and the explain and quota
tables are laid out for that width; cluster reads and long runs show a spinner on stderr.
Piped or redirected output is plain text at 80 columns, exactly as before, and so is
every machine format (JSON, YAML, SARIF, JUnit, GitHub annotations): those never go
through here. ``NO_COLOR`` (any value, as no-color.org asks) and ``TERM=dumb`` turn the
colour off on a terminal too; ``rich`` honours both.

``rich`` is imported only when a stream is a terminal, so a pipe or a CI log pays nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from typing import IO, Any, Final

#: the width of plain text (and the least a terminal's layout is given)
PLAIN_WIDTH: Final = 80

#: (regular expression, rich style) pairs that colour a text answer
Highlights = Sequence[tuple[str, str]]

#: check's, audit's and lint-queues' text: the verdicts and the finding lines
VERDICTS: Final[Highlights] = (
    (r"\b(DENIED|REFUSED|would be DENIED)\b", "bold red"),
    (r"(?m)^  deny\b", "red"),
    (r"(?m)^  warn\b", "yellow"),
    (r"(?m)^  hint\b", "cyan"),
    (r"\badmitted\b", "green"),
    (r": skipped\b", "dim"),
    (r"(?m)^.*: error: .*$", "red"),
)

#: simulate's outcomes, at the start of an answer
OUTCOMES: Final[Highlights] = (
    (r"(?m)^(ADMIT)\b", "bold green"),
    (r"(?m)^(PREEMPT)\b", "bold yellow"),
    (r"(?m)^(WAIT)\b", "bold yellow"),
    (r"(?m)^(NEVER)\b", "bold red"),
    (r"(?m)^(UNKNOWN)\b", "bold"),
)


def is_terminal(stream: IO[Any]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def width() -> int:
    """The width text answers are laid out for: the terminal's on one (``COLUMNS`` too), else 80."""
    if not is_terminal(sys.stdout):
        return PLAIN_WIDTH
    return max(PLAIN_WIDTH, shutil.get_terminal_size((PLAIN_WIDTH, 24)).columns)


def _console(stream: IO[Any]) -> Any:
    from rich.console import Console

    dumb = os.environ.get("TERM") == "dumb"
    return Console(file=stream, highlight=False, markup=False, emoji=False, no_color=dumb or None)


def emit_text(text: str, highlights: Highlights = ()) -> None:
    """Print a text answer: plain when stdout is not a terminal, else through ``rich``,
    coloured by ``highlights`` and wrapped to the terminal's width."""
    if not is_terminal(sys.stdout):
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    from rich.text import Text

    styled = Text(text)
    for pattern, style in highlights:
        styled.highlight_regex(pattern, style)
    _console(sys.stdout).print(styled, overflow="fold")


@contextlib.contextmanager
def progress(message: str) -> Iterator[None]:
    """A spinner with ``message`` on stderr while the block runs, when stderr is a terminal."""
    if not is_terminal(sys.stderr):
        yield
        return
    with _console(sys.stderr).status(message):
        yield
