"""The server's cluster state: list + watch per kind with the official ``kubernetes`` client.

One daemon thread per kind runs a loop shaped like client-go's reflector:

- list (paged) and replace the kind's objects in one step, then watch from the list's
  resourceVersion, resuming after every drop from the last resourceVersion seen (an
  event's or a bookmark's), so a dropped connection costs a re-watch, not a relist;
- a ``410 Gone`` on the watch relists; a ``410`` on a continued list page (the continue
  token expired) falls back to one full, unpaged list, as client-go's pager does;
- every failure backs off (doubling, capped, with jitter so replicas do not retry in
  step), including a 410 and a watch that ends at once with nothing in it ("very short
  watch": a server that accepts and closes would otherwise be hammered); a watch that
  delivered something resets the backoff;
- each watch asks for a random timeout between ``watch_seconds`` and twice that
  (client-go: 5 to 10 minutes), so replicas and kinds do not all re-watch together;
- the read timeout is the silence bound (two bookmark intervals): the API server sends
  a bookmark on an open watch about once a minute, so a hung server is noticed by the
  read timing out, and meanwhile ``Availability`` already reports the kind as silent.

The request path never calls the API server: it reads a snapshot of the
``ClusterStore`` these threads keep current (``webhook.cluster.snapshot``). A cluster
that cannot be reached leaves the kinds unavailable (their rules are skipped with a
warning); serving never waits for it.

Objects are read as plain JSON (``_preload_content=False``), not as generated model
classes: deserialising 100,000 Workloads into models would cost minutes and gigabytes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from webhook.cluster import kinds as k
from webhook.cluster.client import ClusterConfigError, list_call, load_configuration
from webhook.cluster.store import ClusterStore
from webhook.policy.config import Policy

log = logging.getLogger("tpu_admission.cluster")


@dataclass(frozen=True, slots=True)
class WatchSettings:
    page_size: int = 500
    #: shortest server-side timeout of one watch; each asks for a random one up to twice this
    watch_seconds: int = 300
    connect_timeout: float = 5.0
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    #: a kind whose watch is broken longer than this is unknown, not "as it was"
    stale_after: float = 120.0
    #: how often the API server sends a bookmark on an open watch; silence for twice this is unknown
    bookmark_interval: float = 60.0
    #: a watch that ends sooner than this with no event is a failure, not a renewal
    short_watch: float = 1.0

    @property
    def silent_after(self) -> float:
        return 2 * self.bookmark_interval

    @classmethod
    def from_policy(cls, policy: Policy) -> WatchSettings:
        """The policy's ``cluster:`` section (every knob is a config key)."""
        c = policy.cluster
        return cls(
            page_size=c.page_size,
            watch_seconds=c.watch_seconds,
            connect_timeout=c.connect_timeout_seconds,
            backoff_initial=c.backoff_initial_seconds,
            backoff_max=c.backoff_max_seconds,
            stale_after=c.stale_after_seconds,
            bookmark_interval=c.bookmark_interval_seconds,
        )


class _Expired(Exception):
    """The watch's resourceVersion is too old (410 Gone): relist."""


class _ShortWatch(Exception):
    """The watch ended at once with nothing in it: back off before the next one."""


def backoff_delay(base: float, rand: Callable[[], float] = random.random) -> float:
    """``base`` spread over [0.5, 1.5) × base: replicas that failed together retry apart."""
    return base * (0.5 + rand())


def describe_error(exc: BaseException) -> str:
    status = getattr(exc, "status", None)
    if status == 403:
        return "forbidden (403): the webhook's service account may not list/watch it; check its RBAC"
    if status == 404:
        return "absent (404): the API server does not serve this kind (CRD not installed?)"
    if status == 401:
        return "unauthorized (401): the credentials were refused"
    if isinstance(status, int) and status:
        reason = getattr(exc, "reason", "") or ""
        return f"API error {status}: {reason}".rstrip(": ")
    return f"API server unreachable: {transport_problem(exc)}"


