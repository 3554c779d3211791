"""What the API server would refuse in an object ``simulate`` reads, refused the same way.

``simulate`` (the CLI and the advisor's simulations, both through ``webhook.advisor.submitted``)
answers for an object as if it were created now; one the API server would refuse is never
created, so it gets no answer but the refusal. Checked as the API server's validation
checks them (``k8s.io/apimachinery`` ``validation``, ``apps``/``batch`` validation, the
JobSet and Kueue CRDs' schemas), for the fields the simulator reads: the object's name
(a DNS-1123 subdomain) and namespace (a DNS-1123 label), label keys (qualified names) and
values, the names of replicated jobs and podSets (DNS-1123 labels), counts (replicas,
parallelism, completions, a podSet's count: never negative), and each container's
resource requests and limits (qualified resource names; quantities that parse and are
not negative). The messages follow the API server's (``field: Invalid value: "...":
rule``), with the value made printable (``printable``): no answer echoes a control or
bidirectional-format character raw.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any, Final

from webhook.kube.quantity import QuantityError, parse_quantity

_LABEL: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL: Final = re.compile(rf"{_LABEL}\Z")
DNS1123_SUBDOMAIN: Final = re.compile(rf"{_LABEL}(\.{_LABEL})*\Z")
_QUALIFIED: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE: Final = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")

LABEL_RULE: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
SUBDOMAIN_RULE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
QUALIFIED_RULE: Final = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
VALUE_RULE: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
#: the most characters of a value a message quotes
QUOTED: Final = 100
#: the most refusals one answer lists
LISTED: Final = 5


def printable(text: str, most: int | None = None) -> str:
    """``text`` with every control, format (bidirectional overrides and isolates, zero-width
    characters), line- and paragraph-separator character written as a ``\\u`` escape, clipped to
    ``most`` characters of the input (with "...")."""
    clipped = most is not None and len(text) > most
    if clipped:
        text = text[:most]
    if text.isprintable():
        return text + "..." if clipped else text
    out = "".join(_escaped(c) if unicodedata.category(c) in _UNPRINTABLE else c for c in text)
    return out + "..." if clipped else out


#: Unicode categories written as escapes: controls (C0, DEL, C1), formats (the bidirectional
#: overrides and isolates, zero-width characters), line and paragraph separators, surrogates,
#: private use and unassigned code points
_UNPRINTABLE: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def _escaped(c: str) -> str:
    return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"


def printable_json(value: Any) -> Any:
    """``value`` (JSON: mappings, lists, strings, numbers) with every string, keys included, made
    ``printable``: an answer's names may come from a state file or a stored object. A string's
    line breaks are kept (``printable_lines``): JSON writes them as ``\\n`` itself, and a
    message of several lines (a denial's violations) must decode to those lines."""
    if isinstance(value, str):
        return printable_lines(value)
    if isinstance(value, Mapping):
        return {printable(str(key)): printable_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable_json(item) for item in value]
    return value


def printable_lines(text: str) -> str:
    """``text`` made ``printable`` line by line (its line breaks kept)."""
    return "\n".join(printable(line) for line in text.split("\n"))


def _invalid(path: str, value: Any, rule: str) -> str:
    shown = printable(value, QUOTED) if isinstance(value, str) else repr(value)
    return f'{path}: Invalid value: "{shown}": {rule}'


def _dns_label(path: str, value: Any) -> Iterator[str]:
    if not isinstance(value, str) or not DNS1123_LABEL.match(value):
        yield _invalid(path, value, LABEL_RULE)
    elif len(value) > 63:
        yield _invalid(path, value, "must be no more than 63 characters")


def _subdomain(path: str, value: Any) -> Iterator[str]:
    if not isinstance(value, str) or not DNS1123_SUBDOMAIN.match(value):
        yield _invalid(path, value, SUBDOMAIN_RULE)
    elif len(value) > 253:
        yield _invalid(path, value, "must be no more than 253 characters")


def _qualified(path: str, key: Any) -> Iterator[str]:
    """A qualified name (``prefix/name``: a label key, a resource name)."""
    if not isinstance(key, str):
        yield _invalid(path, key, QUALIFIED_RULE)
        return
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or "/" in prefix):
        yield _invalid(path, key, "a qualified name must have at most one '/'")
        return
    if prefix and (not DNS1123_SUBDOMAIN.match(prefix) or len(prefix) > 253):
        yield _invalid(path, key, "prefix part " + SUBDOMAIN_RULE)
    if not _QUALIFIED.match(name) or len(name) > 63:
        yield _invalid(path, key, QUALIFIED_RULE + " (at most 63 characters)")


