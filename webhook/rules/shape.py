"""Shape of a job, both modes: host count and per-host chip request of a TPU podSet, and the
limits of the Workload Kueue makes of it."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Final

from webhook.kube.fieldpaths import REPLICATED_JOBS
from webhook.kube.quantity import quantity_or_none
from webhook.kube.topology import Topology, TopologyError, parse_topology, super_slice_problems
from webhook.objects import workloadschema as schema
from webhook.objects.workload import MALFORMED, PodSet, Workload
from webhook.objects.workloadschema import exceeded
from webhook.policy.config import Policy
from webhook.policy.findings import Finding
from webhook.quota.podsets import pod_count
from webhook.rules import JOBS, JOBSET_ONLY, Message, Rule, RuleContext, VapExport
from webhook.rules.cel import (
    ANN,
    CONTAINERS,
    JOB_SPEC_PATH,
    POD_SPEC_PATH,
    SEL,
    TPU_JOBS,
    Expr,
    TopologyCel,
    Validation,
    items,
    lit,
    lits,
    shown,
    static_hosts,
)

FAMILY: Final = "shape"


# ------------------------------------------------------------------ jobset-malformed


def _malformed(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    """The structural problems the reader found (wrong types, a missing template, ...).

    The reader words them, since only it knows what it expected where; this rule gives
    them an ID, an action and a place in the catalog.
    """
    yield from workload.malformed


OBJECT_MALFORMED: Final = Rule(
    MALFORMED,
    "Object is malformed",
    FAMILY,
    _malformed,
    {},
    VapExport("the API server's schema validation of the JobSet CRD refuses wrong types first"),
    why="a value of the wrong type or a missing template; reported with its path instead of failing",
)


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


# ------------------------------------------------------------------ host-count-mismatch


def _host_count(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
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
            said = f"is {value}" if value is not None else f"is not set (Kubernetes treats it as {default})"
            if value is None and default is None:
                said = "is not set"
            yield HOST_COUNT_MISMATCH.finding(
                podset.job_spec_path.child(field),
                field=field,
                value=said,
                topology=topology,
                hosts=hosts,
                chips=topology.chips,
                per_host=chips_per_host,
            )


def _host_count_cel(policy: Policy) -> Iterator[Validation]:
    tpu = policy.tpu
    per_host = tpu.chips_per_host
    if policy.mode == "dynamic":
        ann = lit(tpu.slice_topology_annotation)
        value = f"{ANN}[{ann}]"
        topology = TopologyCel(value, policy)
        subs = {text: (parse_topology(text).chips, str(parse_topology(text))) for text in policy.sub_slice_topologies}
        sub_hosts = (
            "{" + ", ".join(f"{lit(t)}: {c // per_host}" for t, (c, _) in subs.items() if c % per_host == 0) + "}"
        )
        sub_chips = "{" + ", ".join(f"{lit(t)}: {c}" for t, (c, _) in subs.items()) + "}"
        sub_names = "{" + ", ".join(f"{lit(t)}: {lit(n)}" for t, (_, n) in subs.items()) + "}"
        is_sub = f"{value} in {lits(policy.sub_slice_topologies)}"
        sub_ok = f"{value} in {sub_hosts}" if policy.sub_slicing else "false"
        super_ok = f"({topology.valid_super_slice} && {topology.chips} % {per_host} == 0)"
        known = f"({ann} in {ANN} && ({is_sub} ? {sub_ok} : {super_ok}))"
        chips = f"({is_sub} ? {sub_chips}[{value}] : {topology.chips})"
        hosts = f"({chips} / {per_host})"
        name = Expr(f"({is_sub} ? {sub_names}[{value}] : {topology.text.text})")
    else:
        label = lit(tpu.topology_label)
        value = f"{SEL}[{label}]"
        static = static_hosts(policy)
        hosts_map = "{" + ", ".join(f"{lit(t)}: {h}" for t, h in static.items()) + "}"
        names = "{" + ", ".join(f"{lit(t)}: {lit(str(parse_topology(t)))}" for t in static) + "}"
        known = f"({label} in {SEL} && {value} in {hosts_map})"
        hosts = f"{hosts_map}[{value}]"
        chips = f"({hosts} * {per_host})"
        name = Expr(f"{names}[{value}]")
    parallelism = "j.template.?spec.?parallelism.orValue(-1)"
    completions = "j.template.?spec.?completions.orValue(-1)"
    effective = f"({parallelism} >= 0 ? {parallelism} : 1)"
    slice_fields = {
        "topology": name,
        "hosts": Expr(f"string({hosts})"),
        "chips": Expr(f"string({chips})"),
        "per_host": per_host,
    }
    said_parallelism = (
        f"({parallelism} >= 0 ? 'is ' + string({parallelism}) : 'is not set (Kubernetes treats it as 1)')"
    )
    said_completions = f"({completions} >= 0 ? 'is ' + string({completions}) : 'is not set')"
    rule = HOST_COUNT_MISMATCH
    item = items(
        rule.id,
        (
            f"{effective} != {hosts}",
            rule.cel_item(
                [JOB_SPEC_PATH, ".parallelism"], field="parallelism", value=Expr(said_parallelism), **slice_fields
            ),
        ),
        (
            f"{completions} != {hosts}",
            rule.cel_item(
                [JOB_SPEC_PATH, ".completions"], field="completions", value=Expr(said_completions), **slice_fields
            ),
        ),
    )
    bad = f"({known} && ({effective} != {hosts} || {completions} != {hosts}))"
    yield rule.per_job(policy, TPU_JOBS, bad, item, "parallelism and completions must both be the slice's hosts")


HOST_COUNT_MISMATCH: Final = Rule(
    "host-count-mismatch",
    "Host count does not match topology",
    FAMILY,
    _host_count,
    {
        "": Message(
            "{field} {value}, but a {topology} slice has {hosts} hosts ({chips} chips ÷ {per_host} per host)",
            "set both parallelism and completions to {hosts}",
        )
    },
    VapExport("static mode: judged for the config's static topologies only", _host_count_cel),
    kinds=JOBS,
    why="parallelism and completions must both be the slice's hosts (chips ÷ 4)",
)


# ------------------------------------------------------------------ tpu-request-invalid


def _is_chips(raw: object, chips: int, text: str, per_host: Decimal) -> bool:
    """Whether a request or limit is exactly ``chips`` (``text`` written out, ``per_host``
    as a quantity). The usual spellings (``4``, ``"4"``) are compared as they are; any
    other (``"4.0"``, ``"4000m"``) is parsed as the API server would.
    """
    if type(raw) is int:  # a JSON integer (``True`` is a bool, not a quantity)
        return raw == chips
    return raw == text or quantity_or_none(raw) == per_host


def _tpu_request(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    resource = ctx.tpu.resource_name
    chips = ctx.tpu.chips_per_host
    per_host = Decimal(chips)
    text = str(chips)
    rule = TPU_REQUEST_INVALID
    for podset in workload.tpu_podsets:
        tpu_containers = [c for c in podset.containers if c.requests_resource(resource)]
        if not tpu_containers:
            yield rule.finding(
                podset.pod_spec_path.child("containers"),
                "none",
                podset=podset.name,
                resource=resource,
                per_host=per_host,
            )
            continue
        wrong = False
        for container in tpu_containers:
            for kind in ("requests", "limits"):
                raw = (container.requests if kind == "requests" else container.limits).get(resource)
                if _is_chips(raw, chips, text, per_host):
                    continue
                wrong = True
                yield rule.finding(
                    container.path.child("resources", kind).key(resource),
                    container=container.name,
                    kind=kind,
                    value="is missing" if raw is None else f"is {raw!r}",
                    resource=resource,
                    per_host=per_host,
                )
        # Each container may be right and the pod still wrong: the scheduler counts what the
        # pod needs as a whole (main containers and sidecars add up, a plain init container
        # counts alone), and one host has only ``per_host`` chips.
        if wrong or (
            len(tpu_containers) == 1 and not any(c.requests_resource(resource) for c in podset.init_containers)
        ):
            continue  # one container asks, and asks right: that is the pod's total
        total = podset.pod_requests().get(resource)
        if total is not None and total != per_host:
            yield rule.finding(
                podset.pod_spec_path, "pod", podset=podset.name, total=format(total.normalize(), "f"), per_host=per_host
            )


def _tpu_request_cel(policy: Policy) -> Iterator[Validation]:
    rule = TPU_REQUEST_INVALID
    tpu = policy.tpu
    per_host = tpu.chips_per_host
    resource = lit(tpu.resource_name)
    requests, limits = "c.?resources.?requests.orValue({})", "c.?resources.?limits.orValue({})"
    is_tpu = f"({resource} in {requests} || {resource} in {limits})"

    def ok(kind: str) -> str:
        raw = f"{kind}[{resource}]"
        return (
            f"({resource} in {kind} && (type({raw}) == int ? {raw} == {per_host} : "
            f"(type({raw}) == string && isQuantity({raw}) && quantity({raw}).compareTo(quantity('{per_host}')) == 0)))"
        )

    def finding(kind: str, field: str) -> tuple[str, str]:
        raw = f"{kind}[{resource}]"
        said = Expr(
            f"(!({resource} in {kind}) ? 'is missing' : "
            f"type({raw}) == string ? 'is ' + {shown(raw).text} : 'is ' + string({raw}))"
        )
        path: list[str | Expr] = [
            POD_SPEC_PATH,
            ".containers[name=",
            Expr("c.name"),
            f'].resources.{field}["{tpu.resource_name}"]',
        ]
        return (
            f"!{ok(kind)}",
            rule.cel_item(
                path, container=Expr("c.name"), kind=field, value=said, resource=tpu.resource_name, per_host=per_host
            ),
        )

    containers_item = (
        f"{CONTAINERS}.filter(c, {is_tpu} && !({ok(requests)} && {ok(limits)}))"
        f".map(c, {items(rule.id, finding(requests, 'requests'), finding(limits, 'limits'))}).join('; [{rule.id}] ')"
    )
    none_item = rule.cel_item(
        [POD_SPEC_PATH, ".containers"], "none", podset=Expr("j.name"), resource=tpu.resource_name, per_host=per_host
    )
    has_tpu = f"{CONTAINERS}.exists(c, {is_tpu})"
    bad = f"(!{has_tpu} || {CONTAINERS}.exists(c, {is_tpu} && !({ok(requests)} && {ok(limits)})))"
    item = f"(!{has_tpu} ? {none_item} : {containers_item})"
    yield rule.per_job(policy, TPU_JOBS, bad, item, f"each TPU container must request {tpu.resource_name}: {per_host}")


_REQUEST_FIX: Final = "request {resource}: {per_host} in both resources.requests and resources.limits"

TPU_REQUEST_INVALID: Final = Rule(
    "tpu-request-invalid",
    "TPU request not 4 per container",
    FAMILY,
    _tpu_request,
    {
        "": Message(
            "container {container!r} {kind} {value}, but each tpu7x host has exactly {per_host} chips", _REQUEST_FIX
        ),
        "none": Message("TPU podSet {podset!r} has no container requesting {resource}", _REQUEST_FIX),
        "pod": Message(
            "a pod of TPU podSet {podset!r} asks for {total} chips in all (main containers and sidecars add up, "
            "an init container counts alone), but one tpu7x host has exactly {per_host}",
            "request the chips in one container only, and none in init containers or sidecars",
        ),
    },
    VapExport(
        "reads quantities with the Kubernetes quantity library (1.29+); a pod's total is left to the webhook",
        _tpu_request_cel,
    ),
    kinds=JOBS,
    why="each tpu7x host has exactly 4 chips; requests and limits must both say 4",
)


# ------------------------------------------------------------------ workload-schema-exceeded

# The limits are declared with Kueue's Workload schema (webhook.objects.workloadschema), where
# the simulator reads them too.


def _workload_schema(workload: Workload, ctx: RuleContext) -> Iterator[Finding]:
    podsets = workload.podsets
    for limit in exceeded([(podset.name, pod_count(podset)) for podset in podsets]):
        if limit.index is None:  # the podSets' count
            yield WORKLOAD_SCHEMA_EXCEEDED.finding(REPLICATED_JOBS, limit.which, count=limit.value, limit=limit.limit)
            continue
        podset = podsets[limit.index]
        if limit.which == schema.NAME:
            yield WORKLOAD_SCHEMA_EXCEEDED.finding(podset.paths.name, limit.which, name=podset.name, limit=limit.limit)
        else:
            yield WORKLOAD_SCHEMA_EXCEEDED.finding(
                podset.paths.replicas, limit.which, name=podset.name, pods=limit.value, limit=limit.limit
            )


_STRANDED: Final = "Kueue cannot create its Workload, and the JobSet stays suspended"

WORKLOAD_SCHEMA_EXCEEDED: Final = Rule(
    "workload-schema-exceeded",
    "Beyond Kueue's Workload schema",
    FAMILY,
    _workload_schema,
    {
        "podsets": Message(
            "{count} replicatedJobs make {count} podSets, but a Kueue Workload holds at most {limit}: " + _STRANDED,
            "split the JobSet into JobSets of at most {limit} replicatedJobs, or merge replicatedJobs that share "
            "a pod template",
        ),
        "name": Message(
            "replicatedJob name {name!r} is its podSet's name in Kueue's Workload, which must be at most {limit} "
            "lower-case letters, digits and '-', starting and ending with a letter or digit: " + _STRANDED,
            "rename the replicatedJob",
        ),
        "count": Message(
            "replicatedJob {name!r} makes a podSet of {pods} pods, more than a Kueue Workload can count "
            "({limit}): " + _STRANDED,
            "lower replicas or parallelism",
        ),
    },
    VapExport("judges the Workload Kueue derives, as the webhook derives it"),
    kinds=JOBSET_ONLY,
    why="Kueue cannot create a Workload its CRD refuses: the job would stay suspended",
)

RULES: Final = (HOST_COUNT_MISMATCH, TPU_REQUEST_INVALID, WORKLOAD_SCHEMA_EXCEEDED)
