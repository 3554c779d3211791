"""Shared bench plumbing: certificates, server processes on loopback, load generators.

Everything here talks to 127.0.0.1 only, and every loop is bounded in count and time.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
JOBSETS = ROOT / "tests" / "fixtures" / "jobsets"
EXAMPLE = ROOT.parent / "shared" / "examples" / "admissionreview-create-jobset.json"
PYTHON = sys.executable

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# --------------------------------------------------------------------------- bodies


def example_review() -> dict[str, Any]:
    """The RFC-0033 example AdmissionReview (4.6 static form, namespace kubemaker)."""
    if EXAMPLE.exists():
        return json.loads(EXAMPLE.read_text())  # type: ignore[no-any-return]
    # Fallback when shared/ is not beside the clone: the same JobSet from the fixtures.
    return review_around(load_jobset("rfc-4.6-static"), namespace="kubemaker")


def load_jobset(name: str) -> dict[str, Any]:
    return yaml.safe_load((JOBSETS / f"{name}.yaml").read_text())  # type: ignore[no-any-return]


def review_around(obj: dict[str, Any], *, namespace: str, uid: str = "bench-uid") -> dict[str, Any]:
    return {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": uid,
            "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
            "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
            "name": obj.get("metadata", {}).get("name", ""),
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:aistudio:submitter", "groups": []},
            "object": obj,
            "oldObject": None,
            "dryRun": False,
        },
    }


def dev_review() -> dict[str, Any]:
    """The example JobSet in a dev namespace without Kueue labels: answered with a patch."""
    review = example_review()
    obj = review["request"]["object"]
    obj["metadata"]["namespace"] = review["request"]["namespace"] = "default"
    obj["metadata"].pop("labels", None)
    return review


def large_review(replicated_jobs: int = 20, replicas: int = 256) -> dict[str, Any]:
    """The example JobSet with ``replicated_jobs`` copies of its TPU replicatedJob."""
    review = example_review()
    obj = review["request"]["object"]
    template = obj["spec"]["replicatedJobs"][0]
    jobs = []
    for index in range(replicated_jobs):
        job = copy.deepcopy(template)
        job["name"] = f"w{index}"
        job["replicas"] = replicas
        jobs.append(job)
    obj["spec"]["replicatedJobs"] = jobs
    return review


T = TypeVar("T")


def rotated(rows: Sequence[T], round_number: int) -> list[T]:
    """``rows`` in the order round ``round_number`` measures them: each round starts one row later.

    On a shared machine a figure drifts within a round; rows measured in one fixed order put
    the last row furthest from the baseline it is paired with, every round, and bias its
    ratio. Rotated, each row takes each place in turn (run as many rounds as there are rows).
    """
    shift = round_number % len(rows) if rows else 0
    return [*rows[shift:], *rows[:shift]]


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


# --------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_certs(directory: Path) -> Path:
    from webhook.serving import certs

    files, _ = certs.ensure(directory)
    return files.ca


@dataclass
class Server:
    """A server process on loopback; ``started`` is when Popen returned, ``ready_at`` when /readyz said ok."""

    name: str
    argv: list[str]
    port: int
    ca: Path
    log: Path
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    ready_at: float = 0.0
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> Server:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        self.started = time.perf_counter()
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(
                self.argv, stdout=sink, stderr=sink, env=env, cwd=ROOT, start_new_session=True
            )
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float) -> None:
        context: ssl.SSLContext | None = None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}; see {self.log}")
            if context is None and self.ca.exists():  # a server may generate its CA at start
                context = client_context(self.ca)
            if context is not None and http_get(self.port, "/readyz", context) == 200:
                self.ready_at = time.perf_counter()
                return
            time.sleep(0.005)
        raise RuntimeError(f"{self.name} was not ready within {timeout}s; see {self.log}")

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode


def webhook_server(cert_dir: Path, workdir: Path, *, extra: Sequence[str] = (), name: str = "webhook") -> Server:
    port = free_port()
    argv = [*_argv(None, "serve"), "--port", str(port), "--cert-dir", str(cert_dir), *extra]
    return Server(name, argv, port, cert_dir / "ca.crt", workdir / f"{name}.log")


def webhook_from(tree: Path, certs: Path, work: Path, name: str, *, extra: Sequence[str] = ()) -> Server:
    """``tpu-admission serve`` with ``webhook`` imported from another source ``tree``."""
    port = free_port()
    argv = [*_argv(tree, "serve"), "--port", str(port), "--cert-dir", str(certs), *extra]
    return Server(name, argv, port, certs / "ca.crt", work / f"{name}.log")


def _argv(tree: Path | None, command: str) -> list[str]:
    """``tpu-admission COMMAND`` of this tree, or with ``webhook`` imported from another source ``tree``."""
    if tree is None:
        return [PYTHON, "-m", "webhook", command]
    # Not ``-m webhook``: that puts the working directory (this tree) first on sys.path.
    start = f"import sys; sys.path.insert(0, {str(tree)!r}); from webhook.cli.main import main; sys.exit(main())"
    return [PYTHON, "-c", start, command]


#: The API server's front-proxy client certificate's name, and the caller it names in its headers.
FRONT_PROXY_NAME = "front-proxy-client"
ADVISOR_USER = "bench-user"
ADVISOR_BASE = "/apis/advisor.tpu-admission.antgroup.com/v1alpha1"


@dataclass(frozen=True)
class FrontProxy:
    """The requestheader client CA and the client certificate the API server's aggregation
    layer presents to an aggregated server (the advisor)."""

    ca: Path
    cert: Path
    key: Path


def make_front_proxy(directory: Path) -> FrontProxy:
    from webhook.serving import certs

    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = certs.new_ca("front-proxy-ca")
    cert, key = certs.issue(ca, ca_key, [FRONT_PROXY_NAME], client=True)
    front = FrontProxy(directory / "front-proxy-ca.crt", directory / "proxy.crt", directory / "proxy.key")
    front.ca.write_bytes(ca)
    front.cert.write_bytes(cert)
    front.key.write_bytes(key)
    return front


def has_advisor(tree: Path | None) -> bool:
    """Whether the source ``tree`` (``None``: this one) serves the advisor as its own process."""
    return ((tree or ROOT) / "webhook" / "cli" / "serve_advisor.py").exists()


def advisor_server(
    cert_dir: Path,
    workdir: Path,
    front: FrontProxy,
    *,
    extra: Sequence[str] = (),
    name: str = "advisor",
    tree: Path | None = None,
) -> Server:
    """``tpu-admission serve-advisor`` trusting ``front``'s CA for the caller's headers; it reads
    RBAC's answers (SubjectAccessReviews) from the cluster its ``--kubeconfig`` in ``extra`` names."""
    port = free_port()
    argv = [
        *_argv(tree, "serve-advisor"), "--port", str(port), "--cert-dir", str(cert_dir),
        "--requestheader-client-ca-file", str(front.ca), "--requestheader-allowed-name", FRONT_PROXY_NAME, *extra,
    ]  # fmt: skip
    return Server(name, argv, port, cert_dir / "ca.crt", workdir / f"{name}.log")


