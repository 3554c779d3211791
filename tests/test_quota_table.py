"""The copy-on-write table against a plain dict, over random writes and forks."""

from __future__ import annotations

import random

import pytest

from webhook.quota.table import Table


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
