"""Kueue's manager in the control plane: a shipped RFC JobSet applied with kubectl gets a
Workload from Kueue, which admits it by quota (the nodes are objects only: no kubelet runs)
and unsuspends it through our webhook, which lets Kueue's controller, and only it, do so."""

from __future__ import annotations

import json

import pytest
from controlplane import REPO, ControlPlane
from workloads import conditions, eventually, wait_for_workload

pytestmark = pytest.mark.e2e

#: a guaranteed single-slice 4x8x8 JobSet of 256 chips for team-b-queue
JOBSET = REPO / "tests" / "fixtures" / "jobsets" / "rfc-4.6-static-single.yaml"
NAMESPACE, NAME = "kubemaker", "eval-4x8x8"


def suspended(plane: ControlPlane) -> bool:
    jobset = json.loads(plane.kubectl("get", "jobset", "-n", NAMESPACE, NAME, "-o", "json").stdout)
    return bool(jobset["spec"]["suspend"])


def test_kueue_admits_an_rfc_jobset_applied_with_kubectl(control_plane: ControlPlane) -> None:
    control_plane.kubectl("apply", "-f", str(JOBSET))
    try:
        workload = wait_for_workload(control_plane, "JobSet", NAMESPACE, NAME, "Admitted")
        admission = workload["status"]["admission"]
        assert (
            admission["clusterQueue"],
            [(p["name"], p["flavors"], p["count"]) for p in admission["podSetAssignments"]],
        ) == ("team-b", [("workers", {"google.com/tpu": "tpu7x-4x8x8"}, 64)])
        assert {kind: state for kind, state in conditions(workload).items() if kind != "PodsReady"} == {
            "QuotaReserved": ("True", "QuotaReserved"),
            "Admitted": ("True", "Admitted"),
        }
        # Kueue's controller starts it once admitted; the webhook lets that user flip spec.suspend
        assert eventually(lambda: suspended(control_plane) is False), suspended(control_plane)
    finally:
        control_plane.kubectl("delete", "-f", str(JOBSET), "--wait=true")