def advisor_context(server: Server, front: FrontProxy) -> ssl.SSLContext:
    """Trust ``server``'s CA and present the front-proxy client certificate, as the API server does."""
    context = client_context(server.ca)
    context.load_cert_chain(front.cert, front.key)
    return context


def floor_server(cert_dir: Path, workdir: Path, *, thin: bool = False) -> Server:
    """``bench/floor.py``: the no-op Starlette endpoint (the goals' yardstick), or with ``thin``
    the plain ASGI endpoint dispatched before Starlette's router."""
    port = free_port()
    argv = [PYTHON, str(BENCH / "floor.py"), "--port", str(port), "--cert-dir", str(cert_dir)]
    name = "thin-floor" if thin else "floor"
    return Server(name, argv if thin else [*argv, "--starlette"], port, cert_dir / "ca.crt", workdir / f"{name}.log")


def client_context(ca: Path | Sequence[Path]) -> ssl.SSLContext:
    """Trust only ``ca`` (one CA, or several during a rotation), never the system store."""
    first, *rest = [ca] if isinstance(ca, Path) else list(ca)
    context = ssl.create_default_context(cafile=str(first))
    for path in rest:
        context.load_verify_locations(cafile=str(path))
    return context


def http_get(port: int, path: str, context: ssl.SSLContext, timeout: float = 1.0) -> int | None:
    """One GET on a fresh TLS connection; the status, or ``None`` when nothing answered."""
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            tls.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
            head = tls.recv(64)
            return int(head.split()[1])
    except (OSError, ValueError, IndexError):
        return None


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@contextlib.contextmanager
def workspace(keep: bool = False) -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="tpu-admission-bench-"))
    try:
        yield directory
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)


