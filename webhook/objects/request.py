"""Who sent a request: the one fact about an admission request besides its object that the
rules read. Here, below both the review decoder (``webhook.wire``) that fills it in and the
rules (``webhook.rules``) that read it."""

from __future__ import annotations

import msgspec


class UserInfo(msgspec.Struct, frozen=True):
    """The request's ``userInfo``: the user name and groups (``queue-not-permitted``, ``suspend-set``)."""

    username: str = ""
    groups: tuple[str, ...] = ()
