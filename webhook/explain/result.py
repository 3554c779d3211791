"""The answer of ``explain`` as SPEC §13 shapes it, for ``--output json`` and the advisor's explanations.

``ExplainResult`` is one ``results`` entry, field for field, camelCase on the wire
(``rename="camel"``); ``document`` wraps results and errors. Quota numbers are JSON
numbers: an integer when the amount is whole (chips, bytes), else a decimal fraction
(``0.5`` CPU), as Kueue prints a quota.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import msgspec

from webhook.explain.inputs import FlavorAmounts
from webhook.simulate.result import Result


class QuotaNumbers(msgspec.Struct, rename="camel"):
    nominal: int | float
    in_use: int | float
    borrowed: int | float
    pending: int | float


class QuotaJson(msgspec.Struct, rename="camel"):
    #: flavor -> resource -> numbers, of the job's ClusterQueue
    cluster_queue: dict[str, dict[str, QuotaNumbers]]
    cohort: str | None


class PreemptorJson(msgspec.Struct, rename="camel"):
    workload: str | None
    job: str | None
    cluster_queue: str | None
    priority: int | None


class ExplainResult(msgspec.Struct, rename="camel", omit_defaults=False):
    kind: str
    namespace: str
    name: str
    workload: str | None
    state: str
    reason: str | None
    since: str | None
    cluster_queue: str | None
    preemptor: PreemptorJson | None
    simulation: dict[str, Any] | None
    quota: QuotaJson | None
    message: str


def number(value: Decimal) -> int | float:
    """A quota amount as a JSON number (see the module)."""
    return int(value) if value == value.to_integral_value() else float(value)


def quota_numbers(flavors: FlavorAmounts) -> dict[str, dict[str, QuotaNumbers]]:
    return {
        flavor: {
            resource: QuotaNumbers(number(a.nominal), number(a.in_use), number(a.borrowed), number(a.pending))
            for resource, a in sorted(resources.items())
        }
        for flavor, resources in sorted(flavors.items())
    }


def document(results: Sequence[ExplainResult], errors: Sequence[str] = ()) -> dict[str, Any]:
    """The whole JSON answer: ``{"results": [...], "errors": [...]}`` as builtins."""
    return {"results": [msgspec.to_builtins(result) for result in results], "errors": list(errors)}


def simulation_json(result: Result | None) -> dict[str, Any] | None:
    """The simulator's answer as SPEC §12 writes it."""
    return result.to_json() if result is not None else None
