"""One pod's resource requests as the scheduler counts them.

Shared by the podSets of a submitted JobSet (``PodSet.pod_requests``) and the pending
Workloads the cluster cache projects, so both sides of a quota comparison count alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from webhook.kube.quantity import CONTEXT, ZERO, quantity_or_none

#: (requests, limits) of one container
Resources = tuple[Mapping[str, Any], Mapping[str, Any]]
#: (requests, limits, restartable) of one init container; restartable = ``restartPolicy: Always`` (a sidecar)
InitResources = tuple[Mapping[str, Any], Mapping[str, Any], bool]


def _effective(requests: Mapping[str, Any], limits: Mapping[str, Any]) -> dict[str, Decimal]:
    """A container's requests, each defaulting to its limit."""
    out = {}
    for key in {*requests, *limits}:
        value = quantity_or_none(requests[key] if key in requests else limits[key])
        if value is not None and value > 0:
            out[str(key)] = value
    return out


def pod_requests(containers: Iterable[Resources], init_containers: Iterable[InitResources]) -> dict[str, Decimal]:
    """One pod's effective requests, as Kubernetes (and Kueue, which uses its helper) counts them.

    The main containers run together with every sidecar (restartable init container), so
    they add up. Init containers run one at a time, in order; while a plain one runs, the
    sidecars declared before it are already running. The pod needs the larger of the two.
    Summed in the quantities' context (``CONTEXT``): exact, whatever the caller's.
    """
    add = CONTEXT.add
    running: dict[str, Decimal] = {}
    for requests, limits in containers:
        for key, value in _effective(requests, limits).items():
            running[key] = add(running.get(key, ZERO), value)
    sidecars: dict[str, Decimal] = {}
    peak: dict[str, Decimal] = {}
    for requests, limits, restartable in init_containers:
        own = _effective(requests, limits)
        if restartable:
            for key, value in own.items():
                sidecars[key] = add(sidecars.get(key, ZERO), value)
            during = dict(sidecars)
        else:
            during = {key: add(sidecars.get(key, ZERO), own.get(key, ZERO)) for key in {*own, *sidecars}}
        for key, value in during.items():
            if value > peak.get(key, ZERO):
                peak[key] = value
    total = {key: add(running.get(key, ZERO), sidecars.get(key, ZERO)) for key in {*running, *sidecars}}
    for key, value in peak.items():
        if value > total.get(key, ZERO):
            total[key] = value
    return total
