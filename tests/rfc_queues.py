"""RFC-0033's queue section as Kueue objects hold it, for the tests whose state is those queues.

Each call returns a fresh copy, so a test may change what it gets.
"""

from __future__ import annotations

from typing import Any

TPU = "google.com/tpu"


def tpu7x_flavor_spec() -> dict[str, Any]:
    """ResourceFlavor tpu7x's spec: the accelerator label, topology-aware, tolerating the TPU taint."""
    return {
        "nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "tpu7x"},
        "topologyName": "tpu7x-topology",
        "tolerations": [{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}],
    }


def team_flavor_quotas() -> list[dict[str, Any]]:
    """A team ClusterQueue's one resource group's flavors: tpu7x (256 chips, borrowingLimit 128) first,
    cpu-standard (no chips) after, each with its cpu, memory and ephemeral-storage."""
    return [
        {
            "name": "tpu7x",
            "resources": [
                {"name": TPU, "nominalQuota": 256, "borrowingLimit": 128},
                {"name": "cpu", "nominalQuota": "100000"},
                {"name": "memory", "nominalQuota": "100000Gi"},
                {"name": "ephemeral-storage", "nominalQuota": "100000Gi"},
            ],
        },
        {
            "name": "cpu-standard",
            "resources": [
                {"name": TPU, "nominalQuota": 0},
                {"name": "cpu", "nominalQuota": "2000"},
                {"name": "memory", "nominalQuota": "8000Gi"},
                {"name": "ephemeral-storage", "nominalQuota": "4000Gi"},
            ],
        },
    ]
