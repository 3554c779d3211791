"""The copy-on-write tables against plain dicts and sets, over random writes and forks."""

from __future__ import annotations

import random

import pytest

from webhook.quota.table import SetTable, Table


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_fork_keeps_what_it_held_whatever_either_side_writes(seed: int) -> None:
    rng = random.Random(seed)
    table: Table[tuple[str, int], int] = Table()
    model: dict[tuple[str, int], int] = {}
    forks: list[tuple[Table[tuple[str, int], int], dict[tuple[str, int], int]]] = []
    for step in range(3000):
        key = ("k", rng.randrange(600))
        roll = rng.random()
        if roll < 0.6:
            table[key] = model[key] = step
        elif roll < 0.9:
            assert table.pop(key) == model.pop(key, None)
        else:
            forks.append((table.fork(), dict(model)))
        if forks and rng.random() < 0.1:  # a fork written too (``audit``'s view less some Workloads)
            fork, expected = rng.choice(forks)
            fork[key] = expected[key] = -step
        assert len(table) == len(model) and (key in table) == (key in model)
    assert dict(table.items()) == model
    for fork, expected in forks:
        assert dict(fork.items()) == expected and len(fork) == len(expected)


@pytest.mark.parametrize("seed", [4, 5])
def test_every_fork_of_a_set_table_keeps_its_sets_whatever_either_side_moves(seed: int) -> None:
    rng = random.Random(seed)
    table: SetTable[str, int] = SetTable()
    model: dict[str, set[int]] = {}
    forks: list[tuple[SetTable[str, int], dict[str, set[int]]]] = []
    for _ in range(3000):
        key, name = f"k{rng.randrange(20)}", rng.randrange(30)
        if rng.random() < 0.6:
            table.move(key, name, +1)
            model.setdefault(key, set()).add(name)
        else:
            table.move(key, name, -1)
            if key in model:
                model[key].discard(name)
                if not model[key]:
                    del model[key]
        if rng.random() < 0.05:
            forks.append((table.fork(), {k: set(v) for k, v in model.items()}))
        assert {k: set(v) for k, v in table.items()} == model
    for fork, expected in forks:
        assert {k: set(v) for k, v in fork.items()} == expected
