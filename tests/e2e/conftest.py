"""The control plane the end-to-end tests share: built and brought up once a session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from controlplane import ControlPlane, needs, stop

#: why the control plane cannot be built here (no Go, no CRDs), or None
NEEDS = needs()
#: under CI nothing skips for want of a tool: the tests then fail, each saying what is missing
IN_CI = os.environ.get("CI", "").lower() in ("true", "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without what the control plane needs (and not in CI), leave the e2e tests out: one
    line at the end of the run says so, instead of one skip per test."""
    if not NEEDS or IN_CI:
        return
    left_out = [item for item in items if item.get_closest_marker("e2e")]
    if left_out:
        items[:] = [item for item in items if not item.get_closest_marker("e2e")]
        config.hook.pytest_deselected(items=left_out)
        config.stash[_LEFT_OUT] = len(left_out)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if config.stash.get(_LEFT_OUT, 0):
        terminalreporter.write_line(f"e2e: {config.stash[_LEFT_OUT]} tests not run: {NEEDS}")


_LEFT_OUT = pytest.StashKey[int]()


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, the CRDs, the RFC's cluster and our webhook registered, on loopback.

    Without Go the tests are left out, in one line saying what they need; under CI=true
    they fail instead, so that CI never passes without having run them."""
    if NEEDS:
        pytest.fail(NEEDS)
    root: Path = tmp_path_factory.mktemp("controlplane")
    plane = ControlPlane(root, log=lambda line: None)
    plane.up()
    try:
        yield plane
    finally:
        stop(plane.layout)
