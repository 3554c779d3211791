"""The read-only commands against the real API server: a JobSet created with kubectl is
audited as stored, and ``explain`` reads the Workload Kueue's manager made for it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from controlplane import REPO, ControlPlane, shipped_policy
from support import run_cli
from workloads import wait_for_workload

pytestmark = pytest.mark.e2e

JOBSET = REPO / "tests" / "fixtures" / "jobsets" / "rfc-4.6-static.yaml"
NAMESPACE, NAME = "kubemaker", "llm-pretrain-a3f8"


@pytest.fixture(scope="module")
def created(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    control_plane.kubectl("create", "-f", str(JOBSET))
    try:
        wait_for_workload(control_plane, "JobSet", NAMESPACE, NAME, "Admitted")
        yield control_plane
    finally:
        control_plane.kubectl("delete", "-f", str(JOBSET), "--wait=false")


def test_audit_judges_the_stored_jobset_as_admitted(created: ControlPlane, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(shipped_policy())
    kubeconfig = str(created.layout.kubeconfig)
    run = run_cli("audit", "--kubeconfig", kubeconfig, "--config", str(policy), "--output", "json")
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert [(r["kind"], r["namespace"], r["name"], r["allowed"]) for r in answer["results"]] == [
        ("JobSet", NAMESPACE, NAME, True)
    ]
    assert answer["errors"] == []


def test_explain_reads_the_workload_kueue_made(created: ControlPlane) -> None:
    """Admitted, and with no kubelet its pods never start: the job is Starting, on team-a."""
    workload = wait_for_workload(created, "JobSet", NAMESPACE, NAME, "Admitted")
    kubeconfig = str(created.layout.kubeconfig)
    run = run_cli("explain", f"jobset/{NAME}", "-n", NAMESPACE, "--kubeconfig", kubeconfig, "--output", "json")
    assert run.returncode == 0, run.stderr
    (result,) = json.loads(run.stdout)["results"]
    assert (result["kind"], result["name"], result["state"], result["workload"], result["clusterQueue"]) == (
        "JobSet",
        NAME,
        "Starting",
        f"{NAMESPACE}/{workload['metadata']['name']}",
        "team-a",
    )
