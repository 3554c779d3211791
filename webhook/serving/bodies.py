"""A request's JSON body read within a limit: the admission paths' and the advisor's one reader.

A body is refused as soon as it is known to pass the limit (declared in ``content-length``,
or counted as it arrives), so a client cannot make the server hold more than the limit;
a connection that ends first is nobody to answer.
"""

from __future__ import annotations

from starlette.types import Receive, Scope


class ClientGone(Exception):
    """The connection ended (or missed its deadline) before the whole body came: nobody to answer."""


class BodyTooLarge(Exception):
    """The body passes the limit; the message says by how much it is known to."""


def body_headers(scope: Scope) -> tuple[bytes | None, bytes | None]:
    """``(content-type, content-length)`` of the request (the first of each), in one pass."""
    media = length = None
    for key, value in scope["headers"]:
        if key == b"content-type":
            if media is None:
                media = value
        elif key == b"content-length" and length is None:
            length = value
    return media, length


def is_json(media: bytes | None) -> bool:
    """Whether a content-type names JSON (parameters such as ``charset`` aside)."""
    return (media or b"").split(b";", 1)[0].strip().lower() == b"application/json"


async def read_body(receive: Receive, declared: bytes | None, limit: int) -> bytes:
    """The whole body, or ``BodyTooLarge`` once it is known to pass ``limit``, or ``ClientGone``."""
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"body of {declared.decode()} bytes is over the limit of {limit}")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"body is over the limit of {limit} bytes")
        if not message.get("more_body", False):
            # usually the whole body came in one message: nothing to join
            return b"".join((*chunks, chunk)) if chunks else chunk
        chunks.append(chunk)
