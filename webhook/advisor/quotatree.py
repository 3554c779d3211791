"""``tpu-admission quota`` and the advisor's ``quotas``: the cohort tree with every
ClusterQueue's numbers per flavor.

The picture a team admin needs to judge a quota split (RFC-0033's user story): for each
root cohort, its tree (sub-cohorts, then their ClusterQueues) and, per flavor and
resource, every queue's nominal quota, usage, what it borrows and lends now, and what
waits; the limits that bound borrowing and lending are listed under each table.
ClusterQueues in no cohort come last. Pure renderers over a ``QuotaPicture``: text with
bars for 80 columns (``render_quota``) and JSON (``quota_document``), the same tree.
"""

from __future__ import annotations

from typing import Any

from webhook.explain.bars import LEGEND, WIDTH, table, wrap
from webhook.explain.inputs import Amounts, FlavorAmounts, QueueQuota, QuotaPicture
from webhook.explain.result import number
from webhook.kueue.amounts import format_amount

#: a row of the tree: depth, label, its amounts for the table's flavor and resource (``None``:
#: a cohort shown for the queues below it), and the ClusterQueue (``None`` for a cohort)
Row = tuple[int, str, Amounts | None, QueueQuota | None]


def _amounts(flavors: FlavorAmounts, flavor: str, resource: str) -> Amounts | None:
    return flavors.get(flavor, {}).get(resource)


def _rows(picture: QuotaPicture, cohort: str, flavor: str, resource: str, depth: int, seen: set[str]) -> list[Row]:
    """The rows of ``cohort``'s subtree that have this flavor and resource; a cohort row only
    when it has quota of its own or something below it does."""
    if cohort in seen:
        return []
    seen.add(cohort)
    below: list[Row] = []
    for queue in picture.member_queues(cohort):
        amounts = _amounts(queue.flavors, flavor, resource)
        if amounts is not None:
            below.append((depth + 1, queue.name, amounts, queue))
    for child in picture.child_cohorts(cohort):
        below += _rows(picture, child, flavor, resource, depth + 1, seen)
    own = _amounts(picture.cohort(cohort).flavors, flavor, resource)
    return [(depth, f"{cohort}/", own, None), *below] if below or own is not None else []


def _pairs(picture: QuotaPicture, queues: list[QueueQuota], cohorts: list[str]) -> list[tuple[str, str]]:
    flavors = [q.flavors for q in queues] + [picture.cohort(name).flavors for name in cohorts]
    return sorted({(flavor, resource) for each in flavors for flavor in each for resource in each[flavor]})


def _limits(rows: list[Row], resource: str) -> list[str]:
    said = []
    for _, _, amounts, queue in rows:
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


def _table(rows: list[Row], flavor: str, resource: str, width: int) -> list[str]:
    lines = wrap(f"{flavor} {resource}", width, "  ", "  ")
    lines += table([("  " * depth + label, amounts) for depth, label, amounts, _ in rows], resource, "    ", width)
    for line in _limits(rows, resource):
        lines += wrap(line, width, "    ", "      ")
    return lines


def render_quota(picture: QuotaPicture, width: int = WIDTH) -> str:
    """The cohort tree as text (see the module)."""
    lines: list[str] = []
    for root in picture.roots():
        lines += wrap(f"cohort {root}", width)
        cohorts = picture.subtree_cohorts(root)
        for flavor, resource in _pairs(picture, picture.queues_under(root), cohorts):
            lines += _table(_rows(picture, root, flavor, resource, 0, set()), flavor, resource, width)
        lines.append("")
    for queue in picture.standalone():
        lines += wrap(f"ClusterQueue {queue.name} (no cohort)", width)
        for flavor, resource in _pairs(picture, [queue], []):
            amounts = _amounts(queue.flavors, flavor, resource)
            lines += _table([(0, queue.name, amounts, queue)], flavor, resource, width)
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
