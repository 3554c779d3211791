"""The TLS server as the API server meets it: hot certificate reload, SIGTERM draining,
mTLS and the TLS version floor. Real sockets on loopback, real certificates."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from support import RunningServer, load_jobset, review, running_server
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from webhook.policy.config import Policy
from webhook.rules.catalog import policy_from_mapping
from webhook.serving import certs
from webhook.serving.app import ServerState
from webhook.serving.tls import TlsSettings

BODY = json.dumps(review(load_jobset("rfc-4.6-static"), uid="stream")).encode()


def wait_for(condition: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    """A bounded wait (not a timing assertion): poll until true or give up."""
    event = threading.Event()
    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        event.wait(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def client_context(ca_pem: bytes, *, cert: tuple[Path, Path] | None = None) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=ca_pem.decode())
    if cert is not None:
        context.load_cert_chain(*cert)
    return context


class NotSent(Exception):
    """The connection or handshake failed: no byte of the request reached the server."""


def post(port: int, context: ssl.SSLContext, path: str = "/mutate", body: bytes = BODY) -> tuple[int, bytes, str]:
    """One request on a fresh connection (so a fresh handshake); returns status, body and
    the SHA-256 of the certificate the server presented."""
    conn = http.client.HTTPSConnection("localhost", port, context=context, timeout=10)
    try:
        try:
            conn.connect()
        except OSError as exc:
            raise NotSent(repr(exc)) from exc
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        assert conn.sock is not None
        served = hashlib.sha256(conn.sock.getpeercert(binary_form=True) or b"").hexdigest()
        return reply.status, reply.read(), served
    finally:
        conn.close()


def fingerprint(cert_pem: bytes) -> str:
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(cert_pem.decode())).hexdigest()


class SecretVolume:
    """A directory laid out like a kubelet Secret volume: ``tls.crt -> ..data/tls.crt``,
    ``..data -> ..<generation>``; ``publish`` swaps ``..data`` atomically, as the kubelet does."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.generation = 0

    def publish(self, files: dict[str, bytes]) -> None:
        self.generation += 1
        directory = self.root / f"..gen{self.generation}"
        directory.mkdir()
        for name, data in files.items():
            (directory / name).write_bytes(data)
        (self.root / "..data_tmp").symlink_to(directory.name)
        os.replace(self.root / "..data_tmp", self.root / "..data")
        for name in files:
            link = self.root / name
            if not link.is_symlink():
                link.symlink_to(f"..data/{name}")

    @property
    def tls(self) -> TlsSettings:
        return TlsSettings(cert=self.root / "tls.crt", key=self.root / "tls.key", reload_interval=0.05)


def pair(names: list[str] | None = None) -> dict[str, bytes]:
    ca, cert, key = certs.generate(names or ["localhost", "127.0.0.1"])
    return {"ca.crt": ca, "tls.crt": cert, "tls.key": key}


@dataclass
class Stream:
    """Requests sent one after another from a few threads until stopped."""

    port: int
    context: ssl.SSLContext
    threads: int = 2
    results: list[list[tuple[str, str]]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.results = [[] for _ in range(self.threads)]
        self._workers = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(self.threads)]

    def _run(self, index: int) -> None:
        for _ in range(5000):  # bounded even if never stopped
            if self.stop.is_set():
                return
            try:
                status, body, served = post(self.port, self.context)
                outcome = "ok" if status == 200 and json.loads(body)["response"]["uid"] == "stream" else f"{status}"
            except NotSent as exc:
                outcome, served = f"not sent: {exc}", ""
            except Exception as exc:
                outcome, served = f"error: {exc!r}", ""
            self.results[index].append((outcome, served))

    def count(self) -> int:
        return sum(len(r) for r in self.results)

    def __enter__(self) -> Stream:
        for worker in self._workers:
            worker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for worker in self._workers:
            worker.join(timeout=20)


# --- hot reload -----------------------------------------------------------------------


@pytest.fixture
def volume(tmp_path: Path) -> SecretVolume:
    volume = SecretVolume(tmp_path)
    return volume


def test_certificate_swap_under_load_serves_the_new_one_without_a_failure(volume: SecretVolume) -> None:
    old, new = pair(), pair()
    volume.publish(old)
    context = client_context(old["ca.crt"] + new["ca.crt"])  # the caBundle during rotation
    with running_server(Policy(), volume.tls) as server, Stream(server.port, context) as stream:
        wait_for(lambda: stream.count() >= 20, what="requests before the swap")
        volume.publish(new)
        wait_for(lambda: any(s == fingerprint(new["tls.crt"]) for r in stream.results for _, s in r), what="new cert")
        seen = stream.count()
        wait_for(lambda: stream.count() >= seen + 20, what="requests after the swap")
    outcomes = [outcome for results in stream.results for outcome, _ in results]
    assert [o for o in outcomes if o != "ok"] == []
    old_fp, new_fp = fingerprint(old["tls.crt"]), fingerprint(new["tls.crt"])
    for results in stream.results:
        served = [s for _, s in results]
        assert set(served) <= {old_fp, new_fp}
        # Per client, once the new certificate is served, every later handshake gets it.
        first_new = served.index(new_fp)
        assert first_new > 0 and set(served[first_new:]) == {new_fp}
    assert server.reloader.reloads == 1


