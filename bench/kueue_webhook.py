"""What the admin guard costs on the webhook at scale: 1,000 ClusterQueues, 5,000 Nodes.

    python bench/kueue_webhook.py [--queues 1000] [--nodes 5000] [--rounds 20]

The objects are ``bench/lint_queues.py``'s (RFC-0033-shaped queues, flavors, priorities,
Topology, slice check, Configuration, Namespaces and tpu7x Nodes with every partition
label), put into a ``ClusterStore`` as the watch cache holds them. In process, medians of
``--rounds``:

(``tests/kueue_cache.py``'s ``cache_of``: the kinds with objects synced, the rest unknown)

- **rebuild**: the judged set made from the snapshot's kept documents (after a change of a
  kept object or of a kind's availability; requests between changes share it, Workload and
  Node events included);
- **decide**: one ``/validate-kueue`` decision on one ClusterQueue, judged against every
  other: a CREATE, an UPDATE that is admitted, and an UPDATE past the chips (refused; the
  old object is judged too, to tell what the edit broke);
- **event**: one watch event on a ClusterQueue (a status-only one, and a spec change).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

from kueue_cache import cache_of  # noqa: E402
from lint_queues import queues, state  # noqa: E402

from webhook.admin.admission import KueueRequest, decide_kueue  # noqa: E402
from webhook.admin.live import judged_set  # noqa: E402
from webhook.cluster import kinds as k  # noqa: E402
from webhook.policy.config import Policy  # noqa: E402


def median_ms(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    policy = Policy(mode="dynamic")
    chips = args.nodes * 4 // args.queues
    objects = [*queues(args.queues, chips), *state(args.nodes)]
    store = cache_of(objects, policy)
    team = copy.deepcopy(next(o for o in objects if o["kind"] == "ClusterQueue"))
    raised = copy.deepcopy(team)
    raised["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = chips + 4
    kept = copy.deepcopy(team)
    kept["metadata"]["labels"] = {"owner": "team-0000"}

    def rebuild() -> None:
        snapshot = store.snapshot()
        snapshot.documents.memo.answers.clear()  # the benchmark prices the rebuild itself
        snapshot.documents.memo.bytes = 0
        judged_set(snapshot)

    rows = [("rebuild the judged set", median_ms(rebuild, max(3, args.rounds // 4)))]
    judged_set(store.snapshot())
    for name, request in (
        ("decide: CREATE", KueueRequest("CREATE", "", team)),
        ("decide: UPDATE, admitted", KueueRequest("UPDATE", "", kept, team)),
        ("decide: UPDATE past the chips, refused", KueueRequest("UPDATE", "", raised, team)),
    ):
        decision = decide_kueue(request, policy, store)
        rows.append((f"{name} ({'allowed' if decision.allowed else 'denied'})", median_ms(
            lambda r=request: decide_kueue(r, policy, store), args.rounds)))  # fmt: skip
    status = copy.deepcopy(team)
    status["status"] = {"admittedWorkloads": 1}
    rows.append(("event: status-only", median_ms(lambda: store.apply(k.CLUSTER_QUEUES, "MODIFIED", status), 200)))
    flip = [raised, team]
    rows.append(("event: spec change", median_ms(lambda: store.apply(
        k.CLUSTER_QUEUES, "MODIFIED", flip.append(flip.pop(0)) or flip[0]), 200)))  # fmt: skip
    print(f"{args.queues} ClusterQueues, {args.nodes} Nodes, dynamic mode; medians")
    print("| step | ms |")
    print("| --- | ---: |")
    for name, ms in rows:
        print(f"| {name} | {ms:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
