"""Quota as a table with text bars, one row per team, that fits an 80-column terminal.

People would rather look than read: each row has the numbers (nominal, in use,
borrowed, lent, pending) and a bar drawn to one scale for the whole table, so teams can
be compared at a glance::

    # in use within nominal   = lent to other teams   . free   + borrowed

The scale is the largest ``nominal + borrowed`` of the table; the segments' ends are
rounded, so the bar's length always matches its numbers' sum. Names longer than
``NAME_WIDTH`` are cut with ``…``; when the numbers leave too little room the bar is
left out, then the names are cut shorter, rather than the line made longer than ``width``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Final

from webhook.explain.inputs import Amounts
from webhook.kueue.amounts import format_amount

WIDTH: Final = 80
NAME_WIDTH: Final = 18
MIN_BAR: Final = 8
HEADERS: Final = ("nominal", "in use", "borrowed", "lent", "pending")
LEGEND: Final = "# in use   = lent to other teams   . free   + borrowed (bar to one scale)"


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """``text`` in lines of at most ``width``; a word longer than a line (a UID, a path) is broken."""
    lines = textwrap.wrap(
        text, width=width, initial_indent=first, subsequent_indent=rest, break_long_words=True, break_on_hyphens=False
    )
    return lines or [first.rstrip()]


def cut(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, cut with ``…``."""
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def bar(amounts: Amounts, scale: Decimal, width: int) -> str:
    """The bar of one row, ``width`` characters at full ``scale``."""
    if scale <= 0 or width <= 0:
        return ""
    zero = Decimal(0)
    own = min(max(amounts.in_use - amounts.borrowed, zero), max(amounts.nominal, zero))
    lent = min(max(amounts.lent, zero), max(amounts.nominal - own, zero))
    free = max(amounts.nominal - own - lent, zero)
    borrowed = max(amounts.borrowed, zero)
    ends, total = [], zero
    for part in (own, lent, free, borrowed):
        total += part
        ends.append(int((min(total, scale) * width / scale).to_integral_value(ROUND_HALF_UP)))
    text, start = "", 0
    for mark, end in zip("#=.+", ends, strict=True):
        text += mark * (end - start)
        start = max(start, end)
    return text


def table(
    rows: Sequence[tuple[str, Amounts | None]],
    resource: str,
    indent: str = "  ",
    width: int = WIDTH,
    header: str = "team",
) -> list[str]:
    """The table of ``rows`` (label, amounts) for one resource, header first (see the module).

    A row without amounts is a label alone (a cohort with no quota of its own, in a tree).
    """
    labels = [cut(label, NAME_WIDTH) for label, _ in rows]
    cells = [
        [
            format_amount(a.nominal, resource),
            format_amount(a.in_use, resource),
            format_amount(a.borrowed, resource),
            format_amount(a.lent, resource),
            format_amount(a.pending, resource),
        ]
        if a is not None
        else [""] * len(HEADERS)
        for _, a in rows
    ]
    name_width = max([len(header), *(len(label) for label in labels)])
    widths = [max([len(header), *(len(row[i]) for row in cells)]) for i, header in enumerate(HEADERS)]
    numbers = sum(w + 2 for w in widths)
    # the names give way before the numbers do (down to 4 characters), and the bar before both
    name_width = max(min(name_width, width - len(indent) - numbers), min(name_width, 4))
    labels = [cut(label, name_width) for label in labels]
    bar_width = width - len(indent) - name_width - numbers - 2
    if bar_width < MIN_BAR:
        bar_width = 0
    scale = max((max(a.nominal + a.borrowed, a.in_use) for _, a in rows if a is not None), default=Decimal(0))
    lines = [_line(indent, cut(header, name_width), name_width, list(HEADERS), widths, "")]
    for label, row, (_, amounts) in zip(labels, cells, rows, strict=True):
        drawn = bar(amounts, scale, bar_width) if bar_width and amounts is not None else ""
        lines.append(_line(indent, label, name_width, row, widths, drawn))
    # only amounts of 1e31 and more get here: cut, rather than past the width
    return [cut(line, width) for line in lines]


def _line(indent: str, label: str, name_width: int, cells: list[str], widths: list[int], drawn: str) -> str:
    numbers = "".join(f"  {cell:>{w}}" for cell, w in zip(cells, widths, strict=True))
    return f"{indent}{label:<{name_width}}{numbers}  {drawn}".rstrip()