def _count(path: str, value: Any) -> Iterator[str]:
    if type(value) is int and value < 0:
        yield _invalid(path, value, "must be greater than or equal to 0")


def _metadata(metadata: Any, path: str = "metadata", *, named: bool = True) -> Iterator[str]:
    if not isinstance(metadata, Mapping):
        return
    if named:
        name = metadata.get("name")
        if name is not None or not metadata.get("generateName"):
            yield from _subdomain(f"{path}.name", name)
        namespace = metadata.get("namespace")
        if namespace is not None:
            yield from _dns_label(f"{path}.namespace", namespace)
    labels = metadata.get("labels")
    if isinstance(labels, Mapping):
        for key, value in labels.items():
            yield from _qualified(f"{path}.labels", key)
            if not isinstance(value, str) or not _LABEL_VALUE.match(value):
                yield _invalid(f"{path}.labels", value, VALUE_RULE)
            elif len(value) > 63:
                yield _invalid(f"{path}.labels", value, "must be no more than 63 characters")


def _resources(path: str, resources: Any) -> Iterator[str]:
    if not isinstance(resources, Mapping):
        return
    for part in ("requests", "limits"):
        amounts = resources.get(part)
        if not isinstance(amounts, Mapping):
            continue
        for resource, amount in amounts.items():
            where = f"{path}.{part}[{printable(str(resource), QUOTED)}]"
            yield from _qualified(where, resource)
            try:
                value = parse_quantity(amount)
            except QuantityError:
                yield _invalid(where, amount, "quantities must match the regular expression of a Kubernetes quantity")
                continue
            if value < 0:
                yield _invalid(where, amount, "must be greater than or equal to 0")


def _pod_template(path: str, template: Any) -> Iterator[str]:
    if not isinstance(template, Mapping):
        return
    yield from _metadata(template.get("metadata"), f"{path}.metadata", named=False)
    spec = template.get("spec")
    if not isinstance(spec, Mapping):
        return
    for group in ("initContainers", "containers"):
        containers = spec.get(group)
        if not isinstance(containers, list):
            continue
        for i, container in enumerate(containers):
            if isinstance(container, Mapping):
                yield from _resources(f"{path}.spec.{group}[{i}].resources", container.get("resources"))


def _job_spec(path: str, spec: Any) -> Iterator[str]:
    if not isinstance(spec, Mapping):
        return
    yield from _count(f"{path}.parallelism", spec.get("parallelism"))
    yield from _count(f"{path}.completions", spec.get("completions"))
    yield from _pod_template(f"{path}.template", spec.get("template"))


def _by_kind(kind: str, spec: Mapping[str, Any]) -> Iterator[str]:
    if kind == "JobSet":
        jobs = spec.get("replicatedJobs")
        for i, job in enumerate(jobs if isinstance(jobs, list) else ()):
            if not isinstance(job, Mapping):
                continue
            yield from _dns_label(f"spec.replicatedJobs[{i}].name", job.get("name"))
            yield from _count(f"spec.replicatedJobs[{i}].replicas", job.get("replicas"))
            template = job.get("template")
            if isinstance(template, Mapping):
                yield from _job_spec(f"spec.replicatedJobs[{i}].template.spec", template.get("spec"))
    elif kind == "Job":
        yield from _job_spec("spec", spec)
    elif kind == "Deployment":
        yield from _count("spec.replicas", spec.get("replicas"))
        yield from _pod_template("spec.template", spec.get("template"))
    elif kind == "Workload":
        podsets = spec.get("podSets")
        for i, podset in enumerate(podsets if isinstance(podsets, list) else ()):
            if not isinstance(podset, Mapping):
                continue
            yield from _dns_label(f"spec.podSets[{i}].name", podset.get("name"))
            yield from _count(f"spec.podSets[{i}].count", podset.get("count"))
            yield from _pod_template(f"spec.podSets[{i}].template", podset.get("template"))
        queue = spec.get("queueName")
        if isinstance(queue, str) and queue:
            yield from _subdomain("spec.queueName", queue)


def refusals(data: Mapping[str, Any]) -> list[str]:
    """What the API server would refuse in ``data`` (a JobSet, Job, Deployment or Workload), in
    field order, at most ``LISTED``; empty when it would take it."""
    found: list[str] = []
    kind = str(data.get("kind") or "")
    spec = data.get("spec")
    checks = [_metadata(data.get("metadata"))]
    if isinstance(spec, Mapping):
        checks.append(_by_kind(kind, spec))
    for check in checks:
        for refusal in check:
            found.append(refusal)
            if len(found) == LISTED:
                return found
    return found
