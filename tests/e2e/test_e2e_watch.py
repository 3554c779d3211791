"""The watch cache against the real API server: a ClusterQueue's quota changed with kubectl
reaches the gates within seconds, both ways, and the built-in kinds it lists (whose items
the API server sends without their kind) reach the admin guard."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from controlplane import REPO, ControlPlane
from workloads import eventually

pytestmark = pytest.mark.e2e

#: a guaranteed 4x8x8 JobSet of 256 chips for team-b, whose 4x8x8 quota is 256 with nothing to borrow
JOBSET = REPO / "tests" / "fixtures" / "jobsets" / "rfc-4.6-static-single.yaml"
QUEUE, FLAVOR = "team-b", "tpu7x-4x8x8"
#: how long a change may take to reach the webhook's cache: generous for a loaded 2-core machine
FOLLOW_WITHIN = 30.0


def set_tpu_quota(plane: ControlPlane, nominal: int) -> None:
    """Set team-b's TPU quota on its flavor with a JSON patch: Kueue's manager writes the
    ClusterQueue's status all along, so a replace of what was read loses to it (409)."""
    queue: dict[str, Any] = json.loads(plane.kubectl("get", "clusterqueue", QUEUE, "-o", "json").stdout)
    paths = [
        f"/spec/resourceGroups/{g}/flavors/{f}/resources/{r}/nominalQuota"
        for g, group in enumerate(queue["spec"]["resourceGroups"])
        for f, flavor in enumerate(group["flavors"])
        if flavor["name"] == FLAVOR
        for r, resource in enumerate(flavor["resources"])
        if resource["name"] == "google.com/tpu"
    ]
    assert paths, f"ClusterQueue {QUEUE} has no google.com/tpu quota on {FLAVOR}"
    patch = [{"op": "replace", "path": path, "value": nominal} for path in paths]
    plane.kubectl("patch", "clusterqueue", QUEUE, "--type=json", "-p", json.dumps(patch))


@pytest.fixture
def smaller_quota(control_plane: ControlPlane) -> Iterator[None]:
    set_tpu_quota(control_plane, 128)
    try:
        yield
    finally:
        set_tpu_quota(control_plane, 256)


def dry_run(plane: ControlPlane) -> tuple[int, str]:
    done = plane.kubectl("create", "--dry-run=server", "-f", str(JOBSET), check=False)
    return done.returncode, done.stderr


def quota_refused(plane: ControlPlane) -> bool:
    return "[exceeds-queue-capacity]" in dry_run(plane)[1]


def test_a_quota_cut_and_its_restore_reach_the_gates(control_plane: ControlPlane, smaller_quota: None) -> None:
    assert eventually(lambda: quota_refused(control_plane), FOLLOW_WITHIN), dry_run(control_plane)
    code, stderr = dry_run(control_plane)
    assert code == 1
    assert "ClusterQueue 'team-b' can never hold more than 128" in stderr
    set_tpu_quota(control_plane, 256)
    assert eventually(lambda: dry_run(control_plane)[0] == 0, FOLLOW_WITHIN), dry_run(control_plane)


def test_the_admin_guard_reads_the_clusters_namespaces(control_plane: ControlPlane) -> None:
    """A built-in kind's list leaves each item's kind out: the guard must still see the
    tier's namespaces, so an unchanged RFC ClusterQueue selects some."""
    queue = control_plane.kubectl("get", "clusterqueue", "team-a", "-o", "json").stdout
    done = control_plane.kubectl("replace", "--dry-run=server", "-f", "-", stdin=queue)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("Warning: [")]
    assert any(line.startswith("Warning: [quota-exceeds-cluster]") for line in warnings), done.stderr  # judged
    assert not [line for line in warnings if "[cq-selects-no-namespace]" in line]


def test_after_an_api_server_restart_the_gates_still_follow_quota(control_plane: ControlPlane) -> None:
    control_plane.restart_apiserver()
    set_tpu_quota(control_plane, 128)
    try:
        assert eventually(lambda: quota_refused(control_plane), 2 * FOLLOW_WITHIN)
    finally:
        set_tpu_quota(control_plane, 256)
    assert eventually(lambda: dry_run(control_plane)[0] == 0, FOLLOW_WITHIN), dry_run(control_plane)