def test_a_mismatched_pair_mid_rotation_keeps_the_old_certificate(
    volume: SecretVolume, caplog: pytest.LogCaptureFixture
) -> None:
    old, new = pair(), pair()
    volume.publish(old)
    context = client_context(old["ca.crt"] + new["ca.crt"])
    caplog.set_level(logging.WARNING, logger="tpu_admission.serving")
    with running_server(Policy(), volume.tls) as server:
        volume.publish({**old, "tls.crt": new["tls.crt"]})  # new certificate, old key
        wait_for(lambda: "certificate reload failed" in caplog.text, what="the failed reload")
        status, _, served = post(server.port, context)
        assert (status, served) == (200, fingerprint(old["tls.crt"]))
        volume.publish(new)
        wait_for(lambda: server.reloader.reloads == 1, what="the good reload")
        status, _, served = post(server.port, context)
        assert (status, served) == (200, fingerprint(new["tls.crt"]))


def leaf(ca: tuple[bytes, bytes], *, rsa: bool = False, starts: float = -300, ends: float = 86400) -> dict[str, bytes]:
    """A serving certificate for localhost from ``ca`` (pem, key) with its own key type and
    validity window (seconds from now): what ``certs.issue`` makes, with the knobs the tests turn."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric import rsa as rsa_keys
    from cryptography.x509.oid import NameOID

    ca_cert = x509.load_pem_x509_certificate(ca[0])
    ca_key = serialization.load_pem_private_key(ca[1], password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = rsa_keys.generate_private_key(65537, 2048) if rsa else ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + dt.timedelta(seconds=starts))
        .not_valid_after(now + dt.timedelta(seconds=ends))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return {"ca.crt": ca[0], "tls.crt": cert.public_bytes(serialization.Encoding.PEM), "tls.key": key_pem}


def served_key_type(port: int, context: ssl.SSLContext) -> str:
    status, _, served = post(port, context)
    assert status == 200
    return served


def test_an_ecdsa_to_rsa_swap_really_serves_the_rsa_certificate(volume: SecretVolume) -> None:
    """One SSLContext keeps one certificate per key type: loading RSA into the live ECDSA
    context left OpenSSL clients on the old ECDSA one. A fresh context per reload does not."""
    ca = certs.new_ca("swap-ca")
    ecdsa, rsa = leaf(ca), leaf(ca, rsa=True)
    volume.publish(ecdsa)
    context = client_context(ca[0])  # default client: offers ECDSA and RSA signature algorithms
    with running_server(Policy(), volume.tls) as server:
        assert served_key_type(server.port, context) == fingerprint(ecdsa["tls.crt"])
        volume.publish(rsa)
        wait_for(lambda: server.reloader.reloads == 1, what="the reload")
        assert served_key_type(server.port, context) == fingerprint(rsa["tls.crt"])
        volume.publish(ecdsa)  # and back
        wait_for(lambda: server.reloader.reloads == 2, what="the second reload")
        assert served_key_type(server.port, context) == fingerprint(ecdsa["tls.crt"])


@pytest.mark.parametrize(("window", "said"), [((-7200, -3600), "is expired at"), ((3600, 7200), "is not valid before")])
def test_an_expired_or_future_certificate_is_refused_and_the_old_one_kept(
    volume: SecretVolume, caplog: pytest.LogCaptureFixture, window: tuple[float, float], said: str
) -> None:
    ca = certs.new_ca("dates-ca")
    good, bad = leaf(ca), leaf(ca, starts=window[0], ends=window[1])
    volume.publish(good)
    caplog.set_level(logging.WARNING, logger="tpu_admission.serving")
    with running_server(Policy(), volume.tls) as server:
        volume.publish(bad)
        wait_for(lambda: "certificate reload failed" in caplog.text, what="the refusal")
        assert f"the new certificate in {volume.root / 'tls.crt'} {said}" in caplog.text
        assert caplog.text.count("certificate reload failed") == 1  # one line, not one per poll
        assert served_key_type(server.port, client_context(ca[0])) == fingerprint(good["tls.crt"])
        assert server.reloader.reloads == 0


# --- TLS versions and mTLS ------------------------------------------------------------


@pytest.fixture(scope="module")
def server_files(tmp_path_factory: pytest.TempPathFactory) -> certs.CertificateFiles:
    return certs.write(tmp_path_factory.mktemp("server"), *pair().values())


@pytest.mark.parametrize(
    ("minimum", "client_max", "expected"),
    [
        ("1.2", ssl.TLSVersion.TLSv1_2, "TLSv1.2"),
        ("1.2", ssl.TLSVersion.MAXIMUM_SUPPORTED, "TLSv1.3"),
        ("1.3", ssl.TLSVersion.TLSv1_2, None),
        ("1.3", ssl.TLSVersion.MAXIMUM_SUPPORTED, "TLSv1.3"),
    ],
)
def test_tls_minimum_version(
    server_files: certs.CertificateFiles, minimum: str, client_max: ssl.TLSVersion, expected: str | None
) -> None:
    tls = TlsSettings(cert=server_files.cert, key=server_files.key, min_version=minimum)
    context = client_context(server_files.ca.read_bytes())
    context.maximum_version = client_max
    with running_server(Policy(), tls) as server, socket.create_connection(("127.0.0.1", server.port)) as raw:
        if expected is None:
            with pytest.raises(ssl.SSLError):
                context.wrap_socket(raw, server_hostname="localhost")
        else:
            with context.wrap_socket(raw, server_hostname="localhost") as tls_socket:
                assert tls_socket.version() == expected


@dataclass(frozen=True)
class ClientCerts:
    ca: Path
    apiserver: tuple[Path, Path]
    intruder: tuple[Path, Path]
    stranger: tuple[Path, Path]  # the right name, but from another CA


@pytest.fixture(scope="module")
def client_certs(tmp_path_factory: pytest.TempPathFactory) -> ClientCerts:
    directory = tmp_path_factory.mktemp("clients")
    ca, ca_key = certs.new_ca("apiserver-client-ca")
    other_ca, other_key = certs.new_ca("other-ca")
    (directory / "client-ca.crt").write_bytes(ca)

    def issued(name: str, by: tuple[bytes, bytes], file: str) -> tuple[Path, Path]:
        cert, key = certs.issue(*by, [name], client=True)
        (directory / f"{file}.crt").write_bytes(cert)
        (directory / f"{file}.key").write_bytes(key)
        return directory / f"{file}.crt", directory / f"{file}.key"

    return ClientCerts(
        ca=directory / "client-ca.crt",
        apiserver=issued("kube-apiserver", (ca, ca_key), "apiserver"),
        intruder=issued("intruder", (ca, ca_key), "intruder"),
        stranger=issued("kube-apiserver", (other_ca, other_key), "stranger"),
    )


@pytest.fixture(scope="module")
def mtls_server(server_files: certs.CertificateFiles, client_certs: ClientCerts) -> Iterator[RunningServer]:
    tls = TlsSettings(
        cert=server_files.cert, key=server_files.key, client_ca=client_certs.ca, client_names=("kube-apiserver",)
    )
    with running_server(Policy(), tls) as server:
        yield server


def test_mtls_admits_the_named_client(
    mtls_server: RunningServer, server_files: certs.CertificateFiles, client_certs: ClientCerts
) -> None:
    context = client_context(server_files.ca.read_bytes(), cert=client_certs.apiserver)
    status, body, _ = post(mtls_server.port, context)
    assert status == 200 and json.loads(body)["response"]["allowed"] is True


@pytest.mark.parametrize("who", ["intruder", "stranger"])
def test_mtls_refuses_other_clients(
    mtls_server: RunningServer, server_files: certs.CertificateFiles, client_certs: ClientCerts, who: str
) -> None:
    context = client_context(server_files.ca.read_bytes(), cert=getattr(client_certs, who))
    with pytest.raises((NotSent, OSError, http.client.HTTPException)):
        post(mtls_server.port, context)
    # ... and the server keeps serving the right client afterwards.
    good = client_context(server_files.ca.read_bytes(), cert=client_certs.apiserver)
    assert post(mtls_server.port, good)[0] == 200


def test_mtls_without_a_certificate_reaches_the_probes_only(
    mtls_server: RunningServer, server_files: certs.CertificateFiles
) -> None:
    """The kubelet probes over HTTPS with no client certificate: /healthz and /readyz answer,
    every other path is refused before the app sees it."""
    anonymous = client_context(server_files.ca.read_bytes())
    for path, method, status in [
        ("/healthz", "GET", 200),
        ("/readyz", "GET", 200),
        ("/mutate", "POST", 403),
        ("/validate/production", "POST", 403),
        ("/no-such-path", "POST", 403),
        ("/metrics", "GET", 403),
        ("/healthz/../mutate", "POST", 403),
    ]:
        conn = http.client.HTTPSConnection("localhost", mtls_server.port, context=anonymous, timeout=10)
        try:
            conn.request(method, path, body=BODY if method == "POST" else None)
            reply = conn.getresponse()
            assert (path, reply.status) == (path, status)
            if status == 403:
                assert json.loads(reply.read()) == {"error": "a client certificate is required for this path"}
        finally:
            conn.close()


def test_client_ca_alone_accepts_any_certificate_it_signed(
    server_files: certs.CertificateFiles, client_certs: ClientCerts
) -> None:
    """Without allowed names the CA is the only check: the name list is what refuses the intruder."""
    tls = TlsSettings(cert=server_files.cert, key=server_files.key, client_ca=client_certs.ca)
    with running_server(Policy(), tls) as server:
        context = client_context(server_files.ca.read_bytes(), cert=client_certs.intruder)
        assert post(server.port, context)[0] == 200


def test_allowed_names_without_a_client_ca_is_refused(server_files: certs.CertificateFiles) -> None:
    with pytest.raises(ValueError, match="client_ca"):
        TlsSettings(cert=server_files.cert, key=server_files.key, client_names=("kube-apiserver",))


def test_the_client_ca_is_reloaded_with_the_certificate(
    volume: SecretVolume, tmp_path_factory: pytest.TempPathFactory
) -> None:
    server_ca = certs.new_ca("serving-ca")
    old_ca, new_ca = certs.new_ca("client-ca-1"), certs.new_ca("client-ca-2")
    directory = tmp_path_factory.mktemp("client-certs")

    def client(ca: tuple[bytes, bytes], name: str) -> tuple[Path, Path]:
        cert, key = certs.issue(*ca, ["kube-apiserver"], client=True)
        (directory / f"{name}.crt").write_bytes(cert)
        (directory / f"{name}.key").write_bytes(key)
        return directory / f"{name}.crt", directory / f"{name}.key"

    old_client, new_client = client(old_ca, "old"), client(new_ca, "new")
    volume.publish({**leaf(server_ca), "client-ca.crt": old_ca[0]})
    tls = TlsSettings(
        cert=volume.root / "tls.crt",
        key=volume.root / "tls.key",
        client_ca=volume.root / "client-ca.crt",
        client_names=("kube-apiserver",),
        reload_interval=0.05,
    )
    with running_server(Policy(), tls) as server:
        assert post(server.port, client_context(server_ca[0], cert=old_client))[0] == 200
        volume.publish({**leaf(server_ca), "client-ca.crt": new_ca[0]})
        wait_for(lambda: server.reloader.reloads == 1, what="the reload")
        assert post(server.port, client_context(server_ca[0], cert=new_client))[0] == 200
        with pytest.raises((NotSent, OSError, http.client.HTTPException)):
            post(server.port, client_context(server_ca[0], cert=old_client))


# --- SIGTERM: the real `tpu-admission serve` -------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def readyz(port: int, context: ssl.SSLContext) -> int | None:
    try:
        conn = http.client.HTTPSConnection("localhost", port, context=context, timeout=5)
        conn.request("GET", "/readyz")
        return conn.getresponse().status
    except OSError:
        return None


def refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except OSError:
        return True


@contextlib.contextmanager
def serve_process(tmp_path: Path, *extra: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """``tpu-admission serve`` in a child process logging to ``serve.log``; killed if still running at the end."""
    port = free_port()
    log = (tmp_path / "serve.log").open("w")
    command = [sys.executable, "-m", "webhook", "serve", "--port", str(port), "--cert-dir", str(tmp_path / "tls")]
    process = subprocess.Popen([*command, *extra], stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()


def test_sigterm_drains_and_answers_every_request_in_flight(tmp_path: Path) -> None:
    """SIGTERM: readiness off at once, requests still served for --drain-seconds, then the
    listener closes, a request already in flight is still answered, and the process exits 0.

    The stream of fresh connections stops before the listener closes: a connection whose
    handshake completes in the instant the server shuts down idle connections is the
    generic HTTP keep-alive race, which the preStop delay and the drain exist to avoid in
    the cluster (nothing is routed to the pod by then); the slow request is the one that
    is genuinely in flight across the shutdown."""
    with serve_process(tmp_path, "--drain-seconds", "2") as (process, port):
        wait_for(lambda: (tmp_path / "tls" / "ca.crt").exists(), what="generated certificates")
        context = client_context((tmp_path / "tls" / "ca.crt").read_bytes())
        wait_for(lambda: readyz(port, context) == 200, what="readiness")

        # A request in flight across the whole shutdown: headers and half the body now,
        # the rest only after the server has stopped accepting connections.
        slow = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
        head = "POST /mutate/dev HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        slow.sendall(f"{head}Content-Length: {len(BODY)}\r\n\r\n".encode() + BODY[: len(BODY) // 2])

        with Stream(port, context, threads=1) as stream:
            wait_for(lambda: stream.count() >= 5, what="requests before SIGTERM")
            process.send_signal(signal.SIGTERM)
            sent_at = stream.count()
            wait_for(lambda: readyz(port, context) == 503, what="readiness off after SIGTERM")
            wait_for(lambda: stream.count() >= sent_at + 3, what="requests served during the drain")
        wait_for(lambda: refuses_connections(port), what="the listener to close after the drain")
        assert process.poll() is None, "exited with a request still in flight"
        slow.sendall(BODY[len(BODY) // 2 :])
        reply = http.client.HTTPResponse(slow)  # type: ignore[arg-type]
        reply.begin()
        assert reply.status == 200 and json.loads(reply.read())["response"]["uid"] == "stream"
        slow.close()
        assert process.wait(timeout=30) == 0
    results = [outcome for outcome, _ in stream.results[0]]
    assert [o for o in results if o != "ok"] == []
    assert len(results) > sent_at, "nothing was served during the drain"
    assert "stopped: in-flight requests answered" in (tmp_path / "serve.log").read_text()


def test_sighup_rereads_the_certificate_and_keeps_serving(tmp_path: Path) -> None:
    """SIGHUP's default action ends the process; the server takes it as "check the certificate now"."""
    with serve_process(tmp_path) as (process, port):
        wait_for(lambda: (tmp_path / "tls" / "ca.crt").exists(), what="generated certificates")
        context = client_context((tmp_path / "tls" / "ca.crt").read_bytes())
        wait_for(lambda: readyz(port, context) == 200, what="readiness")
        process.send_signal(signal.SIGHUP)
        wait_for(
            lambda: "SIGHUP: checking the certificate files now" in (tmp_path / "serve.log").read_text(),
            what="the SIGHUP log line",
        )
        assert process.poll() is None
        assert readyz(port, context) == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def _session_request(
    port: int, context: ssl.SSLContext, session: ssl.SSLSession | None = None
) -> tuple[ssl.SSLSession | None, bool]:
    """``GET /metrics`` (mTLS-only) on a fresh connection, resuming ``session`` if given:
    returns the session to resume later and whether this one was resumed. ``NotSent`` when
    the handshake is refused, ``OSError`` when the server ends the connection unanswered."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        try:
            conn = context.wrap_socket(raw, server_hostname="localhost", session=session)
        except OSError as exc:
            raise NotSent(repr(exc)) from exc
        with conn:
            conn.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            reply = read_until_closed(conn)
            if not reply.startswith(b"HTTP/1.1 200 "):
                raise ConnectionResetError(f"answered {reply[:40]!r}")
            return conn.session, conn.session_reused
    finally:
        raw.close()


def test_mtls_sessions_from_before_a_client_ca_rotation_do_not_resume(tmp_path: Path) -> None:
    """The real ``serve --client-ca`` (uvloop) and SIGHUP: a client holding a session from
    the old CA resumed it after the rotation, in TLS 1.2 and 1.3, although its full handshake
    was refused. Each certificate generation now has a context of its own, session cache and
    ticket keys included; within a generation sessions still resume."""
    old_ca, new_ca = certs.new_ca("client-ca-old"), certs.new_ca("client-ca-new")
    client_ca = tmp_path / "client-ca.crt"
    client_ca.write_bytes(old_ca[0])

    def client(ca: tuple[bytes, bytes], name: str) -> tuple[Path, Path]:
        cert, key = certs.issue(*ca, ["kube-apiserver"], client=True)
        (tmp_path / f"{name}.crt").write_bytes(cert)
        (tmp_path / f"{name}.key").write_bytes(key)
        return tmp_path / f"{name}.crt", tmp_path / f"{name}.key"

    old_client, new_client = client(old_ca, "old"), client(new_ca, "new")
    with serve_process(tmp_path, "--client-ca", str(client_ca)) as (process, port):
        wait_for(lambda: (tmp_path / "tls" / "ca.crt").exists(), what="generated certificates")
        serving_ca = (tmp_path / "tls" / "ca.crt").read_bytes()
        wait_for(lambda: readyz(port, client_context(serving_ca)) == 200, what="readiness")
        contexts, sessions = {}, {}
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            contexts[version] = client_context(serving_ca, cert=old_client)
            contexts[version].maximum_version = version
            sessions[version], _ = _session_request(port, contexts[version])
            assert _session_request(port, contexts[version], sessions[version])[1] is True  # resumes, same CA

        replacement = tmp_path / "client-ca.new"
        replacement.write_bytes(new_ca[0])
        os.replace(replacement, client_ca)
        process.send_signal(signal.SIGHUP)
        wait_for(lambda: "reloaded the serving certificate" in (tmp_path / "serve.log").read_text(), what="reload")

        for version, context in contexts.items():
            with pytest.raises((NotSent, OSError)):
                _session_request(port, context)  # a full handshake: refused, as before
            with pytest.raises((NotSent, OSError)):
                _session_request(port, context, sessions[version])  # resuming: refused too (it was answered)
            fresh = client_context(serving_ca, cert=new_client)
            fresh.maximum_version = version
            session, _ = _session_request(port, fresh)
            assert _session_request(port, fresh, session)[1] is True
        assert process.poll() is None


def test_readiness_is_off_before_start_and_after_stop(server_files: certs.CertificateFiles) -> None:
    state = ServerState(policy=Policy())
    tls = TlsSettings(cert=server_files.cert, key=server_files.key)
    assert state.ready is False
    server = RunningServer(state, tls).start()
    wait_for(lambda: state.ready, what="ready")
    context = client_context(server_files.ca.read_bytes())
    assert readyz(server.port, context) == 200
    server.stop()
    assert state.ready is False


# --- connection deadlines and caps -----------------------------------------------------

STRICT = policy_from_mapping(
    {
        "server": {
            "handshakeTimeoutSeconds": 0.5,
            "headerTimeoutSeconds": 0.5,
            "bodyTimeoutSeconds": 0.5,
            "keepAliveSeconds": 0.5,
            "maxHeaderBytes": 2048,
            "maxConnections": 4,
        }
    }
)


@pytest.fixture(scope="module")
def strict_server(server_files: certs.CertificateFiles) -> Iterator[RunningServer]:
    with running_server(STRICT, TlsSettings(cert=server_files.cert, key=server_files.key)) as server:
        yield server


def tls_connection(port: int, ca: Path) -> ssl.SSLSocket:
    context = client_context(ca.read_bytes())
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context.wrap_socket(raw, server_hostname="localhost")


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (the socket's 10 s timeout bounds the wait)."""
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ssl.SSLError, ConnectionResetError):
        pass
    return data


