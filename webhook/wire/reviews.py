"""The AdmissionReview wire format (``admission.k8s.io/v1``), in and out.

Two error families, as in kopf: a review that is malformed raises ``ReviewError``
(the server answers 4xx with the reason), while an object that breaks policy is a
normal answer with ``allowed: false``. Optional response fields are absent, not empty.

Decoding has two paths with one outcome. The fast path is msgspec decoding straight
into typed envelope structs: a well-formed review is checked by the C decoder as it is
read, and the object (and old object) is decoded in the same pass, as plain JSON (numbers
read as ``json.loads`` reads them: ``webhook.kube.quantity.json_number``), for the one
reader (``webhook.objects.readers.read_workload``, through the engine). The body is
decoded once. Anything the fast path does not accept, for whatever reason (a ``null``
where a string belongs, NaN, a lone surrogate, a UTF-16 body, nesting msgspec will not
follow, an integer too long for it, a wrong ``kind``, text that is not UTF-8), is decoded
again by ``json.loads`` and checked field by field, which is also where every 4xx reason
comes from. So the fast path never decides anything the general path would decide
differently; ``tests/test_wire_reviews.py`` answers the same bodies both ways and
compares the bytes.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import msgspec

from webhook.engine.decision import Decision
from webhook.engine.patches import JsonPatch
from webhook.kube.quantity import json_number
from webhook.objects.kinds import judged_kind
from webhook.objects.request import UserInfo
from webhook.wire.jsonwire import encode

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
#: a Kubernetes uid is a UUID (36 characters); anything much longer is not from an API server
MAX_UID = 256
OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class ReviewError(Exception):
    """The body is not a usable AdmissionReview; ``status`` is the HTTP code to answer."""

    def __init__(self, reason: str, status: int = 400) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


class AdmissionRequest(msgspec.Struct):
    """The request's fields the webhook reads, checked. A msgspec struct: made once per
    request, by a constructor that runs in C."""

    uid: str
    group: str
    version: str
    kind: str
    operation: str
    namespace: str
    name: str
    user: UserInfo
    #: the object as plain JSON (``None`` when absent or null): what
    #: ``webhook.objects.readers.read_workload`` reads
    object: Any
    old_object: Any
    dry_run: bool
    #: JobSet, Job or Deployment when the webhook judges this kind (``webhook.objects.kinds``),
    #: else ``None``; worked out once, as the review is read
    judged_kind: str | None

    @property
    def object_name(self) -> str:
        """``request.name``, else the object's ``metadata.name`` or ``generateName`` (a CREATE may have no name)."""
        if self.name:
            return self.name
        obj = self.object
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            name = obj["metadata"].get("name") or obj["metadata"].get("generateName")
            return name if isinstance(name, str) else ""
        return ""


