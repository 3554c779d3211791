"""The ``[simulate]`` line on the admission path: read, never worked out there.

Working a line out builds the simulator for the snapshot (after a Workload event, a new one)
and searches for preemption: milliseconds to seconds on a large cluster. The admission path
must never wait on it, so ``SimulateLines`` (the engine's ``SimulateLine`` hook) only reads
the line already worked out for the request's snapshot and job shape, a dictionary read.
When there is none the answer goes without it, it is counted
(``tpu_admission_simulate_lines_total{outcome="left_out"}``), and the job is handed to a
thread of its own that works the line out for that snapshot (on the line simulator, which
shares no lock with the advisor's simulations or ``explain``), so the next job of the same shape on
the same snapshot gets it. The hand-over never blocks: the queue is bounded, a job already
queued is not queued twice, one whose line the snapshot's memo would not keep (a shape of
a multi-MB spec) is not queued, and one queued for a snapshot that is no longer the newest
is dropped unworked.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Hashable, Mapping
from typing import Final

from webhook.cluster.memo import MEMO_ENTRY_BYTES
from webhook.cluster.snapshot import Snapshot
from webhook.kube.sizes import weight
from webhook.objects.workload import Workload
from webhook.policy.config import Policy
from webhook.serving.metrics import LabelledCounter
from webhook.simulate.live import kept_line, line_key, warning_line

log = logging.getLogger("tpu_admission.serving")

#: jobs waiting for their line to be worked out, at most; past it a job is left out and not queued
QUEUE_DEPTH: Final = 16
#: seconds the worker waits for a job before it ends (a new one starts with the next job)
IDLE_SECONDS: Final = 30.0

_Job = tuple[Snapshot, Workload, Mapping[str, str], Policy, Hashable | None, Hashable]


class SimulateLines:
    """The server's ``SimulateLine`` hook: the kept line, or ``None`` and the job handed on."""

    def __init__(self, counted: LabelledCounter, depth: int = QUEUE_DEPTH) -> None:
        self.counted = counted
        self.jobs: queue.Queue[_Job] = queue.Queue(maxsize=depth)
        #: (snapshot version, line key) of the jobs queued: one job of a shape per snapshot
        self.queued: set[tuple[int, Hashable]] = set()
        #: the newest snapshot a request read: a job queued for an older one is not worked out
        self.newest: Snapshot | None = None
        self.worker: threading.Thread | None = None

    def __call__(
        self,
        snapshot: Snapshot,
        workload: Workload,
        labels: Mapping[str, str],
        policy: Policy,
        shape: Hashable | None,
    ) -> str | None:
        key = line_key(workload, labels, policy, shape)
        line = kept_line(snapshot, key)
        if line is not None:
            self.counted.inc("read")
            return line or None
        self.counted.inc("left_out")
        if weight(key) > MEMO_ENTRY_BYTES:  # a memo would not keep its line: not worth working out
            return None
        newest = self.newest
        if newest is None or snapshot.version >= newest.version:
            self.newest = snapshot
        queued = (snapshot.version, key)
        if queued not in self.queued:
            try:
                self.jobs.put_nowait((snapshot, workload, dict(labels), policy, shape, key))
            except queue.Full:
                return None
            self.queued.add(queued)
            worker = self.worker
            if worker is None or not worker.is_alive():
                self.worker = threading.Thread(target=self._work, name="simulate-lines", daemon=True)
                self.worker.start()
        return None

    def _work(self) -> None:
        """Work out the queued jobs' lines, newest snapshot only; ends after ``IDLE_SECONDS`` without one."""
        while True:
            try:
                snapshot, workload, labels, policy, shape, key = self.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                return
            try:
                if snapshot is self.newest:
                    warning_line(snapshot, workload, labels, policy, shape)
            except Exception:  # a line is advice: a fault here must not end the worker
                log.exception("could not work out a [simulate] line")
            finally:
                self.queued.discard((snapshot.version, key))
