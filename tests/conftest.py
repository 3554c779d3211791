from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support import RunningServer, running_server

from webhook.policy.config import Policy
from webhook.serving import certs
from webhook.serving.runner import TlsSettings


@pytest.fixture(scope="session")
def cert_files(tmp_path_factory: pytest.TempPathFactory) -> certs.CertificateFiles:
    """A CA and serving certificate made by our own code, for every TLS test."""
    files, generated = certs.ensure(Path(tmp_path_factory.mktemp("certs")))
    assert generated
    return files


@pytest.fixture(scope="session")
def tls(cert_files: certs.CertificateFiles) -> TlsSettings:
    return TlsSettings(cert=cert_files.cert, key=cert_files.key)


@pytest.fixture(scope="session")
def static_server(tls: TlsSettings) -> Iterator[RunningServer]:
    """The server on the default policy (static mode), shared by the HTTP tests."""
    with running_server(Policy(), tls) as server:
        yield server


@pytest.fixture(scope="session")
def dynamic_server(tls: TlsSettings) -> Iterator[RunningServer]:
    with running_server(Policy(mode="dynamic"), tls) as server:
        yield server


@pytest.fixture(scope="session")
def client(cert_files: certs.CertificateFiles) -> Iterator[httpx.Client]:
    """An HTTPS client that verifies the server against the generated ``ca.crt``."""
    context = ssl.create_default_context(cafile=str(cert_files.ca))
    with httpx.Client(verify=context, timeout=10) as http:
        yield http
