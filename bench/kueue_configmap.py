"""A megabyte of Kueue's ConfigMap on the admin guard: the time to judge it, in process.

    .venv/bin/python bench/kueue_configmap.py [--rounds 3]

RFC-0033's Configuration grown to about 1 MB (the most a ConfigMap holds) in two shapes:
60,000 values of a namespace selector (valid; one long list), and 50,000 unknown feature
gates (each a problem). Each is judged as an UPDATE on ``/validate-kueue`` would judge it
(``decide_kueue`` against the RFC cluster), and the median printed. The API server's
timeout for the webhook is 5 s.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from admin_fixtures import cluster_state, label, rfc_objects  # noqa: E402
from kueue_cache import cache_of  # noqa: E402

from webhook.admin.admission import KueueRequest, decide_kueue  # noqa: E402
from webhook.admin.catalog import policy_from_mapping  # noqa: E402

KEY = "controller_manager_config.yaml"
SHAPES = {
    "60,000 selector values": "managedJobsNamespaceSelector:\n  matchExpressions:\n  - key: team\n    operator: In\n"
    "    values:\n" + "".join(f"    - team-{i:07d}\n" for i in range(60_000)),
    "50,000 unknown feature gates": "featureGates:\n" + "".join(f"  Gate{i:07d}: true\n" for i in range(50_000)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    policy = policy_from_mapping({"mode": "dynamic"})
    objects = rfc_objects("dynamic")
    store = cache_of([*objects, *cluster_state("dynamic")], policy)
    config_map = next(o for o in objects if label(o) == "Configuration")
    print(f"## A megabyte of Kueue's ConfigMap on /validate-kueue ({args.rounds} rounds)\n")
    print("| shape | MB | findings | median s |")
    print("| --- | ---: | ---: | ---: |")
    for name, extra in SHAPES.items():
        big = copy.deepcopy(config_map)
        big["data"][KEY] += extra
        request = KueueRequest("UPDATE", "kueue-system", big, config_map)
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            decision = decide_kueue(request, policy, store)
            times.append(time.perf_counter() - started)
        size = len(big["data"][KEY]) / 1e6
        print(f"| {name} | {size:.2f} | {len(decision.findings)} | {statistics.median(times):.2f} |")


if __name__ == "__main__":
    main()
