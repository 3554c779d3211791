"""Text bars and the quota table: segments to one scale, columns aligned, never past the width."""

from __future__ import annotations

from decimal import Decimal

import pytest
from explain_builders import amounts

from webhook.explain.bars import bar, cut, table, wrap
from webhook.explain.inputs import Amounts


@pytest.mark.parametrize(
    ("row", "scale", "expected"),
    [
        # in use 192 of its own 256, 64 lent to a team that borrows it: full, no free
        (amounts(256, 192, 0, 64), 320, "############====    "),
        # 320 in use, 64 of it borrowed beyond its nominal 256
        (amounts(256, 320, 64), 320, "################++++"),
        (amounts(256, 64), 320, "####............    "),
        (amounts(0, 0, 0, 0, 512), 320, "                    "),
        (amounts(64), 0, ""),
        # an over-reported lent never draws past the nominal
        (amounts(10, 5, 0, 50), 10, "#" * 10 + "=" * 10),
    ],
)
def test_bar_segments(row: Amounts, scale: int, expected: str) -> None:
    assert bar(row, Decimal(scale), 20).ljust(20 if scale else 0) == expected


def test_table_numbers_in_columns_and_bars_to_one_scale() -> None:
    rows = [("team-a", amounts(256, 320, 64, 0, 128)), ("team-b", amounts(256, 192, 0, 64)), ("cohort/", None)]
    # scale 320 over 27 characters: 256 ends at 21.6 -> 22, 192 at 16.2 -> 16
    assert table(rows, "google.com/tpu", "  ", 80) == [
        "  team     nominal  in use  borrowed  lent  pending",
        "  team-a       256     320        64     0      128  " + "#" * 22 + "+" * 5,
        "  team-b       256     192         0    64        0  " + "#" * 16 + "=" * 6,
        "  cohort/",
    ]


def test_a_table_never_passes_the_width() -> None:
    huge = Amounts(Decimal("1e40"), Decimal("1e40"), Decimal("1e40"), Decimal("1e40"), Decimal("1e40"))
    lines = table([("a" * 63, huge), ("b", amounts(1))], "memory", "    ", 80)
    # no room for a bar, and the names give way to the numbers
    assert lines == [
        "    team         nominal        in use      borrowed          lent       pending",
        "    aaaaa…  1e31 or more  1e31 or more  1e31 or more  1e31 or more  1e31 or more",
        "    b                  1             0             0             0             0",
    ]
    assert max(len(line) for line in table([("x", huge)], "memory", "    ", 40)) == 40


def test_cut_and_wrap() -> None:
    assert (cut("abcdef", 4), cut("abc", 4)) == ("abc…", "abc")
    assert wrap("x" * 30, 10, "- ", "  ") == ["- xxxxxxxx", "  xxxxxxxx", "  xxxxxxxx", "  xxxxxx"]
    assert wrap("", 10, "  - ") == ["  -"]
