"""The front-proxy settings as the API server publishes them, and who a request names."""

from __future__ import annotations

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from webhook.advisor.frontproxy import Caller, FrontProxy, Unauthenticated
from webhook.serving import certs


def _der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


CA, CA_KEY = certs.new_ca("front-proxy-ca")
OTHER_CA, OTHER_KEY = certs.new_ca("front-proxy-ca")  # the same name, another key
PROXY = _der(certs.issue(CA, CA_KEY, ["front-proxy-client"], client=True)[0])
FORGED = _der(certs.issue(OTHER_CA, OTHER_KEY, ["front-proxy-client"], client=True)[0])


def test_the_configmap_settings_are_read_with_their_json_lists() -> None:
    proxy = FrontProxy.from_configmap(
        {
            "requestheader-client-ca-file": CA.decode(),
            "requestheader-allowed-names": '["front-proxy-client"]',
            "requestheader-username-headers": '["X-Remote-User"]',
            "requestheader-group-headers": '["X-Remote-Group"]',
            "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        }
    )
    headers = [
        (b"x-remote-user", b"alice"),
        (b"x-remote-group", b"team-a"),
        (b"x-remote-group", b"system:authenticated"),
        (b"x-remote-extra-acme.com%2fproject", b"p1"),
    ]
    assert proxy.caller(PROXY, headers) == Caller(
        "alice", ("team-a", "system:authenticated"), {"acme.com/project": ("p1",)}
    )


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({}, "requestheader-client-ca-file is not set"),
        ({"requestheader-client-ca-file": "junk"}, "Unable to load PEM"),
        ({"requestheader-client-ca-file": CA.decode(), "requestheader-allowed-names": "[1]"}, "not a JSON list"),
    ],
)
def test_unusable_settings_name_the_key(data: dict[str, str], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        FrontProxy.from_configmap(data)


@pytest.mark.parametrize(
    ("cert", "names", "why"),
    [
        (None, (), "no client certificate"),
        (FORGED, (), "not issued by the requestheader client CA"),
        (PROXY, ("aggregator",), "is not an allowed name"),
    ],
)
def test_the_headers_are_believed_only_under_the_front_proxy_certificate(
    cert: bytes | None, names: tuple[str, ...], why: str
) -> None:
    proxy = FrontProxy.from_pem(CA, names)
    with pytest.raises(Unauthenticated, match=why):
        proxy.caller(cert, [(b"x-remote-user", b"system:admin")])
