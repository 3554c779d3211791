"""The server's log: JSON lines on stderr, written in batches off the request path.

A decision line is a msgspec struct (or a dict), encoded with one msgspec call as it is
appended; other records are encoded as they come. The buffer is a deque of encoded
lines that writers append to without a lock (an append is atomic) and that is emptied
from the other end under the write lock, so a request never waits for the flusher.

Lines are encoded at the append rather than at the write: a buffer of structs would
keep each request's strings and lists alive until the write, and the write, encoding a
whole batch at once, would hold the event loop for longer.

The buffer is written:

- every ``interval`` seconds (0.1 s) by a background thread, so a request never waits
  for a ``write(2)``;
- as soon as it holds ``capacity`` bytes (64 KiB), by whoever filled it;
- at once for a record of level WARNING or worse (and everything before it), so
  trouble is never left sitting in memory;
- at shutdown (``logging.shutdown`` runs at interpreter exit, after the drain).

What a SIGKILL (or an OOM kill) can lose: the lines logged since the last write, that
is at most the last ~0.1 s of decisions and never more than 64 KiB of lines (about 190
decision lines of the usual size). Warnings and errors are never among them. SIGTERM
loses nothing.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from typing import IO, Any, Final, TypeAlias

import msgspec

from webhook.wire.jsonwire import encode

#: the logger the decision lines go through (``--log-level warning`` turns them off); each
#: line names it as ``json_line`` names a record's, so every line has level, logger and msg
DECISION_LOGGER: Final = "tpu_admission.decision"

CAPACITY = 64 * 1024
INTERVAL = 0.1

#: a decision line not yet encoded: a struct (the server's ``DecisionLine``) or a dict
Entry: TypeAlias = "msgspec.Struct | dict[str, Any]"

#: the handler ``serve`` installed, which decision lines may be handed to directly
_direct: BufferedJsonHandler | None = None


def install(handler: BufferedJsonHandler, level: str) -> None:
    """Make ``handler`` the root logger's only handler, and the decision log's shortcut."""
    global _direct
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    _direct = handler


class DecisionLog:
    """The one JSON line per decision, on the ``tpu_admission.decision`` logger.

    Building a ``LogRecord`` and walking the logger hierarchy cost more than encoding the
    line. When the handler ``serve`` installed is the only place the line can go (no
    handler or filter added on the way, as a test's log capture would), the dict is
    handed to it directly; otherwise it goes through ``logging`` as usual and the same
    handler encodes it to the same bytes.
    """

    def __init__(self, name: str = DECISION_LOGGER) -> None:
        self.logger = logging.getLogger(name)
        self._root = logging.getLogger()

    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)

    def write(self, entry: Entry) -> None:
        sink = _direct
        logger, root = self.logger, self._root
        if (
            sink is not None
            and not logger.handlers
            and not logger.filters
            and logger.propagate
            and not root.filters
            and len(root.handlers) == 1
            and root.handlers[0] is sink
        ):
            sink.add_entry(entry)
        else:  # whoever else reads the record gets a dict, as from any structured log line
            logger.info(entry if isinstance(entry, dict) else msgspec.to_builtins(entry))


def json_line(record: logging.LogRecord, formatter: logging.Formatter) -> bytes:
    """One log record as one JSON line (bytes, without the newline the write adds)."""
    if isinstance(record.msg, dict):  # the decision line: already structured
        return encode(record.msg)
    entry = {"level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
    if record.exc_info:
        entry["exc"] = formatter.formatException(record.exc_info)
    return json.dumps(entry, ensure_ascii=False).encode("utf-8", "backslashreplace")


class BufferedJsonHandler(logging.Handler):
    """JSON lines to a stream, buffered and written by a background thread (see the module doc)."""

    def __init__(self, stream: IO[Any], capacity: int = CAPACITY, interval: float = INTERVAL) -> None:
        super().__init__()
        # A text stream (sys.stderr) is written through its binary buffer when it has one.
        self._binary = getattr(stream, "buffer", None)
        self._stream = stream
        self.capacity = capacity
        self.interval = interval
        #: encoded lines (no newline), in the order they came
        self._pending: deque[bytes] = deque()
        #: bytes pending. Written without a lock by the request and reset by the writer:
        #: a lost update only moves the next write by a line.
        self._size = 0
        self._writing = threading.Lock()  # one writer at a time: batches stay in order
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._formatter = logging.Formatter()

    def emit(self, record: logging.LogRecord) -> None:
        # ``Handler.handle`` holds ``self.lock`` around this call: records from several
        # threads are encoded one at a time.
        try:
            line = json_line(record, self._formatter)
        except Exception:
            self.handleError(record)
            return
        self._pending.append(line)
        self._size += len(line) + 1
        if self._thread is None:
            self._start()
        if self._size >= self.capacity or record.levelno >= logging.WARNING:
            self.flush()

    def add_entry(self, entry: Entry) -> None:
        """Buffer one INFO line that never became a ``LogRecord`` (``DecisionLog``), encoded.

        No lock: the append is atomic, and only a full buffer makes this request write.
        """
        line = encode(entry)
        self._pending.append(line)
        self._size += len(line) + 1
        if self._thread is None:
            self._start()
        if self._size >= self.capacity:
            self.flush()

    def _start(self) -> None:
        with self._writing:  # two first lines from two threads start one flusher
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="log-flusher", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()

    def _write(self, data: bytes) -> None:
        if not data:
            return
        try:
            if self._binary is not None:
                self._binary.write(data)
                self._binary.flush()
            else:
                self._stream.write(data.decode("utf-8", "replace"))
                self._stream.flush()
        except (OSError, ValueError):  # stderr closed or gone: nothing better to do with a log line
            pass

    def flush(self) -> None:
        """Write whatever is buffered (the background thread calls this every ``interval``).

        Lines are taken from the front of the buffer under ``self._writing`` and written
        there in one call; requests go on appending at the back meanwhile.
        """
        with self._writing:
            pending = self._pending
            self._size = 0
            batch = [pending.popleft() for _ in range(len(pending))]
            if batch:
                batch.append(b"")  # the last line's newline
                self._write(b"\n".join(batch))

    def close(self) -> None:
        # The flusher is a daemon that stops at its next tick; joining it here could wait
        # on the lock ``logging.shutdown`` holds while it calls this.
        self._stop.set()
        self.flush()
        super().close()