def transport_problem(exc: BaseException) -> str:
    """Why no answer came, in the operating system's words when it has them.

    The HTTP client wraps the cause twice (``MaxRetryError`` → ``NewConnectionError`` →
    ``ConnectionRefusedError``), and its message repeats the pool, the URL and the cause's
    own text; cut to a bounded length it lost the cause (``…Failed to establish``). The
    innermost ``OSError`` with a reason says it whole: ``Connection refused``, ``Name or
    service not known``, a TLS verification failure.
    """
    reason = getattr(exc, "reason", None)  # urllib3's MaxRetryError keeps the last attempt's error
    error = reason if isinstance(reason, BaseException) else exc
    cause: BaseException | None = error
    for _ in range(8):  # a chain is a few links; never walk a cycle
        if cause is None:
            break
        if isinstance(cause, OSError) and cause.strerror:
            return str(cause.strerror)[:300]
        cause = cause.__cause__ or cause.__context__
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:300]


class WatchCache(ClusterStore):
    """A ``ClusterStore`` kept current by list + watch threads."""

    def __init__(self, policy: Policy, api_client: Any, settings: WatchSettings | None = None) -> None:
        self.settings = settings or WatchSettings.from_policy(policy)
        super().__init__(policy, stale_after=self.settings.stale_after)
        self.availability.silent_after = self.settings.silent_after
        self.api_client = api_client
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._responses: dict[str, Any] = {}
        #: per kind, the last resourceVersion seen (list, event or bookmark); ``None``: relist
        self.versions: dict[str, str | None] = {kind.name: None for kind in k.WATCHED}

    def start(self) -> WatchCache:
        for kind in k.WATCHED:
            thread = threading.Thread(target=self._run, args=(kind,), name=f"watch-{kind.plural}", daemon=True)
            self._threads.append(thread)
            thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        for response in list(self._responses.values()):
            with contextlib.suppress(Exception):  # best effort: the threads are daemons anyway
                response.shutdown()
        for thread in self._threads:
            thread.join(timeout)

    # ---------------------------------------------------------------- the loop

    def _run(self, kind: k.Kind) -> None:
        backoff = self.settings.backoff_initial
        last_error: str | None = None
        while not self._stopping.is_set():
            try:
                if self.versions[kind.name] is None:
                    self.versions[kind.name] = self._list(kind)
                    if last_error is not None:
                        log.info("%s: synced again", kind.name)
                        last_error = None
                if self._watch(kind):
                    backoff = self.settings.backoff_initial  # it delivered: the server is fine
                continue
            except _Expired:
                self.versions[kind.name] = None  # events were lost, not the server: relist
                self.availability.broken(kind.name, None)
                log.info("%s: the watch's resourceVersion is too old (410 Gone); listing again", kind.name)
            except _ShortWatch:
                self.availability.broken(kind.name, None)
            except Exception as exc:  # every failure is a reason, never a crash
                if self._stopping.is_set():
                    break
                status = getattr(exc, "status", None)
                if status == 410:
                    self.versions[kind.name] = None
                error = describe_error(exc)
                self.availability.broken(kind.name, error, fatal=status in (403, 404))
                if error != last_error:
                    log.warning("%s: %s; its checks are skipped while unknown", kind.name, error)
                    last_error = error
            self._stopping.wait(backoff_delay(backoff))
            backoff = min(backoff * 2, self.settings.backoff_max)

    def _list(self, kind: k.Kind) -> str:
        versions: list[str] = []
        try:
            objects = list(self._pages(kind, versions, self.settings.page_size))
        except Exception as exc:
            if getattr(exc, "status", None) != 410 or len(versions) == 0:
                raise
            # The continue token expired between pages (client-go's pager: fall back to
            # one full list). The pages already read are dropped: they are a different
            # snapshot from the full list.
            log.info("%s: the list's continue token expired; listing in one page", kind.name)
            versions.clear()
            objects = list(self._pages(kind, versions, None))
        # All pages in hand: a kind requests read changes in one step (a first list, which
        # nothing reads yet, in chunks so that requests reading other kinds do not wait).
        self.replace(kind, objects, atomic=self.availability.status[kind.name].synced)
        self.availability.listed(kind.name)
        return versions[-1] if versions else ""

    def _pages(self, kind: k.Kind, versions: list[str], page_size: int | None) -> Iterator[dict[str, Any]]:
        call = list_call(self.api_client, kind, k.named(kind, self.policy))
        token: str | None = None
        timeout = (self.settings.connect_timeout, 60.0)
        while True:
            options: dict[str, Any] = {"limit": page_size} if page_size else {}
            if token:
                options["_continue"] = token
            response = call(**options, _preload_content=False, _request_timeout=timeout)
            try:
                body = json.loads(response.data)
            finally:
                response.release_conn()
            metadata = body.get("metadata") or {}
            versions.append(str(metadata.get("resourceVersion") or ""))
            for item in body.get("items") or ():
                yield k.typed(kind, item) if isinstance(item, dict) else item
            token = metadata.get("continue")
            if not token:
                return

    def _watch(self, kind: k.Kind) -> bool:
        """One watch from the last version seen; whether it delivered anything."""
        from kubernetes.client.exceptions import ApiException
        from kubernetes.watch.watch import iter_resp_lines

        settings = self.settings
        seconds = random.randint(settings.watch_seconds, 2 * settings.watch_seconds)
        started = time.monotonic()
        response = list_call(self.api_client, kind, k.named(kind, self.policy))(
            watch=True,
            resource_version=self.versions[kind.name],
            allow_watch_bookmarks=True,
            timeout_seconds=seconds,
            _preload_content=False,
            # a read that waits longer than the silence bound means a hung server
            _request_timeout=(settings.connect_timeout, settings.silent_after),
        )
        self._responses[kind.name] = response
        self.availability.watching(kind.name)
        delivered = False
        try:
            if self._stopping.is_set():  # stop() may have shut the responses before this one
                return True
            for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                if self._stopping.is_set():
                    return True
                if not line:
                    continue
                event = json.loads(line)
                kind_of_event = event.get("type")
                obj = event.get("object") or {}
                if kind_of_event == "ERROR":
                    if obj.get("code") == 410:
                        raise _Expired()
                    raise ApiException(status=obj.get("code"), reason=obj.get("message"))
                if kind_of_event in ("ADDED", "MODIFIED", "DELETED"):
                    self.apply(kind, kind_of_event, obj)
                    self.availability.event(kind.name)
                else:  # BOOKMARK: nothing changed up to its resourceVersion
                    self.availability.bookmark(kind.name)
                version = (obj.get("metadata") or {}).get("resourceVersion")
                if version:
                    self.versions[kind.name] = str(version)
                delivered = True
        finally:
            self._responses.pop(kind.name, None)
            response.release_conn()
        if not delivered and time.monotonic() - started < settings.short_watch:
            raise _ShortWatch()
        return delivered


def start_watch_cache(kubeconfig: str | None, policy: Policy, settings: WatchSettings | None = None) -> WatchCache:
    """Load the cluster config (``kubeconfig`` or in-cluster) and start watching.

    Never raises for the cluster's sake: a config that cannot be loaded leaves every
    kind unavailable with the reason, and the server serves the structural rules.
    """
    from kubernetes import client

    try:
        configuration = load_configuration(kubeconfig)
    except ClusterConfigError as exc:  # a reason for every skipped check, not a crash
        reason = str(exc)
        log.error("%s; cluster-aware checks are skipped", reason)
        cache = WatchCache(policy, None, settings)
        for kind in k.WATCHED:
            cache.availability.mark_absent(kind.name, reason)
        return cache
    configuration.connection_pool_maxsize = len(k.WATCHED) * 2
    return WatchCache(policy, client.ApiClient(configuration), settings).start()
