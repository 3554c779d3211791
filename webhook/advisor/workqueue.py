"""One piece of advisory work at a time, behind a queue with a bound and a deadline.

Simulations and explanations are CPU work in Python: two at once only share the core.
The advisor runs them one at a time in a thread of its own, so its event loop keeps
answering probes, discovery and refusals meanwhile. In front of that worker:

- a bound on the requests waiting: one more gets ``Busy`` (the app answers ``429`` with
  ``Retry-After``) instead of a place in an ever longer line;
- a deadline per request, from its arrival: a request still waiting then is dropped
  (``TimedOut``, ``504``) and never runs;
- a request whose client has gone is dropped the same way (the caller cancels it):
  nobody would read its answer.

Work that has started runs to its end (a Python thread cannot be stopped from outside),
and the worker stays taken until it does: the next request starts only then. Its
client, or its deadline, still gets an answer without waiting for it.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class Busy(Exception):
    """The queue is full; ``retry_after`` seconds is a fair wait before asking again."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the advisor is busy ({retry_after} s)")
        self.retry_after = retry_after


class TimedOut(Exception):
    """The request's deadline passed before its answer was ready."""


class WorkQueue:
    def __init__(self, max_waiting: int, deadline_seconds: float) -> None:
        if max_waiting < 0 or deadline_seconds <= 0:
            raise ValueError("max_waiting must be >= 0 and deadline_seconds > 0")
        self.max_waiting = max_waiting
        self.deadline_seconds = deadline_seconds
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="tpu-admission-advisor")
        self._turn = asyncio.Lock()  # FIFO: waiters are woken in arrival order
        self.waiting = 0
        #: pieces of work finished (run to their end), for tests and logs
        self.finished = 0
        self.dropped = 0

    def retry_after(self) -> int:
        """A wait that the requests ahead may be done by: each may take its whole deadline."""
        return max(1, math.ceil(self.deadline_seconds * (self.waiting + 1) / (self.max_waiting + 1)))

    async def run(self, work: Callable[[], T]) -> T:
        """``work()``'s value, run in the worker when its turn comes; ``Busy``, ``TimedOut``,
        or ``asyncio.CancelledError`` when the caller is cancelled (its client gone)."""
        if self.waiting >= self.max_waiting and self._turn.locked():
            raise Busy(self.retry_after())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.deadline_seconds
        self.waiting += 1
        try:
            async with asyncio.timeout_at(deadline):
                await self._turn.acquire()
        except TimeoutError:
            self.dropped += 1
            raise TimedOut() from None
        except asyncio.CancelledError:
            self.dropped += 1
            raise
        finally:
            self.waiting -= 1
        # The turn is ours until the thread ends, whatever happens to this request.
        try:
            future = self._executor.submit(work)
        except BaseException:
            self._turn.release()
            raise

        def done(_: object) -> None:
            self.finished += 1
            self._turn.release()

        future.add_done_callback(lambda f: loop.call_soon_threadsafe(done, f))
        try:
            async with asyncio.timeout_at(deadline):
                return await asyncio.shield(asyncio.wrap_future(future))
        except TimeoutError:
            raise TimedOut() from None

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
