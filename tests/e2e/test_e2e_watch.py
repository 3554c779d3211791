"""The watch cache against the real API server: a ClusterQueue's quota changed with kubectl
reaches the gates within seconds, both ways, and the built-in kinds it lists (whose items
the API server sends without their kind) reach the admin guard; a watch by name resumes
past writes it never saw, by the API server's bookmarks; after etcd is compacted and the
API server restarted, the watches get 410 Gone and list again."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from controlplane import REPO, ControlPlane
from workloads import eventually

from webhook.cluster.client import load_configuration
from webhook.cluster.kinds import WATCHED
from webhook.cluster.watch import WatchCache, WatchSettings
from webhook.policy.config import Policy

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


# ---------------------------------------------------------------- the watch cache in this process


def watching(plane: ControlPlane, settings: WatchSettings) -> WatchCache:
    """A watch cache of our own on the control plane (the webhook's, reachable from the test)."""
    from kubernetes import client

    return WatchCache(Policy(), client.ApiClient(load_configuration(str(plane.layout.kubeconfig))), settings)


def synced(cache: WatchCache) -> bool:
    return all(cache.availability.status[kind.name].synced for kind in WATCHED)


def write_elsewhere(plane: ControlPlane, count: int = 3) -> None:
    """Writes to ConfigMaps other than Kueue's (the one the cache watches, by name): etcd's
    revision moves past every watch's."""
    for _ in range(count):
        plane.kubectl("create", "configmap", "-n", "default", "--from-literal=k=v", f"e2e-{uuid.uuid4().hex[:10]}")


def test_a_filtered_watch_resumes_past_writes_it_never_saw(control_plane: ControlPlane) -> None:
    """Kueue's ConfigMap is watched by name: writes to other ConfigMaps move the API server's
    ConfigMap cache without an event on this watch, and the server says so by bookmark. The
    cache takes it as proof it is current, and its next watch resumes from the bookmark's
    resourceVersion, past those writes, not from the list's. Short watches: the API server
    bookmarks a watch shortly before its timeout, besides about once a minute."""
    cache = watching(control_plane, WatchSettings(watch_seconds=3))
    bookmarked: list[str] = []
    heard = cache.availability.bookmark

    def bookmark(kind: str) -> None:
        bookmarked.append(kind)
        heard(kind)

    cache.availability.bookmark = bookmark  # type: ignore[method-assign]
    cache.start()
    try:
        assert eventually(lambda: synced(cache), FOLLOW_WITHIN)
        kind = "KueueConfigMap"
        listed = int(cache.versions[kind] or 0)
        write_elsewhere(control_plane)
        assert eventually(lambda: kind in bookmarked and int(cache.versions[kind] or 0) > listed, FOLLOW_WITHIN), (
            bookmarked,
            listed,
            cache.versions[kind],
        )
        assert cache.availability.status[kind].connected
    finally:
        cache.stop()


def test_after_etcd_compaction_and_a_restart_the_watches_list_again(
    control_plane: ControlPlane, caplog: pytest.LogCaptureFixture
) -> None:
    """etcd compacted past every watch's resourceVersion, then the API server restarted (its
    watch cache starts again from the store): each watch resumes from a version the server
    no longer has, gets 410 Gone, and lists again; a quota change made after that reaches
    the cache."""
    caplog.set_level(logging.INFO, logger="tpu_admission.cluster")
    cache = watching(control_plane, WatchSettings())
    cache.start()
    try:
        assert eventually(lambda: synced(cache), FOLLOW_WITHIN)
        write_elsewhere(control_plane)
        control_plane.compact_etcd()
        control_plane.restart_apiserver()
        expired = "ClusterQueues: the watch's resourceVersion is too old (410 Gone); listing again"
        assert eventually(lambda: expired in caplog.text, 2 * FOLLOW_WITHIN), caplog.text
        set_tpu_quota(control_plane, 128)
        try:
            assert eventually(lambda: team_b_nominal(cache) == 128, FOLLOW_WITHIN), team_b_nominal(cache)
        finally:
            set_tpu_quota(control_plane, 256)
        assert eventually(lambda: team_b_nominal(cache) == 256, FOLLOW_WITHIN), team_b_nominal(cache)
    finally:
        cache.stop()


def team_b_nominal(cache: WatchCache) -> Decimal | None:
    queue = cache.snapshot().cluster_queue(QUEUE)
    quota = queue.quotas.get((FLAVOR, "google.com/tpu")) if queue is not None else None
    return quota.nominal if quota is not None else None
