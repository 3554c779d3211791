"""A Workload that holds quota, as the Kueue model reads it (Kueue's ``workload.Info``).

What the tree and the preemptor need of an admitted Workload: where it holds quota, how
much per (flavor, resource), and what orders it among the candidates for preemption
(priority, when its quota was reserved, UID, whether it is being evicted already).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from webhook.kueue.resources import FlavorResource


@dataclass(frozen=True, slots=True)
class AdmittedWorkload:
    """A Workload holding quota (``QuotaReserved`` True, not finished): what it uses, and where."""

    key: str
    uid: str
    cluster_queue: str
    priority: int
    created: datetime
    #: ``QuotaReserved``'s lastTransitionTime; ``None``: unknown (Kueue then reads "now")
    reserved: datetime | None
    usage: Mapping[FlavorResource, Decimal]
    #: ``Evicted`` is True: preemption or eviction already under way (Kueue tries it first)
    evicted: bool = False
