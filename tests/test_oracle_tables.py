"""The restated Kueue tables of the simulator's tests, run through Kueue's own code too.

Each row of the preemption tables (``oracle_tables``) is written as an oracle case and both
our simulator and Kueue (``tests/oracle/``) decide it; any difference that no rule of
``oracle_known`` names fails. Rows the oracle cannot express are listed in ``NOT_COMPARED``
with the reason and counted. Without Go the tests skip with one line; under ``CI=true`` they
fail instead.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from oracle_harness import (
    Comparison,
    OracleUnavailable,
    ask_kueue,
    ask_ours,
    build_oracle,
    compare,
    kueue_version,
    write_case,
    write_disagreement,
)
from oracle_tables import TableCase, preemption_tables, to_case

#: table rows left out of the oracle run, each with why
NOT_COMPARED: dict[str, str] = {}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        return build_oracle(tmp_path_factory.mktemp("oracle") / "oracle")
    except OracleUnavailable as exc:
        if os.environ.get("CI") == "true" or shutil.which("go") is not None:
            pytest.fail(str(exc))
        pytest.skip("needs Go (go on PATH) and the Go module proxy to build the Kueue oracle in tests/oracle")


@pytest.fixture(scope="module")
def tables() -> list[TableCase]:
    return preemption_tables()


@pytest.fixture(scope="module")
def comparisons(
    oracle: Path, tables: list[TableCase], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Comparison]:
    workdir = tmp_path_factory.mktemp("tables")
    compared = [t for t in tables if t.name not in NOT_COMPARED]
    folders = [write_case(to_case(t), workdir / f"row-{i:03d}") for i, t in enumerate(compared)]
    decisions = ask_kueue(oracle, folders)
    out = {}
    for table, folder, decision in zip(compared, folders, decisions, strict=True):
        if decision.get("outcome") == "error":
            raise OracleUnavailable(f"{table.name} ({folder}): the oracle could not read it: {decision.get('message')}")
        out[table.name] = compare(folder, ask_ours(folder), decision)
    return out


def test_the_restated_tables_agree_with_kueue(comparisons: dict[str, Comparison], tmp_path: Path) -> None:
    found = [(name, c) for name, c in comparisons.items() if c.disagrees]
    if found:
        lines = [f"{name} ({write_disagreement(c, tmp_path)}): " + "; ".join(c.differences) for name, c in found]
        pytest.fail(
            f"{len(found)}/{len(comparisons)} table rows disagree with Kueue {kueue_version()}\n" + "\n".join(lines)
        )


def test_every_row_is_compared_or_named(tables: list[TableCase], comparisons: dict[str, Comparison]) -> None:
    """No row is dropped silently: each is compared or listed with its reason."""
    names = [t.name for t in tables]
    assert len(set(names)) == len(names)
    assert set(NOT_COMPARED) <= set(names), "a row left out that no table holds"
    assert set(comparisons) | set(NOT_COMPARED) == set(names)


def test_the_rows_reach_kueue_s_preemptions(comparisons: dict[str, Comparison]) -> None:
    """The rows are preemption tables: Kueue preempts in most of them, and names victims."""
    outcomes = [c.kueue["outcome"] for c in comparisons.values()]
    assert outcomes.count("preempt") > len(outcomes) // 2
    assert {"preempt", "wait"} <= set(outcomes)