def test_an_answer_is_one_tls_record(strict_server: RunningServer, server_files: certs.CertificateFiles) -> None:
    """Head and body in one write: an SSL read returns one record, and the first holds it all."""
    head = (
        f"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len(BODY)}"
    )
    with tls_connection(strict_server.port, server_files.ca) as conn:
        conn.sendall(f"{head}\r\n\r\n".encode() + BODY)
        first = conn.recv(65536)
    status_and_headers, _, body = first.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in status_and_headers.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    assert status_and_headers.startswith(b"HTTP/1.1 200 OK")
    assert len(body) == length and json.loads(body)["response"]["uid"] == "stream"


def test_forwarded_headers_are_not_read(strict_server: RunningServer) -> None:
    """uvicorn's proxy-headers middleware (on by default) is left out: the API server calls
    the webhook directly, so X-Forwarded-* could only be a client's claim."""
    loaded = strict_server.server.config.loaded_app
    assert not isinstance(loaded, ProxyHeadersMiddleware)
    assert strict_server.server.config.proxy_headers is False


def test_expect_100_continue_is_answered_before_the_body_is_sent(
    strict_server: RunningServer, server_files: certs.CertificateFiles
) -> None:
    head = (
        f"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(BODY)}\r\nExpect: 100-continue\r\n\r\n"
    )
    with tls_connection(strict_server.port, server_files.ca) as conn:
        conn.sendall(head.encode())
        assert conn.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"  # not held back with the answer
        conn.sendall(BODY)
        assert conn.recv(65536).startswith(b"HTTP/1.1 200 OK")


