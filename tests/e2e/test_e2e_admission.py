"""The shipped fixtures applied with kubectl through a real kube-apiserver that calls our
webhook: what a user sees is what ``tpu-admission check`` says of the same files on the
shipped policy and a ``tpu-admission snapshot`` of the same cluster (the RFC's namespaces,
nodes and queues the control plane was given)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from controlplane import REPO, ControlPlane, shipped_policy
from support import run_cli
from workloads import eventually, wait_for_workload

pytestmark = pytest.mark.e2e

FIXTURES = REPO / "tests" / "fixtures"
FILES = sorted(path for kind in ("jobsets", "jobs", "deployments") for path in (FIXTURES / kind).glob("*.yaml"))
#: the fixtures the shipped (static-mode) policy refuses on the RFC's cluster
DENIED = {
    "falcon-before-migration",
    "falcon-migration",
    "pathways-dynamic",
    "rfc-4.3.1-dynamic",
    "rfc-job-dynamic",
}


@dataclass(frozen=True)
class Offline:
    """The shipped policy and a snapshot of the live cluster, for ``tpu-admission check``."""

    policy: Path
    snapshot: Path


@pytest.fixture(scope="module")
def offline(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Offline:
    folder = tmp_path_factory.mktemp("offline")
    (folder / "policy.yaml").write_text(shipped_policy())
    snapshot = run_cli("snapshot", "--kubeconfig", str(control_plane.layout.kubeconfig), "-o", str(folder / "state"))
    assert snapshot.returncode == 0, snapshot.stderr
    return Offline(folder / "policy.yaml", folder / "state")


def checked(path: Path, offline: Offline) -> dict[str, Any]:
    """``tpu-admission check``'s answer for ``path`` on the shipped policy and the live cluster's snapshot."""
    args = ("--config", str(offline.policy), "--cluster-state", str(offline.snapshot), "--output", "json")
    run = run_cli("check", str(path), *args)
    results: list[dict[str, Any]] = json.loads(run.stdout)["results"]
    assert len(results) == 1, run.stdout
    return results[0]


def manifest(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def denial_lines(stderr: str) -> list[str]:
    """The ``[rule] path: message`` lines of the API server's error, as kubectl prints it."""
    _, _, denial = stderr.partition("denied the request: ")
    return sorted(line for line in denial.splitlines() if line.startswith("["))


def warning_lines(stderr: str) -> list[str]:
    """kubectl's ``Warning:`` lines but the advisory ``[simulate]`` ones, which ``check`` does not give."""
    warnings = (line.removeprefix("Warning: ") for line in stderr.splitlines() if line.startswith("Warning: "))
    return sorted(warning for warning in warnings if not warning.startswith("[simulate]"))


def absent(plane: ControlPlane, kind: str, namespace: str, name: str) -> bool:
    got = plane.kubectl("get", kind, "-n", namespace, name, check=False)
    return got.returncode == 1 and "NotFound" in got.stderr


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_dry_run_apply_answers_as_check_does(control_plane: ControlPlane, offline: Offline, path: Path) -> None:
    expected = checked(path, offline)
    assert expected["allowed"] is (path.stem not in DENIED)
    done = control_plane.kubectl("apply", "--dry-run=server", "-o", "json", "-f", str(path), check=False)
    if not expected["allowed"]:
        assert done.returncode == 1, done.stdout
        webhook = f"{expected['tier']}.mutate.tpu-admission.antgroup.com"
        assert f'admission webhook "{webhook}" denied the request' in done.stderr
        denied = [f"[{v['rule']}] {v['path']}: {v['message']}" for v in expected["violations"] if v["action"] == "deny"]
        assert denial_lines(done.stderr) == sorted(denied)
        assert warning_lines(done.stderr) == sorted(expected["warnings"])
        return
    assert done.returncode == 0, done.stderr
    assert warning_lines(done.stderr) == sorted(expected["warnings"])
    labels = json.loads(done.stdout)["metadata"].get("labels", {})
    assert _patched_labels(expected["patch"]).items() <= labels.items()
    assert absent(control_plane, manifest(path)["kind"], expected["namespace"], expected["name"])  # a dry run


def _patched_labels(patch: list[dict[str, Any]]) -> dict[str, str]:
    """The labels a JSON patch of ours adds (it adds labels and nothing else)."""
    labels: dict[str, str] = {}
    for operation in patch:
        assert operation["op"] == "add"
        if operation["path"] == "/metadata/labels":
            labels.update(operation["value"])
        else:
            key = operation["path"].removeprefix("/metadata/labels/")
            labels[key.replace("~1", "/").replace("~0", "~")] = operation["value"]
    return labels


