"""What the simulator reads of two of Kueue's objects beyond the quota model's: a LocalQueue and
Kueue's Configuration.

A LocalQueue is its ClusterQueue and its stop policy. Fair sharing comes from Kueue's
Configuration (the decoded ``controller_manager_config.yaml`` of ConfigMap
``kueue-system/kueue-manager-config``): in ``v1beta2`` a ``fairSharing`` block turns it on;
in ``v1beta1`` only with ``enable: true``. The state the engine runs on is built from the
cluster's snapshot (``webhook.simulate.live.state_of``), which reads both through these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.kube.jsonvalues import as_dict
from webhook.kueue.fair_sharing import DEFAULT_STRATEGIES, FairSharing
from webhook.simulate.state import LocalQueueInfo

STRATEGIES = frozenset(DEFAULT_STRATEGIES)


def fair_sharing(configuration: Mapping[str, Any] | None) -> FairSharing:
    """Kueue's ``fairSharing`` setting; strategies default as Kueue's ``parseStrategies`` does."""
    if configuration is None or not isinstance(configuration.get("fairSharing"), dict):
        return FairSharing(False)
    block = configuration["fairSharing"]
    if str(configuration.get("apiVersion", "")).endswith("/v1beta1") and block.get("enable") is not True:
        return FairSharing(False)
    strategies = block.get("preemptionStrategies")
    chosen = tuple(s for s in strategies if s in STRATEGIES) if isinstance(strategies, list) else ()
    return FairSharing(True, chosen or DEFAULT_STRATEGIES)


def parse_local_queue(obj: Mapping[str, Any]) -> LocalQueueInfo:
    metadata, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
    return LocalQueueInfo(
        str(metadata.get("namespace", "")),
        str(metadata.get("name", "")),
        str(spec.get("clusterQueue", "")),
        str(spec.get("stopPolicy") or "None"),
    )