def test_a_head_request_is_answered_and_the_connection_kept(
    strict_server: RunningServer, server_files: certs.CertificateFiles
) -> None:
    with tls_connection(strict_server.port, server_files.ca) as conn:
        conn.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answer = conn.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"\r\n\r\n")  # a head, no body
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        assert read_until_closed(conn).endswith(b"\r\n\r\nok")


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # handshake done, then nothing
        b"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Ty",  # stops halfway through the headers
    ],
    ids=["no request", "half the headers"],
)
def test_a_request_that_does_not_arrive_gets_408_and_the_connection_ends(
    strict_server: RunningServer, server_files: certs.CertificateFiles, sent: bytes
) -> None:
    with tls_connection(strict_server.port, server_files.ca) as conn:
        conn.sendall(sent)
        reply = read_until_closed(conn)
    assert reply.startswith(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n")
    assert reply.endswith(b'\r\n\r\n{"error":"the request did not arrive in time"}')


def test_a_body_that_stops_coming_ends_the_connection(
    strict_server: RunningServer, server_files: certs.CertificateFiles
) -> None:
    head = f"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len(BODY)}"
    requests = strict_server.state.metrics.requests
    before = dict(requests.values)  # other tests share this server
    with tls_connection(strict_server.port, server_files.ca) as conn:
        conn.sendall(f"{head}\r\n\r\n".encode() + BODY[:100])
        assert read_until_closed(conn).startswith(b"HTTP/1.1 408 Request Timeout\r\n")
    assert readyz(strict_server.port, client_context(server_files.ca.read_bytes())) == 200  # the loop moved on
    # the admission handler saw the connection end and answered nothing, so counted nothing
    assert requests.values == before


def test_a_tls_handshake_that_never_comes_is_cut(strict_server: RunningServer) -> None:
    with socket.create_connection(("127.0.0.1", strict_server.port), timeout=10) as raw:
        raw.sendall(b"\x16\x03\x01")  # the first bytes of a ClientHello, and no more
        assert read_until_closed(raw) == b""


def test_headers_over_the_cap_get_431(strict_server: RunningServer, server_files: certs.CertificateFiles) -> None:
    with tls_connection(strict_server.port, server_files.ca) as conn:
        with contextlib.suppress(OSError):  # the server may close before all of it is sent
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Pad: " + b"x" * 1024 * 1024)
        reply = read_until_closed(conn)
    assert reply.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert reply.endswith(b'{"error":"request headers over 2048 bytes"}')


def test_idle_keep_alive_connections_are_closed(
    strict_server: RunningServer, server_files: certs.CertificateFiles
) -> None:
    with tls_connection(strict_server.port, server_files.ca) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        reply = read_until_closed(conn)  # answered, kept alive, then closed when idle
    assert reply.startswith(b"HTTP/1.1 200 OK\r\n") and reply.endswith(b"ok")


def test_a_kept_alive_connection_is_closed_after_its_idle_time_not_before(
    strict_server: RunningServer, server_files: certs.CertificateFiles
) -> None:
    """A connection answered three times with pauses under keepAliveSeconds (0.5 s) stays
    open, and once idle past it the server closes it."""
    with tls_connection(strict_server.port, server_files.ca) as conn:
        for _ in range(3):
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert conn.recv(65536).startswith(b"HTTP/1.1 200 OK\r\n")
            answered = time.monotonic()
            time.sleep(0.25)
        assert read_until_closed(conn) == b""
        idle = time.monotonic() - answered
    # The server's idle time starts when it sends the answer, a little before this side has
    # read it: the lower bound allows that gap, the upper one a loaded machine.
    assert 0.5 - 0.05 <= idle < 0.5 + 0.5


def answered_once(port: int, ca: Path) -> ssl.SSLSocket:
    """A TLS connection that asked for /healthz, got its answer and is kept alive: idle."""
    conn = tls_connection(port, ca)
    conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert conn.recv(4096).startswith(b"HTTP/1.1 200 OK")
    return conn


def closed_by_server(conn: ssl.SSLSocket) -> bool:
    """Whether the server closed ``conn`` (waits up to the socket's timeout for it)."""
    try:
        return conn.recv(1) == b""
    except TimeoutError:
        return False
    except (ssl.SSLError, ConnectionResetError):
        return True


def at_limit(server: RunningServer) -> dict[tuple[str, ...], int]:
    return dict(server.state.metrics.connections.values)


def test_at_the_connection_limit_the_oldest_idle_connection_makes_room(server_files: certs.CertificateFiles) -> None:
    """Idle kept-alive connections must not hold every slot until their idle time runs
    out while a new one (the API server's next call) is closed on arrival: the one idle
    the longest is closed for it, the others stay, and /metrics counts it."""
    policy = policy_from_mapping({"server": {"maxConnections": 3, "keepAliveSeconds": 60}})
    with running_server(policy, TlsSettings(cert=server_files.cert, key=server_files.key)) as server:
        held = [answered_once(server.port, server_files.ca) for _ in range(3)]
        try:
            held[0].sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")  # now the last one idle
            assert held[0].recv(4096).startswith(b"HTTP/1.1 200 OK")
            newcomer = answered_once(server.port, server_files.ca)
            held[1].settimeout(5)
            assert closed_by_server(held[1])  # idle the longest
            for conn in (held[0], held[2], newcomer):
                conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                assert conn.recv(4096).startswith(b"HTTP/1.1 200 OK")
            newcomer.close()
        finally:
            for conn in held:
                conn.close()
        assert at_limit(server) == {("closed_idle",): 1}
        text = server.state.metrics.render().decode()
        assert 'tpu_admission_connections_at_limit_total{outcome="closed_idle"} 1.0' in text


def test_connections_that_sent_nothing_since_their_handshake_are_idle_not_busy(
    server_files: certs.CertificateFiles,
) -> None:
    """Connections that completed their handshake and sent nothing counted as busy, so that
    many of them made every later handshake fail. Only a request in flight makes a
    connection busy: the silent one open the longest makes room, and the header deadline
    still closes the others (they cannot hold descriptors for ever)."""
    policy = policy_from_mapping({"server": {"maxConnections": 3, "keepAliveSeconds": 60, "headerTimeoutSeconds": 3}})
    with running_server(policy, TlsSettings(cert=server_files.cert, key=server_files.key)) as server:
        silent = [tls_connection(server.port, server_files.ca) for _ in range(3)]
        try:
            gate = server.server.gate  # type: ignore[attr-defined]
            wait_for(lambda: gate.open == 3, what="three connections in")
            newcomer = answered_once(server.port, server_files.ca)
            silent[0].settimeout(5)
            assert closed_by_server(silent[0])  # silent the longest
            newcomer.close()
            assert at_limit(server) == {("closed_idle",): 1}
            for conn in silent[1:]:
                conn.settimeout(10)
                started = time.monotonic()
                assert read_until_closed(conn).startswith(b"HTTP/1.1 408")
                assert time.monotonic() - started < 9
        finally:
            for conn in silent:
                conn.close()


def test_at_the_connection_limit_with_every_connection_busy_the_new_one_is_refused(
    server_files: certs.CertificateFiles,
) -> None:
    """Connections with a request in flight are never closed to make room: a new one is
    closed as it is accepted (no handshake for it). Once a request is answered its
    connection is idle, and the next newcomer gets its slot."""
    policy = policy_from_mapping({"server": {"maxConnections": 3, "keepAliveSeconds": 60, "bodyTimeoutSeconds": 60}})
    head = f"POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {len(BODY)}"
    with running_server(policy, TlsSettings(cert=server_files.cert, key=server_files.key)) as server:
        busy = [tls_connection(server.port, server_files.ca) for _ in range(3)]
        try:
            for conn in busy:
                conn.sendall(f"{head}\r\n\r\n".encode() + BODY[:100])  # half a request: in flight
            guard = server.server.guard  # type: ignore[attr-defined]
            wait_for(lambda: sum(c.begun for c in guard.connections) == 3, what="three requests begun")
            with pytest.raises(OSError):
                tls_connection(server.port, server_files.ca)
            assert at_limit(server) == {("refused",): 1}
            busy[0].sendall(BODY[100:])
            assert busy[0].recv(65536).startswith(b"HTTP/1.1 200 OK")
            newcomer = answered_once(server.port, server_files.ca)
            busy[0].settimeout(5)
            assert closed_by_server(busy[0])
            newcomer.close()
            for conn in busy[1:]:
                conn.sendall(BODY[100:])
                assert conn.recv(65536).startswith(b"HTTP/1.1 200 OK")
        finally:
            for conn in busy:
                conn.close()
        assert at_limit(server) == {("refused",): 1, ("closed_idle",): 1}


def test_sockets_still_in_their_handshake_count_against_the_limit(
    server_files: certs.CertificateFiles, caplog: pytest.LogCaptureFixture
) -> None:
    """Only connections past the handshake were counted: with the limit at 40, 120 raw TCP
    connections all stayed until the handshake deadline. Now every accepted socket counts,
    and the ones over the limit are closed at once, with a log line."""
    policy = policy_from_mapping({"server": {"maxConnections": 4, "handshakeTimeoutSeconds": 30}})
    caplog.set_level(logging.WARNING, logger="tpu_admission.serving")
    with running_server(policy, TlsSettings(cert=server_files.cert, key=server_files.key)) as server:
        gate = server.server.gate  # type: ignore[attr-defined]
        raw = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(12)]
        try:
            wait_for(lambda: gate.open == 4 and gate.refused == 8, what="4 admitted, 8 refused")
            started = time.monotonic()
            ended = 0
            for conn in raw:
                conn.settimeout(0.5)
                try:
                    ended += conn.recv(1) == b""  # closed by the server
                except TimeoutError:
                    pass  # admitted: waiting for its ClientHello
                except ConnectionResetError:
                    ended += 1
            assert ended == 8 and time.monotonic() - started < 10  # long before the 30 s deadline
            assert "refusing connections: 4 open (TLS handshakes included)" in caplog.text
        finally:
            for conn in raw:
                conn.close()
        context = client_context(server_files.ca.read_bytes())
        wait_for(lambda: readyz(server.port, context) == 200, what="service once the raw sockets left")
        wait_for(lambda: gate.open == 0, what="every slot released")


