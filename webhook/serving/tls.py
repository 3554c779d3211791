"""The serving certificate: TLS contexts from the files, switched for new connections when
the files change (a reload polls them; SIGHUP checks them at once).

A reload builds a *fresh* context from the new files, and the listening context
(``SwitchingContext``) wraps each new connection with it, so the whole handshake is the
new generation's: certificate, client CA, session cache and ticket keys. Loading into the
live context would not do: one context keeps one certificate per key type, so an ECDSA ->
RSA swap kept serving the old ECDSA one; nor would switching contexts in the
``sni_callback``: OpenSSL resumes sessions against the context a connection began with,
so an mTLS client resumed its session after its CA was rotated out. A certificate that
is expired, not yet valid or does not match its key is refused with a log line and the
current one stays. Open connections keep theirs.

mTLS (optional): ``client_ca`` makes the context ask for a client certificate from that
CA; which requests need one, and which names are accepted, is the connection guard's
(``webhook.serving.guard``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import signal
import ssl
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from cryptography import x509

log = logging.getLogger("tpu_admission.serving")


@dataclass(frozen=True)
class TlsSettings:
    cert: Path
    key: Path
    min_version: str = "1.2"
    client_ca: Path | None = None
    client_names: tuple[str, ...] = ()
    reload_interval: float = 2.0

    def __post_init__(self) -> None:
        if self.client_names and self.client_ca is None:
            raise ValueError("client_names needs client_ca: only a verified certificate has trustworthy names")


class CertificateRefused(Exception):
    """The files hold a certificate the server must not switch to; the message says why."""


@dataclass(frozen=True)
class Material:
    """The bytes of one certificate generation: serving pair and, with mTLS, the client CA."""

    cert: bytes
    key: bytes
    client_ca: bytes | None

    @classmethod
    def read(cls, settings: TlsSettings) -> Material:
        return cls(
            settings.cert.read_bytes(),
            settings.key.read_bytes(),
            settings.client_ca.read_bytes() if settings.client_ca is not None else None,
        )


def certificate_problem(cert_pem: bytes, now: dt.datetime | None = None) -> str | None:
    """Why the (first) certificate of ``cert_pem`` must not be served now, or ``None``."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError as exc:
        return f"not a PEM certificate: {exc}"
    now = now or dt.datetime.now(dt.UTC)
    if now < cert.not_valid_before_utc:
        return f"not valid before {cert.not_valid_before_utc.isoformat()} (now {now.isoformat(timespec='seconds')})"
    if now > cert.not_valid_after_utc:
        return f"expired at {cert.not_valid_after_utc.isoformat()} (now {now.isoformat(timespec='seconds')})"
    return None