def test_the_dev_tiers_labels_are_on_the_stored_object(control_plane: ControlPlane) -> None:
    path = FIXTURES / "jobs" / "dev-job-cpu.yaml"
    job = manifest(path)
    namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
    control_plane.kubectl("apply", "-f", str(path))
    try:
        stored = json.loads(control_plane.kubectl("get", "job", "-n", namespace, name, "-o", "json").stdout)
        labels = stored["metadata"]["labels"]
        assert labels["kueue.x-k8s.io/queue-name"] == "default"
        assert labels["kueue.x-k8s.io/priority-class"] == "default"
        # the labels put the job in Kueue's hands: it admits it on the dev queue and starts
        # it (spec.suspend false), its controller's flip let through by the webhook
        wait_for_workload(control_plane, "Job", namespace, name, "Admitted")
        assert eventually(lambda: job_suspended(control_plane, namespace, name) is False)
        # an update that changes neither Kueue label nor spec.suspend passes (kubectl fails otherwise)
        control_plane.kubectl("annotate", "job", "-n", namespace, name, "e2e/touched=yes")
        # one that changes the queue label is judged: the dev tier has no such queue. Kueue
        # refuses it too (an admitted job's queue is immutable); the validating webhooks are
        # called at once and kubectl prints whichever denial came first, so ours is read
        # from the webhook's decision log
        relabel = control_plane.kubectl(
            "label", "job", "-n", namespace, name, "--overwrite", "kueue.x-k8s.io/queue-name=nowhere", check=False
        )
        assert relabel.returncode == 1
        assert any(
            f'admission webhook "{webhook}" denied the request' in relabel.stderr
            for webhook in ("dev.validate.tpu-admission.antgroup.com", "vjob.kb.io")
        ), relabel.stderr
        denied = [(False, ["queue-label-invalid"])]  # logged once answered: read it when it is there
        assert eventually(lambda: decisions(control_plane, "UPDATE", "Job", namespace, name)[-1:] == denied)
    finally:
        control_plane.kubectl("delete", "job", "-n", namespace, name, "--wait=false")


def job_suspended(plane: ControlPlane, namespace: str, name: str) -> bool:
    stored = json.loads(plane.kubectl("get", "job", "-n", namespace, name, "-o", "json").stdout)
    return bool(stored["spec"].get("suspend"))


def decisions(
    plane: ControlPlane, operation: str, kind: str, namespace: str, name: str
) -> list[tuple[bool, list[str]]]:
    """The webhook's validating decisions on one object, from its decision log: (allowed, rules)."""
    found = []
    for line in (plane.layout.logs / "tpu-admission.log").read_text().splitlines():
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        if entry.get("msg") != "decision" or "/validate/" not in entry.get("endpoint", ""):
            continue
        if (entry["operation"], entry["kind"], entry["namespace"], entry["name"]) == (operation, kind, namespace, name):
            found.append((entry["allowed"], entry["rules"]))
    return found


def test_a_real_create_is_refused_and_nothing_stored(control_plane: ControlPlane) -> None:
    path = FIXTURES / "jobs" / "rfc-job-dynamic.yaml"
    done = control_plane.kubectl("create", "-f", str(path), check=False)
    assert done.returncode == 1
    assert "[static-topology-selector-missing] spec.template.spec.nodeSelector" in done.stderr
    assert "[tas-annotation-missing] spec.template.metadata.annotations" in done.stderr
    job = manifest(path)
    assert absent(control_plane, "job", job["metadata"]["namespace"], job["metadata"]["name"])


def test_kubectl_prints_the_simulation_as_a_warning(control_plane: ControlPlane) -> None:
    """The line is worked out off the admission path, for the watch cache's latest snapshot:
    a create gets it once the same shape was seen on that snapshot. Kueue's manager writes
    Workloads (each a new snapshot) while earlier tests' jobs settle, hence the retries."""
    path = FIXTURES / "jobsets" / "rfc-4.6-static.yaml"
    line = "Warning: [simulate] starts now on tpu7x-4x4x4"

    def warned() -> bool:
        done = control_plane.kubectl("create", "--dry-run=server", "-f", str(path))
        return line in done.stderr.splitlines()

    assert eventually(warned)
