"""Prometheus metrics. One registry per app so tests and benchmarks can run several.

The request path never calls ``.labels()``: each labelled child is looked up once and
kept in a dict keyed by its label values (``.labels()`` validates and joins the values
and takes a lock on every call: about a microsecond, per request and per finding).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "tpu_admission_requests_total",
            "Admission requests by endpoint and decision (allowed, denied, invalid, error).",
            ["endpoint", "decision"],
            registry=self.registry,
        )
        self.findings = Counter(
            "tpu_admission_findings_total",
            "Findings by rule and action (deny, warn).",
            ["rule", "action"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "tpu_admission_request_duration_seconds",
            "Time to decide one admission request, from body read to response built.",
            ["endpoint"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
            registry=self.registry,
        )
        self.skipped = Counter(
            "tpu_admission_skipped_checks_total",
            "Cluster-aware checks skipped because the cluster state they need is unknown.",
            ["rule"],
            registry=self.registry,
        )
        self.excepted = Counter(
            "tpu_admission_excepted_findings_total",
            "Findings a policy exception turned into warnings, by rule (also in tpu_admission_findings_total as warn).",
            ["rule"],
            registry=self.registry,
        )
        self.ready = Gauge("tpu_admission_ready", "1 when the server is ready.", registry=self.registry)
        # family -> label values -> bound child
        self._children: dict[int, dict[tuple[str, ...], Any]] = {}

    def _child(self, family: Any, labels: tuple[str, ...]) -> Any:
        children = self._children.setdefault(id(family), {})
        child = children.get(labels)
        if child is None:
            child = children[labels] = family.labels(*labels)
        return child

    def requests_child(self, endpoint: str, decision: str) -> Any:
        """The bound ``tpu_admission_requests_total`` child (``.inc()`` it)."""
        return self._child(self.requests, (endpoint, decision))

    def findings_child(self, rule: str, action: str) -> Any:
        return self._child(self.findings, (rule, action))

    def skipped_child(self, rule: str) -> Any:
        return self._child(self.skipped, (rule,))

    def excepted_child(self, rule: str) -> Any:
        return self._child(self.excepted, (rule,))

    def latency_child(self, endpoint: str) -> Any:
        """The bound ``tpu_admission_request_duration_seconds`` child (``.observe()`` it)."""
        return self._child(self.latency, (endpoint,))

    def observe_cluster(self, kinds: Callable[[], Iterable[tuple[str, bool, float | None, float | None]]]) -> None:
        """Per-kind cluster cache gauges, read from ``kinds()`` at each scrape."""
        self.registry.register(_ClusterCollector(kinds))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _ClusterCollector:
    """``tpu_admission_cluster_synced`` and ``…_cache_age_seconds`` per kind, computed on scrape."""

    def __init__(self, kinds: Callable[[], Iterable[tuple[str, bool, float | None, float | None]]]) -> None:
        self.kinds = kinds

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        synced = GaugeMetricFamily(
            "tpu_admission_cluster_synced",
            "1 when the cached kind can be read (synced, not stale, not forbidden or absent).",
            labels=["kind"],
        )
        age = GaugeMetricFamily(
            "tpu_admission_cluster_cache_age_seconds",
            "Seconds since the cached kind was last known current (0 while its watch is open); "
            "-1 before its first sync.",
            labels=["kind"],
        )
        last_event = GaugeMetricFamily(
            "tpu_admission_cluster_last_event_age_seconds",
            "Seconds since the last watch event of the kind (a quiet watch is not a broken one, "
            "but a long silence on Workloads is worth a look); -1 before the first event.",
            labels=["kind"],
        )
        for kind, usable, seconds, since_event in self.kinds():
            synced.add_metric([kind], 1.0 if usable else 0.0)
            age.add_metric([kind], -1.0 if seconds is None else seconds)
            last_event.add_metric([kind], -1.0 if since_event is None else since_event)
        yield synced
        yield age
        yield last_event