def context_for(settings: TlsSettings, material: Material) -> ssl.SSLContext:
    """A fresh server context holding exactly ``material``; raises ``ssl.SSLError`` on a bad pair."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3 if settings.min_version == "1.3" else ssl.TLSVersion.TLSv1_2
    with pem_files(material.cert, material.key) as (cert_path, key_path):
        context.load_cert_chain(cert_path, key_path)
    if material.client_ca is not None:
        # mTLS: a client certificate must come from this CA (the API server's). Optional at
        # the TLS layer so that the kubelet's probes, which carry none, still get through;
        # the HTTP protocol refuses every other request without one.
        context.load_verify_locations(cadata=material.client_ca.decode("ascii", "replace"))
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


def make_ssl_context(settings: TlsSettings) -> ssl.SSLContext:
    """A context from the files as they are now (no validity checks: see ``CertificateReloader``)."""
    return context_for(settings, Material.read(settings))


class SwitchingContext(ssl.SSLContext):
    """The listener's context: it hands each new connection to ``current``, the context of
    one generation of the certificate files.

    asyncio and uvloop wrap every accepted connection with ``wrap_bio`` of the context the
    listener was given; passed on to ``current``, everything of that handshake is the
    generation's own, including the session cache and the ticket keys OpenSSL keeps per
    context. A session (TLS 1.2 session ID or TLS 1.3 ticket) from before a reload is
    therefore unknown after it: the client makes a full handshake, and with mTLS its
    certificate is checked against the client CA in force now. Within one generation
    sessions resume as usual. This context itself holds no certificate.
    """

    current: ssl.SSLContext

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        return self.current.wrap_bio(
            incoming, outgoing, server_side=server_side, server_hostname=server_hostname, session=session
        )


def switching_context(settings: TlsSettings) -> SwitchingContext:
    """The listening context, handing connections to a context from the files as they are now."""
    context = SwitchingContext(ssl.PROTOCOL_TLS_SERVER)
    context.current = make_ssl_context(settings)
    return context


@contextmanager
def pem_files(cert: bytes, key: bytes) -> Iterator[tuple[str, str]]:
    """Paths holding exactly these bytes (``load_cert_chain`` only reads files): anonymous
    in-memory files where Linux offers them, else a private temporary directory."""
    if hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        fds = [os.memfd_create("tls.crt"), os.memfd_create("tls.key")]
        try:
            for fd, data in zip(fds, (cert, key), strict=True):
                with open(fd, "wb", closefd=False) as handle:
                    handle.write(data)
            yield f"/proc/self/fd/{fds[0]}", f"/proc/self/fd/{fds[1]}"
        finally:
            for fd in fds:
                os.close(fd)
        return
    with tempfile.TemporaryDirectory() as directory:
        paths = (os.path.join(directory, "tls.crt"), os.path.join(directory, "tls.key"))
        for path, data in zip(paths, (cert, key), strict=True):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as handle:
                handle.write(data)
        yield paths


def peer_names(peercert: Any) -> set[str]:
    """The common name(s) and DNS subject-alternative names of ``SSLSocket.getpeercert()``."""
    names: set[str] = set()
    if not isinstance(peercert, dict):
        return names
    for rdn in peercert.get("subject", ()):
        names.update(value for key, value in rdn if key == "commonName")
    names.update(value for kind, value in peercert.get("subjectAltName", ()) if kind == "DNS")
    return names


class CertificateReloader:
    """Polls the certificate files and switches new connections to a fresh context when they change.

    ``context`` is the listening context given to the server; ``current`` the one new
    connections are wrapped with (``SwitchingContext.current``).
    """

    def __init__(self, context: SwitchingContext, settings: TlsSettings, seen: tuple[float, ...] | None = None) -> None:
        self.context = context
        self.settings = settings
        self.reloads = 0
        self._seen = seen if seen is not None else self._stamp()
        self._failed: tuple[float, ...] | None = None

    @property
    def current(self) -> ssl.SSLContext:
        return self.context.current

    @staticmethod
    def stamp_files(settings: TlsSettings) -> tuple[float, ...] | None:
        files = [settings.cert, settings.key] + ([settings.client_ca] if settings.client_ca else [])
        try:
            stats = [path.stat() for path in files]
        except OSError:
            return None
        # Kubernetes swaps Secret volumes through a symlink: compare inode too, not only mtime.
        return tuple(x for stat in stats for x in (stat.st_mtime, stat.st_ino))

    def _stamp(self) -> tuple[float, ...]:
        stamp = self.stamp_files(self.settings)
        if stamp is None:  # mid-swap or briefly missing: treat as unchanged
            return self._seen if hasattr(self, "_seen") else ()
        return stamp

    def check(self) -> bool:
        """Switch to the files' certificate if they changed and it is fit to serve; else keep the current one."""
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        try:
            material = Material.read(self.settings)
            problem = certificate_problem(material.cert)
            if problem is not None:
                raise CertificateRefused(f"the new certificate in {self.settings.cert} is {problem}")
            fresh = context_for(self.settings, material)
        except (ssl.SSLError, OSError, CertificateRefused) as exc:
            # Mid-rotation the cert and key may not match yet: try again next tick, one line per state.
            if stamp != self._failed:
                log.warning("certificate reload failed, keeping the current one: %s", exc)
                self._failed = stamp
            return False
        self.context.current = fresh  # new connections only: a session from before is unknown to it
        self._seen = stamp
        self.reloads += 1
        log.info("reloaded the serving certificate from %s", self.settings.cert)
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.settings.reload_interval)
            self.check()


def on_sighup(loop: asyncio.AbstractEventLoop, reloader: CertificateReloader) -> Callable[[], None]:
    """SIGHUP: re-read the certificate now, keep serving (its default action ends the process).

    Returns the function that restores the previous handler. Only the main thread may
    set signal handlers; a server run in another thread (tests) leaves SIGHUP alone.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handle(sig: int, frame: FrameType | None) -> None:
        log.info("SIGHUP: checking the certificate files now")
        loop.call_soon_threadsafe(reloader.check)

    previous = signal.signal(signal.SIGHUP, handle)

    def restore() -> None:
        signal.signal(signal.SIGHUP, previous)

    return restore