@pytest.mark.parametrize("pipelined", [False, True], ids=["one request", "behind a first request"])
def test_a_header_block_over_the_cap_in_one_read_gets_431(
    strict_server: RunningServer, server_files: certs.CertificateFiles, pipelined: bool
) -> None:
    """The cap was checked per read, so a whole block over it in one read (144 KB against
    64 KiB; here 3 KB against 2 KiB, one TLS record) was answered; it counts the bytes now."""
    first = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n" if pipelined else b""
    big = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" + b"X-Pad: " + b"x" * 3000 + b"\r\n\r\n"
    with tls_connection(strict_server.port, server_files.ca) as conn:
        conn.sendall(first + big)
        reply = read_until_closed(conn)
    statuses = [a.split(b"\r\n", 1)[0] for a in reply.split(b"HTTP/1.1 ")[1:]]
    # behind a first request, that one's answer may not be out yet when the connection is refused
    assert statuses[-1] == b"431 Request Header Fields Too Large" and set(statuses[:-1]) <= {b"200 OK"}
    assert reply.endswith(b'{"error":"request headers over 2048 bytes"}')


def test_headers_just_under_the_cap_are_served(
    strict_server: RunningServer, server_files: certs.CertificateFiles
) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
    pad = 2048 - len(b"/healthz") - len(b"Host: localhost") - len(b"Connection: close") - 4 * 3 - len(b"X-Pad")
    with tls_connection(strict_server.port, server_files.ca) as conn:
        conn.sendall(head + b"X-Pad: " + b"x" * pad + b"\r\n\r\n")
        assert read_until_closed(conn).startswith(b"HTTP/1.1 200 OK")


