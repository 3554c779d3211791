"""The buffered JSON log: what is written when, and the decision log's shortcut."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import msgspec
import pytest

from webhook.serving import logsink
from webhook.serving.logsink import BufferedJsonHandler, DecisionLog


class Stream(io.StringIO):
    """A text stream with a binary ``buffer``, like ``sys.stderr``."""

    def __init__(self) -> None:
        super().__init__()
        self.buffer = io.BytesIO()

    def lines(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.buffer.getvalue().decode().splitlines()]


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    """A private logger (no propagation), so the test's handler is the only one."""
    log = logging.getLogger("tpu_admission.test-logsink")
    log.propagate = False
    log.setLevel(logging.INFO)
    yield log
    for handler in log.handlers:
        handler.close()
    log.handlers.clear()


def test_lines_wait_for_the_interval(logger: logging.Logger) -> None:
    stream = Stream()
    logger.addHandler(BufferedJsonHandler(stream, interval=0.05))
    logger.info({"msg": "decision", "uid": "a"})
    assert stream.lines() == []  # buffered, not written by the request
    deadline = time.monotonic() + 5
    while not stream.lines() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream.lines() == [{"msg": "decision", "uid": "a"}]


def test_a_warning_writes_everything_before_it_at_once(logger: logging.Logger) -> None:
    stream = Stream()
    logger.addHandler(BufferedJsonHandler(stream, interval=60))
    logger.info({"msg": "decision", "uid": "a"})
    logger.warning("certificate reload failed")
    assert stream.lines() == [
        {"msg": "decision", "uid": "a"},
        {"level": "warning", "logger": "tpu_admission.test-logsink", "msg": "certificate reload failed"},
    ]


def test_a_full_buffer_is_written_by_whoever_filled_it(logger: logging.Logger) -> None:
    stream = Stream()
    size = len(json.dumps({"msg": "decision", "pad": "x" * 100, "n": 0}, separators=(",", ":"))) + 1
    logger.addHandler(BufferedJsonHandler(stream, capacity=10 * size - 1, interval=60))
    for n in range(9):
        logger.info({"msg": "decision", "pad": "x" * 100, "n": n})
    assert stream.lines() == []  # nine lines: under the capacity
    logger.info({"msg": "decision", "pad": "x" * 100, "n": 9})
    assert [line["n"] for line in stream.lines()] == list(range(10))


def test_close_writes_what_is_left(logger: logging.Logger) -> None:
    stream = Stream()
    handler = BufferedJsonHandler(stream, interval=60)
    logger.addHandler(handler)
    logger.info({"msg": "decision", "uid": "last"})
    handler.close()
    assert stream.lines() == [{"msg": "decision", "uid": "last"}]


def test_exceptions_are_one_line_with_the_traceback(logger: logging.Logger) -> None:
    stream = Stream()
    logger.addHandler(BufferedJsonHandler(stream, interval=60))
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("internal error judging %s", "u1")
    (line,) = stream.lines()
    assert line["level"] == "error" and line["msg"] == "internal error judging u1"
    assert "ValueError: boom" in str(line["exc"])


def test_a_lone_surrogate_does_not_lose_the_line(logger: logging.Logger) -> None:
    stream = Stream()
    logger.addHandler(BufferedJsonHandler(stream, interval=60))
    logger.warning({"msg": "decision", "uid": "\ud800"})
    assert stream.lines() == [{"msg": "decision", "uid": "\ud800"}]


@contextmanager
def serve_logging(handler: BufferedJsonHandler) -> Iterator[None]:
    """``serve``'s logging setup around ``handler`` (closed at the end); the root logger restored after."""
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logsink._direct
    try:
        logsink.install(handler, "info")
        yield
    finally:
        handler.close()
        root.handlers[:], level, logsink._direct = saved
        root.setLevel(level)


class _Line(msgspec.Struct, rename="camel", gc=False):
    """A decision line as a struct, as the server writes it (``server.DecisionLine``)."""

    uid: str
    dry_run: bool
    big: int


