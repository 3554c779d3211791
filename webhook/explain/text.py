"""``explain`` as text for a person at an 80-column terminal.

First line: the job and its state (with the KEP-10852 or preemption reason); then what to
do about it, in a few words; then where
(Workload, ClusterQueue) and since when; then the explanation, one point per bullet,
wrapped; then the quota picture of its cohort as bars (``webhook.explain.bars``), one
table per flavor and resource its ClusterQueue has, its own row marked ``>``. Nothing
exceeds ``width``: long words (UIDs, paths) are broken rather than let through.
"""

from __future__ import annotations

from collections.abc import Sequence

from webhook.explain.bars import LEGEND, WIDTH, table, wrap
from webhook.explain.explainer import Explanation
from webhook.explain.inputs import Amounts, QueueQuota

MARK = "> "


def render_explanation(explanation: Explanation, width: int = WIDTH) -> str:
    """The text of one explanation (see the module)."""
    reason = f" ({explanation.reason})" if explanation.reason else ""
    lines = wrap(f"{explanation.kind} {explanation.namespace}/{explanation.name}: {explanation.state}{reason}", width)
    if explanation.next_step:
        lines += wrap(f"What to do: {explanation.next_step}", width, "  ", "  ")
    where = []
    if explanation.workload:
        where.append(f"Workload {explanation.workload}")
    if explanation.cluster_queue:
        where.append(f"ClusterQueue {explanation.cluster_queue}")
    if explanation.decided.since:
        where.append(f"since {explanation.decided.since}")
    if where:
        lines += wrap(", ".join(where), width, "  ", "  ")
    lines.append("")
    for point in explanation.points:
        lines += wrap(point, width, "  - ", "    ")
    quota = quota_lines(explanation, width)
    if quota:
        lines += ["", *quota]
    return "\n".join(lines) + "\n"


def quota_lines(explanation: Explanation, width: int = WIDTH) -> list[str]:
    """The quota picture of the job's cohort (or its ClusterQueue alone), as tables with bars."""
    picture, own = explanation.quota, explanation.cluster_queue
    if picture is None or own is None or own not in picture.cluster_queues:
        return []
    queue = picture.cluster_queues[own]
    teams: Sequence[QueueQuota] = picture.queues_under(picture.root(queue.cohort)) if queue.cohort else [queue]
    title = f"Quota of cohort {picture.root(queue.cohort)}" if queue.cohort else f"Quota of ClusterQueue {own}"
    lines = wrap(f"{title} ({MARK.strip()} marks {own}):", width)
    for flavor, resources in sorted(queue.flavors.items()):
        for resource in sorted(resources):
            rows: list[tuple[str, Amounts]] = []
            for team in teams:
                amounts = team.flavors.get(flavor, {}).get(resource)
                if amounts is not None:
                    rows.append(((MARK if team.name == own else "  ") + team.name, amounts))
            lines += wrap(f"{flavor} {resource}", width, "  ", "  ")
            lines += table(rows, resource, "    ", width, header="  team")
    lines += wrap(LEGEND, width, "  ", "  ")
    return lines
