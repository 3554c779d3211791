"""One pod's resource requests as the scheduler counts them.

Shared by the podSets of a submitted JobSet (``PodSet.pod_requests``) and the pending
Workloads the cluster cache projects, so both sides of a quota comparison count alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from webhook.quantity import quantity_or_none


def pod_requests(
    containers: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
    init_containers: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
) -> dict[str, Decimal]:
    """One pod's effective requests, as the scheduler counts them.

    Each container's request defaults to its limit. The pod needs the sum over its
    containers, or the largest init container when that is more: init containers run
    one at a time before the others start.
    """

    def one(requests: Mapping[str, Any], limits: Mapping[str, Any]) -> dict[str, Decimal]:
        out = {}
        for key in {*requests, *limits}:
            value = quantity_or_none(requests[key] if key in requests else limits[key])
            if value is not None and value > 0:
                out[str(key)] = value
        return out

    total: dict[str, Decimal] = {}
    for requests, limits in containers:
        for key, value in one(requests, limits).items():
            total[key] = total.get(key, Decimal(0)) + value
    for requests, limits in init_containers:
        for key, value in one(requests, limits).items():
            if value > total.get(key, Decimal(0)):
                total[key] = value
    return total
