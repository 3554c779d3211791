"""Shape of a TPU podSet (SPEC §4, both modes): host count and per-host chip request."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from functools import lru_cache

from webhook.kube.quantity import quantity_or_none
from webhook.kube.topology import Topology, TopologyError, parse_topology, super_slice_problems
from webhook.objects.workload import PodSet, Workload
from webhook.policy.findings import Finding
from webhook.rules import RuleContext


def _allowed_topology(podset: PodSet, ctx: RuleContext) -> Topology | None:
    """The podSet's topology when it is an allowed one; the placement rules judge the rest."""
    policy = ctx.policy
    if policy.mode == "dynamic":
        text = podset.annotations.get(ctx.tpu.slice_topology_annotation)
        if text is None:
            return None
        try:
            topology = parse_topology(text)
        except TopologyError:
            return None
        if text in policy.sub_slice_topologies:
            return topology if policy.sub_slicing else None
        return None if super_slice_problems(topology, policy.super_slice) else topology
    text = podset.node_selector.get(ctx.tpu.topology_label)
    if text is None or text not in ctx.static_topologies:
        return None
    try:
        return parse_topology(text)
    except TopologyError:
        return None


def host_count_mismatch(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    chips_per_host = ctx.tpu.chips_per_host
    for podset in workload.tpu_podsets:
        topology = _allowed_topology(podset, ctx)
        if topology is None or topology.chips % chips_per_host:
            continue
        hosts = topology.chips // chips_per_host
        fields = (("parallelism", podset.parallelism, 1), ("completions", podset.completions, None))
        for field, value, default in fields:
            effective = value if value is not None else default
            if effective == hosts:
                continue
            shown = f"is {value}" if value is not None else f"is not set (Kubernetes treats it as {default})"
            if value is None and default is None:
                shown = "is not set"
            yield Finding(
                "host-count-mismatch",
                podset.job_spec_path.child(field),
                f"{field} {shown}, but a {topology} slice has {hosts} hosts "
                f"({topology.chips} chips ÷ {chips_per_host} per host)",
                f"set both parallelism and completions to {hosts}",
            )


@lru_cache(maxsize=16)
def _chips(chips_per_host: int) -> Decimal:
    return Decimal(chips_per_host)


def _request_fix(resource: str, per_host: Decimal) -> str:
    return f"request {resource}: {per_host} in both resources.requests and resources.limits"


def _is_chips(raw: object, chips: int, text: str, per_host: Decimal) -> bool:
    """Whether a request or limit is exactly ``chips`` (``text`` written out, ``per_host``
    as a quantity). The usual spellings (``4``, ``"4"``) are compared as they are; any
    other (``"4.0"``, ``"4000m"``) is parsed as the API server would.
    """
    if type(raw) is int:  # a JSON integer (``True`` is a bool, not a quantity)
        return raw == chips
    return raw == text or quantity_or_none(raw) == per_host


def tpu_request_invalid(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    resource = ctx.tpu.resource_name
    chips = ctx.tpu.chips_per_host
    per_host = _chips(chips)
    text = str(chips)
    for podset in workload.tpu_podsets:
        tpu_containers = [c for c in podset.containers if c.requests_resource(resource)]
        if not tpu_containers:
            yield Finding(
                "tpu-request-invalid",
                podset.pod_spec_path.child("containers"),
                f"TPU podSet {podset.name!r} has no container requesting {resource}",
                _request_fix(resource, per_host),
            )
            continue
        for container in tpu_containers:
            for kind in ("requests", "limits"):
                raw = (container.requests if kind == "requests" else container.limits).get(resource)
                if _is_chips(raw, chips, text, per_host):
                    continue
                shown = "is missing" if raw is None else f"is {raw!r}"
                yield Finding(
                    "tpu-request-invalid",
                    container.path.child("resources", kind).key(resource),
                    f"container {container.name!r} {kind} {shown}, but each tpu7x host has exactly {per_host} chips",
                    _request_fix(resource, per_host),
                )
