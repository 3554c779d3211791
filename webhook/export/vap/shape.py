"""The shape of a TPU podSet as CEL: host count and TPU per container (``webhook/rules/shape.py``)."""

from __future__ import annotations

from webhook.export.vap.common import Validation, job_rule, static_hosts, tpu_fix
from webhook.kube.topology import parse_topology
from webhook.policy.config import Policy
from webhook.rules.cel import (
    ANN,
    CONTAINERS,
    JOB_SPEC_PATH,
    POD_SPEC_PATH,
    SEL,
    Expr,
    TopologyCel,
    cat,
    items,
    lit,
    lits,
    shown,
)


def shape_rules(policy: Policy) -> list[Validation]:
    tpu = policy.tpu
    per_host = tpu.chips_per_host
    out: list[Validation] = []

    rule = "host-count-mismatch"
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
    tail: list[str | Expr] = [
        ", but a ",
        name,
        " slice has ",
        Expr(f"string({hosts})"),
        " hosts (",
        Expr(f"string({chips})"),
        f" chips ÷ {per_host} per host); set both parallelism and completions to ",
        Expr(f"string({hosts})"),
    ]
    item = items(
        rule,
        (
            f"{effective} != {hosts}",
            cat(
                JOB_SPEC_PATH,
                ".parallelism: parallelism ",
                Expr(
                    f"({parallelism} >= 0 ? 'is ' + string({parallelism}) : 'is not set (Kubernetes treats it as 1)')"
                ),
                *tail,
            ),
        ),
        (
            f"{completions} != {hosts}",
            cat(
                JOB_SPEC_PATH,
                ".completions: completions ",
                Expr(f"({completions} >= 0 ? 'is ' + string({completions}) : 'is not set')"),
                *tail,
            ),
        ),
    )
    bad = f"({known} && ({effective} != {hosts} || {completions} != {hosts}))"
    out.append(job_rule(policy, rule, bad, item, "parallelism and completions must both be the slice's hosts"))

    rule = "tpu-request-invalid"
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
        shown_raw = Expr(
            f"(!({resource} in {kind}) ? 'is missing' : "
            f"type({raw}) == string ? 'is ' + {shown(raw).text} : 'is ' + string({raw}))"
        )
        return (
            f"!{ok(kind)}",
            cat(
                POD_SPEC_PATH,
                ".containers[name=",
                Expr("c.name"),
                f'].resources.{field}["{tpu.resource_name}"]: container ',
                shown("c.name"),
                f" {field} ",
                shown_raw,
                f", but each tpu7x host has exactly {per_host} chips; {tpu_fix(policy)}",
            ),
        )

    containers_item = (
        f"{CONTAINERS}.filter(c, {is_tpu} && !({ok(requests)} && {ok(limits)}))"
        f".map(c, {items(rule, finding(requests, 'requests'), finding(limits, 'limits'))}).join('; [{rule}] ')"
    )
    none_item = cat(
        POD_SPEC_PATH,
        ".containers: TPU podSet ",
        shown("j.name"),
        f" has no container requesting {tpu.resource_name}; {tpu_fix(policy)}",
    )
    has_tpu = f"{CONTAINERS}.exists(c, {is_tpu})"
    bad = f"(!{has_tpu} || {CONTAINERS}.exists(c, {is_tpu} && !({ok(requests)} && {ok(limits)})))"
    item = f"(!{has_tpu} ? {none_item} : {containers_item})"
    out.append(job_rule(policy, rule, bad, item, f"each TPU container must request {tpu.resource_name}: {per_host}"))
    return out
