"""A LocalQueue as the scheduler reads it: the ClusterQueue it points at and its stop policy.

A Workload names its LocalQueue (``spec.queueName``, from the job's
``kueue.x-k8s.io/queue-name`` label); the LocalQueue names its ClusterQueue
(``spec.clusterQueue``). A ``stopPolicy`` other than ``None`` holds its Workloads back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from webhook.kube.jsonvalues import as_dict


@dataclass(frozen=True, slots=True)
class LocalQueueInfo:
    namespace: str
    name: str
    cluster_queue: str
    #: None | Hold | HoldAndDrain
    stop_policy: str = "None"


def parse_local_queue(obj: Mapping[str, Any]) -> LocalQueueInfo:
    metadata, spec = as_dict(obj.get("metadata")), as_dict(obj.get("spec"))
    return LocalQueueInfo(
        str(metadata.get("namespace", "")),
        str(metadata.get("name", "")),
        str(spec.get("clusterQueue") or ""),
        str(spec.get("stopPolicy") or "None"),
    )
