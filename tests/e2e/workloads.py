"""What Kueue's manager did with a job, read from the Workloads it wrote: the end-to-end
tests' view of Kueue's decisions (the conditions a user reads with kubectl)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from controlplane import ControlPlane

#: how long Kueue's scheduler may take to act on a submitted job on a loaded 2-core machine
DECISION_WITHIN = 60.0


def eventually(check: Callable[[], bool], within: float = DECISION_WITHIN) -> bool:
    """Poll ``check`` until it holds or ``within`` seconds pass; whether it came to hold."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.5)
    return check()


def workloads(plane: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    done = plane.kubectl("get", "workloads.kueue.x-k8s.io", "-n", namespace, "-o", "json")
    items: list[dict[str, Any]] = json.loads(done.stdout)["items"]
    return items


def owned_by(plane: ControlPlane, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The Workload Kueue made for the job ``kind/name`` (by its owner reference), if any."""
    for workload in workloads(plane, namespace):
        owners = workload["metadata"].get("ownerReferences", [])
        if any((owner["kind"], owner["name"]) == (kind, name) for owner in owners):
            return workload
    return None


def conditions(workload: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Each condition's type -> (status, reason)."""
    return {c["type"]: (c["status"], c["reason"]) for c in workload.get("status", {}).get("conditions", [])}


def is_true(workload: dict[str, Any], condition: str) -> bool:
    return conditions(workload).get(condition, ("", ""))[0] == "True"


def wait_for_workload(
    plane: ControlPlane, kind: str, namespace: str, name: str, condition: str, within: float = DECISION_WITHIN
) -> dict[str, Any]:
    """The job's Workload once ``condition`` is True on it; fail saying what it holds instead."""
    deadline = time.monotonic() + within
    workload = None
    while time.monotonic() < deadline:
        workload = owned_by(plane, kind, namespace, name)
        if workload is not None and is_true(workload, condition):
            return workload
        time.sleep(0.5)
    held = conditions(workload) if workload is not None else "no Workload"
    raise AssertionError(f"{kind} {namespace}/{name}: no {condition} within {within:.0f}s: {held}")
