"""Who is asking: the caller the kube-apiserver names in its front-proxy headers.

The advisor is an aggregated API: the API server authenticates the caller, authorizes the
request with RBAC, and proxies it here over TLS with a client certificate of its own (the
"front-proxy" or requestheader client). The caller's identity then travels in headers
(``X-Remote-User``, ``X-Remote-Group``, ``X-Remote-Extra-<key>`` by default). Anyone who
reaches the port can write those headers, so they are believed only on a connection whose
client certificate was issued by the requestheader client CA, and, when the API server
publishes allowed names, whose common name is one of them. Anything else is no caller at
all (401).

The settings are what the API server publishes in the ``extension-apiserver-authentication``
ConfigMap of ``kube-system`` (``requestheader-*`` keys); flags can give them too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.x509.oid import NameOID

#: the ConfigMap the API server publishes its authentication settings in
CONFIGMAP_NAMESPACE = "kube-system"
CONFIGMAP_NAME = "extension-apiserver-authentication"


class Unauthenticated(Exception):
    """The request names no caller the advisor may believe; the message says why (for the log)."""


@dataclass(frozen=True)
class Caller:
    """The caller as the API server authenticated it: what a SubjectAccessReview is asked about."""

    user: str
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class FrontProxy:
    """The requestheader settings: the CA, the allowed names and the header names."""

    client_ca: tuple[x509.Certificate, ...]
    allowed_names: frozenset[str] = frozenset()
    username_headers: tuple[str, ...] = ("x-remote-user",)
    group_headers: tuple[str, ...] = ("x-remote-group",)
    extra_prefixes: tuple[str, ...] = ("x-remote-extra-",)

    @classmethod
    def from_pem(
        cls,
        client_ca_pem: bytes,
        allowed_names: Iterable[str] = (),
        username_headers: Sequence[str] = ("X-Remote-User",),
        group_headers: Sequence[str] = ("X-Remote-Group",),
        extra_prefixes: Sequence[str] = ("X-Remote-Extra-",),
    ) -> FrontProxy:
        """Raises ``ValueError`` when the CA holds no PEM certificate or no username header is named."""
        client_ca = tuple(x509.load_pem_x509_certificates(client_ca_pem))
        if not username_headers:
            raise ValueError("no username header: the API server names the caller in one")
        return cls(
            client_ca,
            frozenset(allowed_names),
            tuple(h.lower() for h in username_headers),
            tuple(h.lower() for h in group_headers),
            tuple(h.lower() for h in extra_prefixes),
        )

    @classmethod
    def from_configmap(cls, data: Mapping[str, str]) -> FrontProxy:
        """From the ``extension-apiserver-authentication`` ConfigMap's data (its lists are JSON arrays).

        Raises ``ValueError`` naming the key that is missing or unreadable.
        """
        pem = data.get("requestheader-client-ca-file")
        if not pem:
            raise ValueError(
                "requestheader-client-ca-file is not set: the API server has no front-proxy client "
                "(--requestheader-client-ca-file), so it cannot call an aggregated API"
            )

        def names(key: str, default: Sequence[str]) -> list[str]:
            text = data.get(key)
            if text is None:
                return list(default)
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{key}: not a JSON list: {exc}") from None
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise ValueError(f"{key}: not a JSON list of strings")
            return value

        return cls.from_pem(
            pem.encode(),
            names("requestheader-allowed-names", ()),
            names("requestheader-username-headers", ("X-Remote-User",)),
            names("requestheader-group-headers", ("X-Remote-Group",)),
            names("requestheader-extra-headers-prefix", ("X-Remote-Extra-",)),
        )

    def issued_by_ca(self, cert: x509.Certificate) -> bool:
        for ca in self.client_ca:
            try:
                cert.verify_directly_issued_by(ca)
            except (ValueError, TypeError, InvalidSignature):
                continue
            return True
        return False

    def caller(self, client_cert_der: bytes | None, headers: Iterable[tuple[bytes, bytes]]) -> Caller:
        """The caller of one request, or ``Unauthenticated``.

        ``client_cert_der``: the connection's client certificate (the TLS layer has verified
        it against the CAs it trusts; here it must be one the requestheader CA issued).
        ``headers``: the request's, as ASGI gives them (lower-case names).
        """
        if client_cert_der is None:
            raise Unauthenticated("no client certificate: only the API server's front-proxy client may call")
        try:
            cert = x509.load_der_x509_certificate(client_cert_der)
        except ValueError:
            raise Unauthenticated("the client certificate cannot be read") from None
        if not self.issued_by_ca(cert):
            raise Unauthenticated("the client certificate is not issued by the requestheader client CA")
        if self.allowed_names:
            common = [a.value for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
            if not any(name in self.allowed_names for name in common):
                raise Unauthenticated(f"the client certificate's common name {common!r} is not an allowed name")
        values: dict[str, list[str]] = {}
        for key, value in headers:
            values.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
        user = next((v[0] for h in self.username_headers if (v := values.get(h)) and v[0]), "")
        if not user:
            raise Unauthenticated("no user in the front-proxy headers")
        groups = tuple(g for h in self.group_headers for g in values.get(h, ()))
        extra: dict[str, list[str]] = {}
        for name, found in values.items():
            for prefix in self.extra_prefixes:
                if name.startswith(prefix) and len(name) > len(prefix):
                    extra.setdefault(unquote(name[len(prefix) :]), []).extend(found)
        return Caller(user, groups, {k: tuple(v) for k, v in extra.items()})


def read_configmap(api_client: Any) -> dict[str, str]:
    """The published ConfigMap's data, read once at startup with the advisor's own credentials."""
    from kubernetes import client

    configmap = client.CoreV1Api(api_client).read_namespaced_config_map(CONFIGMAP_NAME, CONFIGMAP_NAMESPACE)
    return dict(configmap.data or {})