def _serve_with_open_files(tmp_path: Path, soft: int, hard: int) -> subprocess.Popen[bytes]:
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    log = (tmp_path / "serve.log").open("w")
    command = [sys.executable, "-m", "webhook", "serve", "--port", str(free_port()), "--cert-dir", str(tmp_path / "t")]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=limit)


def test_serve_refuses_to_start_when_max_connections_cannot_fit_the_open_files_limit(tmp_path: Path) -> None:
    """At the default 1000 connections and a limit of 200 descriptors, the descriptors ran out
    at 185 TLS connections and new clients got resets, with nothing logged."""
    process = _serve_with_open_files(tmp_path, 200, 200)
    assert process.wait(timeout=60) == 2
    assert (tmp_path / "serve.log").read_text() == (
        "tpu-admission: server.maxConnections is 1000, which needs 1064 open files (64 besides the connections), "
        "but the hard limit is 200 (ulimit -Hn): lower server.maxConnections to 136 or raise the limit\n"
    )


def test_serve_raises_the_soft_open_files_limit_where_the_hard_one_allows(tmp_path: Path) -> None:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1064:
        pytest.skip(f"the hard open-files limit here is {hard}")
    process = _serve_with_open_files(tmp_path, 200, hard)
    try:
        wait_for(lambda: "raised the open-files limit" in (tmp_path / "serve.log").read_text(), what="the log line")
        assert "from 200 to 1064 for server.maxConnections=1000" in (tmp_path / "serve.log").read_text()
        limits = Path(f"/proc/{process.pid}/limits").read_text()
        assert any(line.startswith("Max open files") and line.split()[3] == "1064" for line in limits.splitlines())
    finally:
        process.kill()
        process.wait()


