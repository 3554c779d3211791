"""What the webhook costs a user: ``kubectl apply`` of a JobSet with and without it registered.

    .venv/bin/python bench/kubectl_apply.py [--applies 40] [--rounds 3]

Brings up the end-to-end control plane (tests/e2e/controlplane.py: etcd, kube-apiserver,
our webhook registered through the shipped manifests' overlay) and times
``kubectl apply --dry-run=server`` of RFC-0033 4.6's guaranteed one-slice JobSet, the way
a user runs it: one kubectl process per apply, wall time from start to exit. Rounds
alternate between the webhook's configurations registered and deleted (the API server
then admits without calling anyone), so both are timed on the same machine in the same
minutes. A dry run passes through admission as a create does, and leaves nothing behind.

Prints the median and p90 per apply in each state, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "e2e"), str(ROOT)]

from controlplane import ControlPlane, needs, stop  # noqa: E402

JOBSET = ROOT / "tests" / "fixtures" / "jobsets" / "rfc-4.6-static-single.yaml"
#: the webhook's configurations (the advisor's APIService stays: it is not on the apply path)
HOOK_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def timed_applies(plane: ControlPlane, count: int) -> list[float]:
    """Seconds per ``kubectl apply --dry-run=server``, each its own process, as a user runs it."""
    command = [str(plane.layout.kubectl), "--kubeconfig", str(plane.layout.kubeconfig)]
    command += ["apply", "--dry-run=server", "-f", str(JOBSET)]
    seconds = []
    for _ in range(count):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True, timeout=60)
        seconds.append(time.perf_counter() - started)
    return seconds


def set_registered(plane: ControlPlane, hooks: Path, registered: bool) -> None:
    """Register or delete the webhook's configurations, and wait until the API server follows."""
    if registered:
        plane.kubectl("apply", "-f", str(hooks))
    else:
        plane.kubectl("delete", "-f", str(hooks))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if plane.webhook_called() == registered:
            return
        time.sleep(0.2)
    raise SystemExit(f"the API server did not follow the webhook's {'registration' if registered else 'removal'}")


def p90(figures: list[float]) -> float:
    return sorted(figures)[int(0.9 * (len(figures) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--applies", type=int, default=40, help="applies per state and round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    reason = needs()
    if reason:
        print(reason, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as directory:
        plane = ControlPlane(Path(directory), log=lambda line: None)
        plane.up()
        try:
            documents = yaml.safe_load_all((Path(directory) / "registered.yaml").read_text())
            hooks = Path(directory) / "hooks.json"
            items = [document for document in documents if document["kind"] in HOOK_KINDS]
            hooks.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
            timed: dict[bool, list[float]] = {True: [], False: []}
            timed_applies(plane, 5)  # warm-up: kubectl's discovery cache, the API server's
            for _ in range(args.rounds):
                for registered in (True, False):
                    set_registered(plane, hooks, registered)
                    timed[registered] += timed_applies(plane, args.applies)
            set_registered(plane, hooks, True)
        finally:
            stop(plane.layout)
    print(f"kubectl apply --dry-run=server of {JOBSET.name}: {args.rounds} rounds × {args.applies} applies per state")
    print()
    print("| webhook | median ms | p90 ms |")
    print("| --- | ---: | ---: |")
    for registered, label in ((False, "not registered"), (True, "registered")):
        figures = timed[registered]
        print(f"| {label} | {statistics.median(figures) * 1e3:.0f} | {p90(figures) * 1e3:.0f} |")
    ratio = statistics.median(timed[True]) / statistics.median(timed[False])
    print()
    print(f"median with ÷ without: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
