"""CEL text for the rules' ValidatingAdmissionPolicy export: literals, messages, topology checks.

A rule that has a CEL export writes it beside its check (its family module), out of these
pieces; ``webhook.export.vap`` assembles the policy. Messages are the rule's own templates
(``Message``) filled with CEL expressions, so the policy says what the webhook says.
Every fragment reads the object as the API server types it from the JobSet CRD: optional
fields are read with ``.?`` and ``orValue``, so an absent field is never an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from string import Formatter

from webhook.kube.topology import parse_topology
from webhook.policy.config import Policy
from webhook.policy.findings import Action

#: user values longer than this are cut in messages (the webhook quotes them whole)
SHOWN_CHARS = 64


def lit(text: str) -> str:
    """A CEL string literal (JSON's escapes are CEL's; non-ASCII is kept as is)."""
    return json.dumps(text, ensure_ascii=False)


def lits(items: Sequence[str]) -> str:
    return "[" + ", ".join(lit(item) for item in items) + "]"


def cat(*parts: str | Expr) -> str:
    """Concatenate literal text and CEL expressions into one CEL string expression."""
    out: list[str] = []
    text = ""  # adjacent literal text is one literal: fewer concatenations to pay for
    for part in parts:
        if isinstance(part, Expr):
            if text:
                out.append(lit(text))
                text = ""
            out.append(part.text)
        else:
            text += part
    if text or not out:
        out.append(lit(text))
    return " + ".join(out)


@dataclass(frozen=True, slots=True)
class Expr:
    text: str


def shown(value: str) -> Expr:
    """``'value'`` as Python's repr prints a plain string, cut at ``SHOWN_CHARS``.

    Line breaks are escaped as repr escapes them: a message must stay on one line.
    """
    cut = f"({value}.size() <= {SHOWN_CHARS} ? {value} : {value}.substring(0, {SHOWN_CHARS - 3}) + '...')"
    escaped = (
        f"{cut}.replace('\\\\', '\\\\\\\\').replace('\\n', '\\\\n').replace('\\r', '\\\\r').replace('\\t', '\\\\t')"
    )
    return Expr(f'"\'" + {escaped} + "\'"')


# Paths into one replicatedJob ``j``. The webhook names list items by index; CEL (1.30)
# has no index in a comprehension, so messages name a replicatedJob by its (unique) name.
JOB_PATH = Expr("'spec.replicatedJobs[name=' + j.name + ']'")
JOB_SPEC_PATH = Expr(JOB_PATH.text + " + '.template.spec'")
POD_PATH = Expr(JOB_SPEC_PATH.text + " + '.template'")
POD_SPEC_PATH = Expr(POD_PATH.text + " + '.spec'")
POD_ANNOTATIONS_PATH = Expr(POD_PATH.text + " + '.metadata.annotations'")
NODE_SELECTOR_PATH = Expr(POD_SPEC_PATH.text + " + '.nodeSelector'")

JOBS = "object.?spec.?replicatedJobs.orValue([])"
ANN = "j.template.?spec.?template.?metadata.?annotations.orValue({})"
JOB_ANN = "j.template.?metadata.?annotations.orValue({})"
SEL = "j.template.?spec.?template.?spec.?nodeSelector.orValue({})"
CONTAINERS = "j.template.?spec.?template.?spec.?containers.orValue([])"
REPLICAS = "int(j.?replicas.orValue(1))"  # a whole double (1.0) passes the schema: CEL would not subtract from it
LABELS = "variables.labels"
TIER = "variables.tier"
TPU_JOBS = "variables.tpuJobs"


def choose(condition: str, then: Sequence[str | Expr], otherwise: Sequence[str | Expr]) -> Expr:
    """``condition ? then : otherwise``, each side a text made of pieces as ``cat`` joins them."""
    return Expr(f"({condition} ? {cat(*then)} : {cat(*otherwise)})")


def per_job(rule: str, jobs: str, bad: str, item: str) -> tuple[str, str]:
    """Expression and messageExpression of a rule judged per replicatedJob.

    ``item`` is the CEL text of one finding line (``<path>: <problem>; <fix>``) for a
    failing ``j``; several findings are joined the way the webhook lists them.
    """
    expression = f"!{jobs}.exists(j, {bad})"
    message = f"'[{rule}] ' + {jobs}.filter(j, {bad}).map(j, {item}).join('; [{rule}] ')"
    return expression, message


def items(rule: str, *pairs: tuple[str, str]) -> str:
    """Several possible findings for one ``j``: the lines of those whose condition holds."""
    parts = ", ".join(f"({cond}) ? ({text}) : ''" for cond, text in pairs)
    return f"[{parts}].filter(s, s != '').join('; [{rule}] ')"


# ------------------------------------------------------------------ topology in CEL


class TopologyCel:
    """CEL for ``parse_topology`` and ``super_slice_problems`` on one string value."""

    GRAMMAR = "^([0-9]{1,6})x([0-9]{1,6})x([0-9]{1,6})$"
    NOT_A_TOPOLOGY = " is not of the form AxBxC (three positive integers, e.g. 4x4x4)"
    MAX_TEXT = 20  # 6 + 1 + 6 + 1 + 6: checked before the regex so its cost is bounded

    def __init__(self, value: str, policy: Policy) -> None:
        self.v = value
        self.policy = policy
        self.a, self.b, self.c = (f"int({value}.split('x')[{i}])" for i in range(3))

    @property
    def grammar(self) -> str:
        return f"({self.v}.size() <= {self.MAX_TEXT} && {self.v}.matches({lit(self.GRAMMAR)}))"

    @property
    def zero(self) -> str:
        return f"({self.a} == 0 || {self.b} == 0 || {self.c} == 0)"

    @property
    def chips(self) -> str:
        return f"({self.a} * {self.b} * {self.c})"

    @property
    def text(self) -> Expr:
        return Expr(f"(string({self.a}) + 'x' + string({self.b}) + 'x' + string({self.c}))")

    def problems(self) -> list[tuple[str, str]]:
        """(condition, CEL text) per problem, in ``super_slice_problems`` order."""
        limits = self.policy.super_slice
        a, b, c, m = self.a, self.b, self.c, limits.dimension_multiple
        low = f"({a} < {b} ? ({a} < {c} ? {a} : {c}) : ({b} < {c} ? {b} : {c}))"
        high = f"({a} > {b} ? ({a} > {c} ? {a} : {c}) : ({b} > {c} ? {b} : {c}))"
        middle = f"({a} + {b} + {c} - {low} - {high})"
        minimum = parse_topology(limits.min_topology)
        m0, m1, m2 = minimum.dims
        chips, sub = self.chips, limits.sub_block_chips
        return [
            (f"!({a} <= {b} && {b} <= {c})", lit("dimensions must be non-decreasing (A ≤ B ≤ C)")),
            (f"({a} % {m} != 0 || {b} % {m} != 0 || {c} % {m} != 0)", lit(f"each dimension must be a multiple of {m}")),
            (f"({low} < {m0} || {middle} < {m1} || {high} < {m2})", lit(f"the smallest super-slice is {minimum}")),
            (
                f"{chips} > {limits.max_chips}",
                cat(Expr(f"string({chips})"), f" chips exceeds the maximum of {limits.max_chips}"),
            ),
            (
                f"({chips} % {sub} == 0 && {chips} / {sub} > {limits.max_sub_blocks})",
                cat(
                    Expr(f"string({chips} / {sub})"),
                    f" sub-blocks of {sub} chips exceeds the maximum of {limits.max_sub_blocks}",
                ),
            ),
        ]

    @property
    def valid_super_slice(self) -> str:
        bad = " || ".join(cond for cond, _ in self.problems())
        return f"({self.grammar} && !{self.zero} && !({bad}))"

    def problem_text(self) -> str:
        listed = ", ".join(f"({cond}) ? ({text}) : ''" for cond, text in self.problems())
        return (
            f"(!{self.grammar} ? {cat(shown(self.v), self.NOT_A_TOPOLOGY)}"
            f" : {self.zero} ? {cat(shown(self.v), ' has a zero dimension; each dimension must be positive')}"
            f" : [{listed}].filter(s, s != '').join(', '))"
        )


# ------------------------------------------------------------------ messages and validations


def template_parts(template: str, fields: Mapping[str, object]) -> list[str | Expr]:
    """A message template (``str.format`` syntax) as CEL pieces for ``cat``.

    A field given as ``Expr`` is evaluated by the API server (``{name!r}`` quotes it as the
    webhook's ``repr`` does, cut as ``shown`` cuts it); any other value is formatted here,
    as the webhook formats it.
    """
    parts: list[str | Expr] = []
    for literal, name, spec, conversion in Formatter().parse(template):
        if literal:
            parts.append(literal)
        if name is None:
            continue
        value = fields[name]
        if isinstance(value, Expr):
            parts.append(shown(value.text) if conversion == "r" else value)
        else:
            parts.append(
                ("{0!" + conversion + ":" + (spec or "") + "}" if conversion else "{0:" + (spec or "") + "}").format(
                    value
                )
            )
    return parts


@dataclass(frozen=True, slots=True)
class Validation:
    """One exported rule: ``expression`` is true when the JobSet passes it."""

    rule: str
    expression: str
    message: str
    message_expression: str
    action: Action


def validation(
    policy: Policy, rule: str, default: Action, expression: str, message: str, message_expression: str = ""
) -> Validation:
    """A rule's validation, bound with the action the policy gives ``rule`` (its default ``default``)."""
    action = policy.action_for(rule, default)
    if action is Action.DENY and any(rule in exception.rules for exception in policy.exceptions):
        # The webhook admits the objects a policy exception covers (with a warning); this
        # export does not carry the exceptions' globs, so it only warns for such a rule
        # rather than refuse what the webhook admits.
        action = Action.WARN
    return Validation(rule, expression, message, message_expression, action)


def static_hosts(policy: Policy) -> dict[str, int]:
    """Hosts per slice of each configured static topology (the VAP knows no cluster)."""
    per_host = policy.tpu.chips_per_host
    out = {}
    for text in sorted(policy.static_topology_set):
        chips = parse_topology(text).chips
        if chips % per_host == 0:
            out[text] = chips // per_host
    return out
