"""Per-kind "can this piece of state be trusted now?", and why not.

Unknown is not zero (DD-0018, SPEC §5): a kind that has not finished its first list, is
forbidden (403), is not served (404, its CRD is not installed) or whose watch has been
broken for longer than the staleness bound is *unavailable*, and every rule that reads
it is skipped with the reason instead of judging against an empty cluster.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(slots=True)
class KindStatus:
    synced: bool = False
    #: monotonic time of the last completed list
    synced_at: float | None = None
    #: monotonic time of the last event (or bookmark) applied
    last_event: float | None = None
    #: the watch is open and healthy
    connected: bool = False
    #: since when the kind is not connected (``None`` while connected)
    broken_since: float | None = None
    #: the last error, in words
    error: str | None = None
    #: the error is a verdict (403, 404), not a hiccup: unknown at once, no grace period
    fatal: bool = False
    #: a fixed reason (snapshot without this kind); overrides everything else
    absent: str | None = None


class Availability:
    def __init__(self, kinds: Iterable[str], stale_after: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.stale_after = stale_after
        self.clock = clock
        self._lock = threading.Lock()
        now = clock()
        self.status: dict[str, KindStatus] = {kind: KindStatus(broken_since=now) for kind in kinds}

    def reason(self, kind: str) -> str | None:
        """``None`` when the kind can be read, else why not."""
        status = self.status.get(kind)
        if status is None:
            return "not watched"
        if status.absent is not None:
            return status.absent
        if not status.synced:
            return status.error or "not synced yet (initial list in progress)"
        if status.fatal and status.error:
            return status.error
        if status.connected or status.broken_since is None:
            return None
        broken_for = self.clock() - status.broken_since
        if broken_for <= self.stale_after:
            return None
        detail = f": {status.error}" if status.error else ""
        return f"stale: watch broken for {broken_for:.0f}s (bound {self.stale_after:.0f}s){detail}"

    def unavailable(self, kinds: Iterable[str]) -> dict[str, str]:
        out = {}
        for kind in kinds:
            why = self.reason(kind)
            if why is not None:
                out[kind] = why
        return out

    def age(self, kind: str) -> float | None:
        """Seconds since the kind was last known to be current; ``None`` if never synced."""
        status = self.status[kind]
        if not status.synced or status.absent is not None:
            return None
        if status.connected:
            return 0.0
        since = status.broken_since if status.broken_since is not None else status.synced_at
        return max(0.0, self.clock() - since) if since is not None else None

    def since_event(self, kind: str) -> float | None:
        """Seconds since the last watch event of the kind; ``None`` before the first one.

        A watch can be open and silent; this shows how long it has been silent.
        """
        last = self.status[kind].last_event
        return None if last is None else max(0.0, self.clock() - last)

    # transitions, called by the sources

    def listed(self, kind: str) -> None:
        with self._lock:
            status = self.status[kind]
            status.synced, status.synced_at, status.error, status.fatal = True, self.clock(), None, False

    def watching(self, kind: str) -> None:
        with self._lock:
            status = self.status[kind]
            status.connected, status.broken_since = True, None

    def event(self, kind: str) -> None:
        self.status[kind].last_event = self.clock()

    def broken(self, kind: str, error: str | None, fatal: bool = False) -> None:
        with self._lock:
            status = self.status[kind]
            if status.connected or status.broken_since is None:
                status.broken_since = self.clock()
            status.connected = False
            status.fatal = fatal
            if error is not None:
                status.error = error

    def mark_absent(self, kind: str, reason: str) -> None:
        self.status[kind].absent = reason

    def mark_synced(self, kind: str) -> None:
        """A static source (snapshot): synced once, never stale."""
        status = self.status[kind]
        status.synced, status.synced_at, status.connected, status.broken_since = True, self.clock(), True, None
