"""``tpu-admission quota``: the cohort tree with every ClusterQueue's numbers per flavor.

The picture a team admin needs to judge a quota split (RFC-0033's user story): for each
root cohort, its tree (sub-cohorts, then their ClusterQueues) and, per flavor and
resource, every queue's nominal quota, usage, what it borrows and lends now, and what
waits; the limits that bound borrowing and lending are listed under each table.
ClusterQueues in no cohort come last. Pure renderers over a ``QuotaPicture``: text with
bars for 80 columns (``render_quota``) and JSON (``quota_document``), the same tree.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from webhook.explain.bars import LEGEND, WIDTH, table, wrap
from webhook.explain.inputs import Amounts, FlavorAmounts, QueueQuota, QuotaPicture
from webhook.explain.result import number
from webhook.quota.amounts import format_amount

#: a row of the tree: depth, label, the amounts per flavor and resource
Row = tuple[int, str, FlavorAmounts, QueueQuota | None]


def _tree(picture: QuotaPicture, cohort: str, depth: int, seen: set[str]) -> Iterator[Row]:
    if cohort in seen:
        return
    seen.add(cohort)
    yield depth, f"{cohort}/", picture.cohort(cohort).flavors, None
    for queue in picture.member_queues(cohort):
        yield depth + 1, queue.name, queue.flavors, queue
    for child in picture.child_cohorts(cohort):
        yield from _tree(picture, child, depth + 1, seen)


def _pairs(rows: list[Row]) -> list[tuple[str, str]]:
    return sorted(
        {(flavor, resource) for _, _, flavors, _ in rows for flavor in flavors for resource in flavors[flavor]}
    )


def _limits(rows: list[Row], flavor: str, resource: str) -> list[str]:
    said = []
    for _, _, flavors, queue in rows:
        amounts = flavors.get(flavor, {}).get(resource)
        if queue is None or amounts is None:
            continue
        parts = []
        if amounts.borrowing_limit is not None:
            parts.append(f"borrows at most {format_amount(amounts.borrowing_limit, resource)}")
        if amounts.lending_limit is not None:
            parts.append(f"lends at most {format_amount(amounts.lending_limit, resource)}")
        if parts:
            said.append(f"{queue.name} {' and '.join(parts)}")
    return [f"limits: {'; '.join(said)}"] if said else []


def _section(title: str, rows: list[Row], width: int) -> list[str]:
    lines = wrap(title, width)
    for flavor, resource in _pairs(rows):
        lines += wrap(f"{flavor} {resource}", width, "  ", "  ")
        shown: list[tuple[str, Amounts | None]] = [
            ("  " * depth + label, flavors.get(flavor, {}).get(resource)) for depth, label, flavors, _ in rows
        ]
        lines += table(shown, resource, "  ", width)
        for line in _limits(rows, flavor, resource):
            lines += wrap(line, width, "  ", "    ")
    if not _pairs(rows):
        lines += wrap("no quota", width, "  ", "  ")
    return lines


def render_quota(picture: QuotaPicture, width: int = WIDTH) -> str:
    """The cohort tree as text (see the module)."""
    lines: list[str] = []
    for root in picture.roots():
        lines += _section(f"cohort {root}", list(_tree(picture, root, 0, set())), width)
        lines.append("")
    for queue in picture.standalone():
        lines += _section(f"ClusterQueue {queue.name} (no cohort)", [(0, queue.name, queue.flavors, queue)], width)
        lines.append("")
    if not lines:
        return "no ClusterQueues\n"
    lines += wrap(LEGEND, width)
    return "\n".join(lines) + "\n"


def _amounts_json(amounts: Amounts) -> dict[str, Any]:
    return {
        "nominal": number(amounts.nominal),
        "inUse": number(amounts.in_use),
        "borrowed": number(amounts.borrowed),
        "lent": number(amounts.lent),
        "pending": number(amounts.pending),
        "borrowingLimit": number(amounts.borrowing_limit) if amounts.borrowing_limit is not None else None,
        "lendingLimit": number(amounts.lending_limit) if amounts.lending_limit is not None else None,
    }


def _flavors_json(flavors: FlavorAmounts) -> dict[str, dict[str, dict[str, Any]]]:
    return {
        flavor: {resource: _amounts_json(a) for resource, a in sorted(resources.items())}
        for flavor, resources in sorted(flavors.items())
    }


def _queue_json(queue: QueueQuota) -> dict[str, Any]:
    return {"name": queue.name, "flavors": _flavors_json(queue.flavors)}


def _cohort_json(picture: QuotaPicture, cohort: str, seen: set[str]) -> dict[str, Any]:
    seen.add(cohort)
    return {
        "name": cohort,
        "flavors": _flavors_json(picture.cohort(cohort).flavors),
        "clusterQueues": [_queue_json(q) for q in picture.member_queues(cohort)],
        "cohorts": [_cohort_json(picture, child, seen) for child in picture.child_cohorts(cohort) if child not in seen],
    }


def quota_document(picture: QuotaPicture) -> dict[str, Any]:
    """The cohort tree as JSON: ``{"cohorts": [tree], "clusterQueues": [queues in no cohort]}``."""
    return {
        "cohorts": [_cohort_json(picture, root, set()) for root in picture.roots()],
        "clusterQueues": [_queue_json(q) for q in picture.standalone()],
    }
