"""The admin guard registered for Kueue's own objects (the shipped
``kueue-validatingwebhookconfiguration``) on the real API server: a ClusterQueue and Kueue's
Configuration written with kubectl are judged as ``lint-queues`` judges the same object
against ``tpu-admission snapshot`` of the live cluster, and Kueue's controller, the one user
the guard lets by on its objects, is let by."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from controlplane import KUEUE_USER, ControlPlane
from support import run_cli

pytestmark = pytest.mark.e2e

#: the guard's two registrations: Kueue's objects, and its ConfigMap and Deployment in kueue-system
OBJECTS_GUARD = "kueue-objects.validate.tpu-admission.antgroup.com"
CONFIG_GUARD = "kueue-config.validate.tpu-admission.antgroup.com"


def stored(plane: ControlPlane, *what: str) -> dict[str, Any]:
    """The object as kubectl gets it, less what the API server adds (to write it anew)."""
    obj: dict[str, Any] = json.loads(plane.kubectl("get", *what, "-o", "json").stdout)
    metadata = obj["metadata"]
    for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "annotations"):
        metadata.pop(key, None)
    obj.pop("status", None)
    return obj


def denied_lines(stderr: str, webhook: str) -> list[str]:
    """The guard's findings in kubectl's error: one ``[rule] path: message`` a line (the
    first after kubectl's own words on the line that names the webhook)."""
    said = f'admission webhook "{webhook}" denied the request: '
    lines = stderr.splitlines()
    (first,) = [index for index, line in enumerate(lines) if said in line]
    return [lines[first].split(said, 1)[1], *(line for line in lines[first + 1 :] if line.startswith("["))]


def warned_lines(stderr: str) -> list[str]:
    """The findings kubectl prints as ``Warning:`` lines (the guard's warn actions)."""
    return [line.removeprefix("Warning: ") for line in stderr.splitlines() if line.startswith("Warning: [")]


def linted(tmp_path: Path, plane: ControlPlane, obj: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``lint-queues`` on ``obj`` against a snapshot of the live cluster: its denials and its
    warnings, as the webhook's lines."""
    state, written = tmp_path / "state.yaml", tmp_path / "object.yaml"
    kubeconfig = str(plane.layout.kubeconfig)
    taken = run_cli("snapshot", "--kubeconfig", kubeconfig, "--output-file", str(state))
    assert taken.returncode == 0, taken.stderr
    written.write_text(yaml.safe_dump(obj))
    run = run_cli("lint-queues", str(written), "--cluster-state", str(state), "-o", "json")
    assert run.returncode == 1, run.stdout + run.stderr
    (result,) = json.loads(run.stdout)["results"]
    lines: dict[str, list[str]] = {"deny": [], "warn": []}
    for v in result["violations"]:
        lines[v["action"]].append(f"[{v['rule']}] {v['path']}: {v['message']}")
    return sorted(lines["deny"]), sorted(lines["warn"])


def test_a_cluster_queue_is_judged_as_lint_queues_judges_it_on_the_live_state(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """team-a's queue again under another name and without its namespaceSelector: the guard
    refuses it, with the same findings lint-queues gives against the snapshot."""
    probe = stored(control_plane, "clusterqueue", "team-a")
    probe["metadata"]["name"] = "e2e-guard-probe"
    del probe["spec"]["namespaceSelector"]
    done = control_plane.kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(probe), check=False)
    assert done.returncode == 1
    served = denied_lines(done.stderr, OBJECTS_GUARD)
    assert any(line.startswith("[cq-namespace-selector-missing] spec.namespaceSelector:") for line in served)
    assert (sorted(served), sorted(warned_lines(done.stderr))) == linted(tmp_path, control_plane, probe)
    # Kueue's controller writes its objects all along (status, finalizers): the guard's
    # registration lets it by on the user name the API server authenticated
    as_kueue = ("--as", KUEUE_USER, "--as-group", "system:masters")
    let_by = control_plane.kubectl("create", "--dry-run=server", *as_kueue, "-f", "-", stdin=json.dumps(probe))
    assert let_by.returncode == 0, let_by.stderr


def test_kueues_configuration_is_judged_as_lint_queues_judges_it(control_plane: ControlPlane, tmp_path: Path) -> None:
    """A field Kueue's strict decoding refuses would stop its manager at its next start: the
    guard refuses it, with lint-queues' findings against the snapshot."""
    config_map = stored(control_plane, "configmap", "-n", "kueue-system", "kueue-manager-config")
    (key,) = config_map["data"]
    broken = copy.deepcopy(config_map)
    configuration = yaml.safe_load(broken["data"][key])
    configuration["fairSharing"]["enable"] = True  # v1beta2 has no such field
    broken["data"][key] = yaml.safe_dump(configuration)
    done = control_plane.kubectl("replace", "--dry-run=server", "-f", "-", stdin=json.dumps(broken), check=False)
    assert done.returncode == 1
    served = denied_lines(done.stderr, CONFIG_GUARD)
    assert any(line.startswith("[config-rejected-by-kueue]") for line in served), served
    assert (sorted(served), sorted(warned_lines(done.stderr))) == linted(tmp_path, control_plane, broken)