def _field(data: dict[str, Any], key: str, kind: type, where: str, required: bool = False) -> Any:
    value = data.get(key)
    if value is None:
        if required:
            raise ReviewError(f"{where}{key} is missing")
        return kind()
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ReviewError(f"{where}{key} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _shown(value: Any) -> str:
    """A short, safe rendering of an untrusted value for an error message (no deep ``repr``)."""
    if isinstance(value, str):
        return repr(value if len(value) <= 100 else value[:100] + "...")
    return "null" if value is None else f"a value of type {type(value).__name__}"


class _Kind(msgspec.Struct):
    group: str = ""
    version: str = ""
    kind: str = ""


class _Request(msgspec.Struct, rename={"user_info": "userInfo", "old_object": "oldObject", "dry_run": "dryRun"}):
    """The fields we read, typed as the general path requires them; ``null`` is not accepted
    where the general path would substitute a default (that case takes the general path)."""

    uid: str
    operation: str
    kind: _Kind | None = None
    user_info: UserInfo | None = None
    namespace: str = ""
    name: str = ""
    #: plain JSON, decoded in the same pass: the objects are read by their kind's reader
    object: Any = None
    old_object: Any = None
    dry_run: bool = False


class _Envelope(msgspec.Struct, rename={"api_version": "apiVersion"}):
    kind: str
    api_version: str


class _Review(_Envelope):
    request: _Request


_FAST = msgspec.json.Decoder(_Review, float_hook=json_number)
_NO_KIND = _Kind()
_NO_USER = UserInfo()


def _fast_review(body: bytes) -> AdmissionRequest | None:
    """The review via msgspec's typed decoder, or ``None`` when the general path must look."""
    if not _is_utf8(body):
        return None  # the general path words the 400
    try:
        data = _FAST.decode(body)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    request = data.request
    if data.kind != KIND or data.api_version != API_VERSION or not 0 < len(request.uid) <= MAX_UID:
        return None  # the general path words the 4xx
    if request.operation not in OPERATIONS:
        return None
    kind = request.kind or _NO_KIND
    return AdmissionRequest(
        uid=request.uid,
        group=kind.group,
        version=kind.version,
        kind=kind.kind,
        operation=request.operation,
        namespace=request.namespace,
        name=request.name,
        user=request.user_info or _NO_USER,
        object=request.object,
        old_object=request.old_object,
        dry_run=request.dry_run,
        judged_kind=judged_kind(kind.group, kind.kind),
    )


def _is_utf8(body: bytes) -> bool:
    """Whether ``body`` is UTF-8 throughout, as the general path (``json.loads``) requires.

    msgspec checks the UTF-8 of the strings it decodes, not of those it skips: the
    fields the webhook does not read.
    """
    if body.isascii():  # ASCII is UTF-8, and the usual case: no decode to find out
        return True
    try:
        body.decode()
    except UnicodeDecodeError:
        return False
    return True


def parse_review(body: bytes) -> AdmissionRequest:
    """Decode the body once and check the envelope; the object inside is left to the engine."""
    fast = _fast_review(body)
    return fast if fast is not None else parse_review_general(body)


def parse_review_general(body: bytes) -> AdmissionRequest:
    """The general path: ``json.loads`` (NaN, UTF-16, lone surrogates) and a check per field."""
    try:
        data = json.loads(body, parse_float=json_number)  # a number as the text it was, as the fast path
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReviewError(f"body is not valid JSON: {exc}") from None
    except ValueError:  # valid JSON, but ``int()`` refuses an integer that long
        raise ReviewError(
            f"body holds an integer of more than {sys.get_int_max_str_digits()} digits; no AdmissionReview "
            "field takes one (the API server reads integers as 64-bit)"
        ) from None
    except RecursionError:
        raise ReviewError("body is nested too deeply to be an AdmissionReview") from None
    if not isinstance(data, dict):
        raise ReviewError(f"body must be a JSON object (an AdmissionReview), got {type(data).__name__}")
    if data.get("kind") != KIND:
        raise ReviewError(f"kind must be {KIND!r}, got {_shown(data.get('kind'))}")
    if data.get("apiVersion") != API_VERSION:
        raise ReviewError(
            f"apiVersion must be {API_VERSION!r}, got {_shown(data.get('apiVersion'))}; "
            "set admissionReviewVersions: [v1] in the webhook configuration"
        )
    request = _field(data, "request", dict, "", required=True)
    uid = _field(request, "uid", str, "request.", required=True)
    if not uid:
        raise ReviewError("request.uid is empty")
    if len(uid) > MAX_UID:
        # The answer echoes the uid: a megabyte uid would make a megabyte answer.
        raise ReviewError(f"request.uid is {len(uid)} characters long; the API server sends a UUID (36)")
    operation = _field(request, "operation", str, "request.", required=True)
    if operation not in OPERATIONS:
        raise ReviewError(f"request.operation {operation!r} is not one of {', '.join(sorted(OPERATIONS))}")
    kind = _field(request, "kind", dict, "request.")
    user = _field(request, "userInfo", dict, "request.")
    groups = _field(user, "groups", list, "request.userInfo.")
    group, kind_name = str(kind.get("group", "")), str(kind.get("kind", ""))
    return AdmissionRequest(
        uid=uid,
        group=group,
        version=str(kind.get("version", "")),
        kind=kind_name,
        operation=operation,
        namespace=_field(request, "namespace", str, "request."),
        name=_field(request, "name", str, "request."),
        user=UserInfo(
            username=_field(user, "username", str, "request.userInfo."),
            groups=tuple(g for g in groups if isinstance(g, str)),
        ),
        object=request.get("object"),
        old_object=request.get("oldObject"),
        dry_run=_field(request, "dryRun", bool, "request."),
        judged_kind=judged_kind(group, kind_name),
    )


def review_response(uid: str, decision: Decision) -> dict[str, Any]:
    """The AdmissionReview to answer with. Pure: same decision, same bytes."""
    response: dict[str, Any] = {"uid": uid, "allowed": decision.allowed}
    if not decision.allowed:
        response["status"] = {"code": 403, "reason": "Forbidden", "message": decision.deny_message()}
    if decision.warnings:
        response["warnings"] = list(decision.warnings)
    if decision.patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = patch_wire(decision.patch)
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def patch_wire(patch: JsonPatch) -> str:
    """``patch`` as an AdmissionReview response carries it: base64 of its JSON."""
    return base64.b64encode(encode(patch)).decode("ascii")


def error_response(uid: str, message: str) -> dict[str, Any]:
    """A refusal for a request the webhook could not judge (an internal fault)."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "response": {
            "uid": uid,
            "allowed": False,
            "status": {"code": 500, "reason": "InternalError", "message": message},
        },
    }
