"""The advisor's worker: one piece of work at a time, a bounded line, deadlines, leavers dropped."""

from __future__ import annotations

import asyncio
import threading

import pytest

from webhook.advisor.workqueue import Busy, TimedOut, WorkQueue


def test_work_runs_one_at_a_time_in_arrival_order() -> None:
    order: list[int] = []
    busy = threading.Lock()

    def work(n: int) -> int:
        assert busy.acquire(blocking=False), "two pieces of work at once"
        try:
            order.append(n)
            threading.Event().wait(0.02)
            return n * n
        finally:
            busy.release()

    async def main() -> list[int]:
        queue = WorkQueue(max_waiting=8, deadline_seconds=10)
        try:
            return list(await asyncio.gather(*(queue.run(lambda n=n: work(n)) for n in range(5))))
        finally:
            queue.close()

    assert asyncio.run(main()) == [0, 1, 4, 9, 16]
    assert order == [0, 1, 2, 3, 4]


def test_a_full_line_is_busy_with_a_retry_after() -> None:
    release = threading.Event()

    async def main() -> Busy:
        queue = WorkQueue(max_waiting=1, deadline_seconds=10)
        try:
            first = asyncio.ensure_future(queue.run(lambda: release.wait(10)))
            second = asyncio.ensure_future(queue.run(lambda: 2))
            await asyncio.sleep(0.05)
            with pytest.raises(Busy) as refused:
                await queue.run(lambda: 3)
            release.set()
            assert (await first, await second) == (True, 2)
            return refused.value
        finally:
            queue.close()

    assert asyncio.run(main()).retry_after >= 1


def test_a_started_piece_keeps_the_worker_past_its_deadline_and_the_next_waits_for_it() -> None:
    release = threading.Event()
    started: list[str] = []

    def slow() -> str:
        started.append("slow")
        release.wait(10)
        return "slow"

    async def main() -> None:
        queue = WorkQueue(max_waiting=2, deadline_seconds=0.2)
        try:
            with pytest.raises(TimedOut):
                await queue.run(slow)  # its answer is late; the work itself goes on
            waiting = asyncio.ensure_future(queue.run(lambda: started.append("next")))
            with pytest.raises(TimedOut):
                await waiting  # never got the worker within its own deadline: dropped unrun
            assert (started, queue.dropped) == (["slow"], 1)
            release.set()
            while queue.finished < 1:
                await asyncio.sleep(0.01)
            queue.deadline_seconds = 10
            await queue.run(lambda: started.append("after"))
            assert started == ["slow", "after"]
        finally:
            queue.close()

    asyncio.run(main())


def test_a_cancelled_waiter_never_runs() -> None:
    release = threading.Event()
    ran: list[str] = []

    async def main() -> None:
        queue = WorkQueue(max_waiting=2, deadline_seconds=10)
        try:
            first = asyncio.ensure_future(queue.run(lambda: release.wait(10)))
            await asyncio.sleep(0.05)
            leaver = asyncio.ensure_future(queue.run(lambda: ran.append("leaver")))
            await asyncio.sleep(0.05)
            leaver.cancel()  # its client has gone
            release.set()
            await first
            await queue.run(lambda: ran.append("next"))
            assert (ran, queue.dropped, queue.waiting) == (["next"], 1, 0)
        finally:
            queue.close()

    asyncio.run(main())