@pytest.mark.parametrize(
    "entry",
    [
        {"msg": "decision", "uid": "u", "allowed": True, "rules": [], "big": 2**70, "name": "é"},
        _Line("u", True, 2**70),
    ],
    ids=["dict", "struct"],
)
def test_the_decision_shortcut_writes_the_same_bytes_as_logging(entry: Any) -> None:
    """``serve``'s setup: the direct path and the logging path produce identical lines."""
    written = []
    for direct in (True, False):
        stream = Stream()
        with serve_logging(BufferedJsonHandler(stream, interval=60)):
            if not direct:
                logsink._direct = None
            DecisionLog().write(entry)
        written.append(stream.buffer.getvalue())
    assert written[0] == written[1]
    assert json.loads(written[0]) == msgspec.to_builtins(entry)


def test_a_struct_line_with_a_lone_surrogate_is_escaped_not_lost() -> None:
    stream = Stream()
    with serve_logging(BufferedJsonHandler(stream, interval=60)):
        DecisionLog().write(_Line("\ud800", False, 1))
        DecisionLog().write(_Line("2", False, 2))
    assert stream.lines() == [{"uid": "\ud800", "dryRun": False, "big": 1}, {"uid": "2", "dryRun": False, "big": 2}]


def test_the_shortcut_steps_aside_for_another_handler(caplog: pytest.LogCaptureFixture) -> None:
    """A handler added after ``serve``'s (pytest's capture here) sees every decision as a record."""
    stream = Stream()
    with serve_logging(BufferedJsonHandler(stream, interval=60)):
        logging.getLogger().addHandler(caplog.handler)
        DecisionLog().write({"msg": "decision", "uid": "seen"})
    assert [r.msg for r in caplog.records] == [{"msg": "decision", "uid": "seen"}]
    assert json.loads(stream.buffer.getvalue()) == {"msg": "decision", "uid": "seen"}


def test_decision_lines_are_encoded_in_order_with_other_records_and_a_lone_surrogate_kept() -> None:
    """Decision lines are encoded as they come and go out in one write; order and odd text survive."""
    stream = Stream()
    with serve_logging(BufferedJsonHandler(stream, interval=60)):
        DecisionLog().write({"msg": "decision", "uid": "1"})
        DecisionLog().write({"msg": "decision", "uid": "\ud800"})  # msgspec refuses it; escaped instead
        logging.getLogger("tpu_admission.test-logsink-order").info("between")
        DecisionLog().write({"msg": "decision", "uid": "3"})
        assert stream.lines() == []  # nothing written yet: all of it waits for the interval
    assert [line.get("uid", line["msg"]) for line in stream.lines()] == ["1", "\ud800", "between", "3"]


def test_decision_lines_count_their_encoded_size_and_newline_against_the_capacity() -> None:
    stream = Stream()
    line = len(b'{"msg":"decision","n":0}\n')
    with serve_logging(BufferedJsonHandler(stream, capacity=3 * line, interval=60)):
        for n in range(2):
            DecisionLog().write({"msg": "decision", "n": n})
        assert stream.lines() == []
        DecisionLog().write({"msg": "decision", "n": 2})  # the third fills it: written by this request
        assert [line["n"] for line in stream.lines()] == [0, 1, 2]


def test_lines_appended_while_the_flusher_writes_are_neither_lost_nor_reordered() -> None:
    """The request appends without a lock while the flusher empties the buffer every
    millisecond and a logging thread adds records of its own: every line arrives, each
    writer's in its order."""
    stream = Stream()
    handler = BufferedJsonHandler(stream, capacity=16 * 1024, interval=0.001)
    other = logging.getLogger("tpu_admission.test-logsink-race")

    def log_from_a_thread() -> None:
        for n in range(2_000):
            other.info("record %d", n)

    with serve_logging(handler):
        thread = threading.Thread(target=log_from_a_thread)
        thread.start()
        for n in range(20_000):
            DecisionLog().write({"msg": "decision", "n": n})
        thread.join()
    lines = stream.lines()
    assert [line["n"] for line in lines if "n" in line] == list(range(20_000))
    assert [line["msg"] for line in lines if "n" not in line] == [f"record {n}" for n in range(2_000)]
