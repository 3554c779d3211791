"""Per-kind "can this piece of state be trusted now?", and why not.

Unknown is not zero (DD-0018): a kind that has not finished its first list, is
forbidden (403), is not served (404, its CRD is not installed), whose watch has been
broken for longer than the staleness bound, or whose watch has been *silent* (no event,
no bookmark) for longer than the silence bound is *unavailable*, and every rule that
reads it is skipped with the reason instead of judging against an empty cluster.

Silence matters because an open watch proves nothing by itself: a hung API server
(SIGSTOP, a wedged etcd) keeps the TCP connection open and sends nothing. The API
server sends a bookmark on every open watch about once a minute, so a kind that heard
nothing for two bookmark intervals is unknown until an event, a bookmark or a list
(or a watch the API server accepts) proves it current again.

A snapshot of the cluster (``webhook.cluster.snapshot``) captures every kind's answer
once (``capture``), with the moment the clock alone could change one of them: the
earliest silence or staleness deadline over the kinds, or, while a kind's reason counts
the seconds it has been silent or stale, a second later. Any other change of state (a
list, a broken or resumed watch) moves ``changes``, and the snapshot is captured again.
Events and bookmarks move the deadlines later, which changes nothing captured, except
for a kind that was silent: it can be read again, a change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: how long a reason that counts seconds (silent, stale) is kept before it is worded again
_RECOUNT = 1.0
_FOREVER = float("inf")


@dataclass(slots=True)
class KindStatus:
    synced: bool = False
    #: monotonic time of the last completed list
    synced_at: float | None = None
    #: monotonic time of the last event (or bookmark) applied
    last_event: float | None = None
    #: monotonic time of the last proof the cache is current: an event, a bookmark or a list
    last_heard: float | None = None
    #: the watch is open and healthy
    connected: bool = False
    #: since when the kind is not connected (``None`` while connected)
    broken_since: float | None = None
    #: the last error, in words
    error: str | None = None
    #: the error is a verdict (403, 404), not a hiccup: unknown at once, no grace period
    fatal: bool = False
    #: a fixed reason (state files without this kind); overrides everything else
    absent: str | None = None


class Availability:
    def __init__(
        self,
        kinds: Iterable[str],
        stale_after: float,
        clock: Callable[[], float] = time.monotonic,
        silent_after: float | None = None,
    ) -> None:
        self.stale_after = stale_after
        #: ``None`` for sources that are never silent (state files); else two bookmark intervals
        self.silent_after = silent_after
        self.clock = clock
        self._lock = threading.Lock()
        now = clock()
        self.status: dict[str, KindStatus] = {kind: KindStatus(broken_since=now) for kind in kinds}
        #: bumped by every change of state but events and bookmarks
        self.changes = 0

    def _changed(self) -> None:
        """A change of state: whatever was captured before it is captured again (called under ``_lock``)."""
        self.changes += 1

    def capture(self) -> tuple[int, dict[str, str], float]:
        """(``changes``, each kind that cannot be read with the reason, until when the clock alone
        leaves that answer standing)."""
        changes = self.changes
        now = self.clock()
        reasons: dict[str, str] = {}
        until = _FOREVER
        for kind, status in self.status.items():
            why = self.reason(kind)
            if why is not None:
                reasons[kind] = why
                if status.absent is None and status.synced and not (status.fatal and status.error):
                    until = min(until, now + _RECOUNT)  # silent or stale: its reason counts seconds
                continue
            if self.silent_after is not None and status.last_heard is not None:
                until = min(until, status.last_heard + self.silent_after)
            if not status.connected and status.broken_since is not None:
                until = min(until, status.broken_since + self.stale_after)
        return changes, reasons, until

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
        silent = self._silent_for(status)
        if silent is not None:
            detail = f"; last error: {status.error}" if status.error and not status.connected else ""
            return (
                f"silent: no event or bookmark for {silent:.0f}s (bound {self.silent_after:.0f}s), "
                f"the API server may be hung{detail}"
            )
        if status.connected or status.broken_since is None:
            return None
        broken_for = self.clock() - status.broken_since
        if broken_for <= self.stale_after:
            return None
        detail = f": {status.error}" if status.error else ""
        return f"stale: watch broken for {broken_for:.0f}s (bound {self.stale_after:.0f}s){detail}"

    def _silent_for(self, status: KindStatus) -> float | None:
        """Seconds without a word from the API server, when over the silence bound."""
        if self.silent_after is None or status.last_heard is None:
            return None
        silent = self.clock() - status.last_heard
        return silent if silent > self.silent_after else None

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
        silent = self._silent_for(status)
        if silent is not None:
            return silent
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
            now = self.clock()
            status.synced, status.synced_at, status.last_heard, status.error, status.fatal = True, now, now, None, False
            self._changed()

    def watching(self, kind: str) -> None:
        """The API server accepted a watch from the last version seen: it is alive, nothing was
        lost up to that version (else 410), and whatever it refused before (403, 404) it serves now."""
        with self._lock:
            status = self.status[kind]
            status.connected, status.broken_since, status.error, status.fatal = True, None, None, False
            status.last_heard = self.clock()
            self._changed()

    def event(self, kind: str) -> None:
        status = self.status[kind]
        status.last_event = self._heard(status)

    def bookmark(self, kind: str) -> None:
        """A bookmark: nothing changed, and the API server said so (not an event for the gauge)."""
        self._heard(self.status[kind])

    def _heard(self, status: KindStatus) -> float:
        """The API server spoke for the kind: a kind that was silent can be read again (a change)."""
        now = self.clock()
        last, bound = status.last_heard, self.silent_after
        was_silent = last is not None and bound is not None and now - last > bound
        status.last_heard = now
        if was_silent:
            with self._lock:
                self._changed()
        return now

    def broken(self, kind: str, error: str | None, fatal: bool = False) -> None:
        with self._lock:
            status = self.status[kind]
            if status.connected or status.broken_since is None:
                status.broken_since = self.clock()
            status.connected = False
            status.fatal = fatal
            if error is not None:
                status.error = error
            self._changed()

    def mark_absent(self, kind: str, reason: str) -> None:
        with self._lock:
            self.status[kind].absent = reason
            self._changed()

    def mark_synced(self, kind: str) -> None:
        """A static source (state files): synced once, never stale."""
        with self._lock:
            status = self.status[kind]
            status.synced, status.synced_at, status.connected, status.broken_since = True, self.clock(), True, None
            status.absent = None
            self._changed()