# --- /metrics on its own port ----------------------------------------------------------


def test_metrics_on_their_own_port_and_not_on_the_https_one(server_files: certs.CertificateFiles) -> None:
    tls = TlsSettings(cert=server_files.cert, key=server_files.key)
    with running_server(Policy(), tls, metrics_port=0) as server:
        port = server.server.metrics_port  # type: ignore[attr-defined]
        assert port and port != server.port
        context = client_context(server_files.ca.read_bytes())
        assert post(server.port, context)[0] == 200
        conn = http.client.HTTPSConnection("localhost", server.port, context=context, timeout=10)
        conn.request("GET", "/metrics")
        assert conn.getresponse().status == 404
        conn.close()
        plain = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        plain.request("GET", "/metrics")
        reply = plain.getresponse()
        text = reply.read().decode()
        assert reply.status == 200 and reply.getheader("content-type", "").startswith("text/plain; version=0.0.4")
        assert 'tpu_admission_requests_total{decision="allowed",endpoint="mutate"} 1.0' in text
        assert "tpu_admission_ready 1.0" in text
        for method, path, status in [("GET", "/healthz", 404), ("POST", "/metrics", 405)]:
            plain = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            plain.request(method, path)
            assert plain.getresponse().status == status
        # a scraper that never finishes its request is cut off, not kept
        server.server.metrics.timeout = 0.3  # type: ignore[attr-defined]
        with socket.create_connection(("127.0.0.1", port), timeout=20) as slow:
            slow.sendall(b"GET /metrics HTTP/1.1\r\n")
            assert read_until_closed(slow) == b""


# --- uvicorn's public surface -------------------------------------------------------------


def test_serving_reads_no_private_name_of_uvicorn() -> None:
    """A private name of uvicorn (an attribute or import starting with one underscore) can
    change in any patch release; the serving code reads none, so uvicorn takes a normal
    version range. A private attribute is read only on ``self`` of a class of ours that
    does not derive from one of uvicorn's."""
    import ast

    import webhook.serving

    found = []
    for path in sorted(Path(webhook.serving.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        uvicorn_classes = {
            node.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ClassDef) and any("uvicorn" in ast.unparse(base) for base in node.bases)
        }
        for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name in uvicorn_classes]:
            found += [
                f"{path.name}:{n.lineno} {ast.unparse(n)}"
                for n in ast.walk(cls)
                if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
            ]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("uvicorn"):
                found += [
                    f"{path.name}:{node.lineno} {node.module}.{a.name}" for a in node.names if "._" in f".{a.name}"
                ]
                if "._" in f".{node.module}":
                    found.append(f"{path.name}:{node.lineno} {node.module}")
    assert found == []
