"""Stepping into a field of a stored object that may be missing or of another type."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.kube.jsonvalues import as_dict


def test_an_object_is_itself() -> None:
    value = {"spec": {"queueName": "q"}}
    assert as_dict(value) is value


@pytest.mark.parametrize("value", [None, "spec", 3, ["a"], True])
def test_anything_else_reads_as_an_empty_object(value: Any) -> None:
    assert as_dict(value) == {}
