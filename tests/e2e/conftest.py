"""The control plane the end-to-end tests share: built and brought up once a session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from controlplane import ControlPlane, needs, stop


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver, the CRDs, the RFC's cluster and our webhook registered, on loopback.

    Without Go the tests skip saying what they need; under CI=true they fail instead, so
    that CI never passes without having run them."""
    reason = needs()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    root: Path = tmp_path_factory.mktemp("controlplane")
    plane = ControlPlane(root, log=lambda line: None)
    plane.up()
    try:
        yield plane
    finally:
        stop(plane.layout)