# --------------------------------------------------------------------------- wrk


@dataclass
class LoadResult:
    tool: str
    seconds: float
    requests: int
    rps: float
    p50_ms: float
    p99_ms: float
    errors: int
    bad: int = 0  # answers that were not a 200 carrying the expected decision
    server_cpu_us: float = 0.0  # the server's CPU time per request (filled in by the caller)

    @property
    def failures(self) -> int:
        return self.errors + self.bad


WRK_SCRIPT = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open(os.getenv("BENCH_BODY"), "rb")
wrk.body = f:read("*a")
f:close()
local expect = os.getenv("BENCH_EXPECT")
local threads = {}
function setup(thread) table.insert(threads, thread) end
bad = 0
function response(status, headers, body)
  if status ~= 200 or not string.find(body, expect, 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("bad") end
  io.write(string.format("BENCH_BAD %d\\n", total))
  io.write(string.format("BENCH_P50_US %f\\n", latency:percentile(50)))
  io.write(string.format("BENCH_P99_US %f\\n", latency:percentile(99)))
end
"""


def have_wrk() -> bool:
    return shutil.which("wrk") is not None


def run_wrk(
    url: str, body_file: Path, expect: str, *, seconds: float, connections: int, threads: int = 1
) -> LoadResult:
    script = body_file.with_suffix(".lua")
    script.write_text(WRK_SCRIPT)
    env = {**os.environ, "BENCH_BODY": str(body_file), "BENCH_EXPECT": expect}
    argv = [
        "wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s",
        "--timeout", "5s", "-s", str(script), url,
    ]  # fmt: skip
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=seconds + 30).stdout
    requests = int(_grab(r"(\d+) requests in", out))
    duration = _duration(_grab(r"requests in ([\d.]+\w+),", out))
    socket_errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    return LoadResult(
        tool="wrk",
        seconds=duration,
        requests=requests,
        rps=float(_grab(r"Requests/sec:\s+([\d.]+)", out)),
        p50_ms=float(_grab(r"BENCH_P50_US ([\d.]+)", out)) / 1000,
        p99_ms=float(_grab(r"BENCH_P99_US ([\d.]+)", out)) / 1000,
        errors=socket_errors,
        bad=int(_grab(r"BENCH_BAD (\d+)", out)),
    )


def _grab(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    if match is None:
        raise RuntimeError(f"unexpected wrk output (no {pattern!r}):\n{text}")
    return match.group(1)


def _duration(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)([a-z]+)", text)
    if match is None:
        raise RuntimeError(f"unexpected wrk duration {text!r}")
    return float(match.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[match.group(2)]


# --------------------------------------------------------------------------- asyncio client


@dataclass
class ClientStats:
    sent: int = 0
    ok: int = 0
    bad: int = 0  # answered, but not a 200 AdmissionReview echoing the uid
    failed: int = 0  # no answer: connection refused/reset mid-request, timeout
    latencies: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    connections: int = 0
    peer_certs: set[bytes] = field(default_factory=set)  # serving certificates seen (DER)
    stop_sending: bool = False  # set from outside: finish what is in flight, start nothing new

    def note(self, what: str) -> None:
        if len(self.failures) < 20:
            self.failures.append(what)


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0
    close = False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value)
        elif name.lower() == "connection" and value.strip().lower() == "close":
            close = True
    return status, await reader.readexactly(length), close


async def _connection(
    port: int,
    context: ssl.SSLContext,
    body: dict[str, Any],
    path: str,
    stats: ClientStats,
    stop_at: float,
    max_requests: int,
    reconnect: bool,
    per_connection: int,
) -> None:
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None
    counter = on_this_connection = 0
    while time.monotonic() < stop_at and stats.sent < max_requests and not stats.stop_sending:
        if writer is None:
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost"), 5
                )
            except (OSError, TimeoutError, ssl.SSLError) as exc:
                if not reconnect:
                    return
                stats.note(f"connect: {exc!r}")
                await asyncio.sleep(0.01)
                continue
            stats.connections += 1
            on_this_connection = 0
            tls = writer.get_extra_info("ssl_object")
            if tls is not None:
                stats.peer_certs.add(tls.getpeercert(binary_form=True))
        assert reader is not None
        counter += 1
        on_this_connection += 1
        uid = f"{id(writer):x}-{counter}"
        body["request"]["uid"] = uid
        payload = json.dumps(body, separators=(",", ":")).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        ).encode()
        stats.sent += 1
        started = time.perf_counter()
        try:
            writer.write(head + payload)
            await writer.drain()
            status, data, close = await asyncio.wait_for(_read_response(reader), 10)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ssl.SSLError, ValueError) as exc:
            stats.failed += 1
            stats.note(f"request {uid}: {exc!r}")
            writer.close()
            writer = None
            if not reconnect:
                return
            continue
        stats.latencies.append(time.perf_counter() - started)
        try:
            answer = json.loads(data)
            good = status == 200 and answer["response"]["uid"] == uid
        except (ValueError, KeyError, TypeError):
            good = False
        if good:
            stats.ok += 1
        else:
            stats.bad += 1
            stats.note(f"request {uid}: HTTP {status} {data[:200]!r}")
        if close or on_this_connection >= per_connection:
            writer.close()
            writer = None
    if writer is not None:
        writer.close()


async def drive(
    port: int,
    ca: Path | Sequence[Path],
    body: dict[str, Any],
    path: str,
    *,
    seconds: float,
    connections: int,
    max_requests: int = 10_000_000,
    reconnect: bool = True,
    per_connection: int = 10_000_000,
    stats: ClientStats | None = None,
) -> ClientStats:
    """Keep-alive POSTs from ``connections`` connections until ``seconds`` or ``max_requests``.

    Each answer is checked: a 200 AdmissionReview echoing the uid of its own request.
    ``per_connection`` closes and reopens a connection after that many requests (new
    TLS handshakes); ``stats.stop_sending`` ends the run early, in-flight requests included.
    """
    context = client_context(ca)
    stats = stats if stats is not None else ClientStats()
    stop_at = time.monotonic() + seconds
    await asyncio.gather(
        *(
            _connection(
                port, context, copy.deepcopy(body), path, stats, stop_at, max_requests, reconnect, per_connection
            )
            for _ in range(connections)
        )
    )
    return stats


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def run_python_load(
    port: int, ca: Path, body: dict[str, Any], path: str, *, seconds: float, connections: int
) -> LoadResult:
    started = time.perf_counter()
    stats = asyncio.run(drive(port, ca, body, path, seconds=seconds, connections=connections))
    elapsed = time.perf_counter() - started
    return LoadResult(
        tool="python",
        seconds=elapsed,
        requests=stats.ok + stats.bad,
        rps=(stats.ok + stats.bad) / elapsed,
        p50_ms=percentile(stats.latencies, 50) * 1000,
        p99_ms=percentile(stats.latencies, 99) * 1000,
        errors=stats.failed,
        bad=stats.bad,
    )
