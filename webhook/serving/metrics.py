"""Prometheus metrics. One registry per app so tests and benchmarks can run several.

The request path counts in plain dicts and the numbers become Prometheus families only
when ``/metrics`` is scraped: a prometheus_client child takes a lock per ``.inc()`` (and
a histogram one per bucket step), and none is needed here: requests and scrapes (the
app's ``/metrics`` and ``metrics_port``'s listener) all run on the server's one event
loop thread.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.samples import Sample

from webhook.engine.decision import Decision

#: seconds; the request path is well under a millisecond, a cold cluster check a few
LATENCY_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class LabelledCounter:
    """A counter family kept as ``{label values: count}``; exported as prometheus_client
    would export a ``Counter`` (``_total`` and ``_created`` per label set)."""

    def __init__(self, name: str, documentation: str, labels: tuple[str, ...]) -> None:
        self.name = name
        self.documentation = documentation
        self.labels = labels
        self.values: dict[tuple[str, ...], int] = {}
        self.created: dict[tuple[str, ...], float] = {}

    def inc(self, *values: str) -> None:
        counts = self.values
        if values in counts:
            counts[values] += 1
        else:
            counts[values] = 1
            self.created[values] = time.time()

    def family(self) -> CounterMetricFamily:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labels)
        for values, count in self.values.items():
            family.add_metric(values, count, created=self.created[values])
        return family


class LatencyHistogram:
    """``tpu_admission_request_duration_seconds`` per endpoint: a bucket index found by
    bisection and two additions per request, exported as a ``Histogram`` would be."""

    name = "tpu_admission_request_duration_seconds"
    documentation = "Time to decide one admission request, from body read to response built."

    def __init__(self, buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.bounds = buckets
        #: endpoint -> per-bucket counts (not cumulative), the last one for +Inf
        self.counts: dict[str, list[int]] = {}
        self.sums: dict[str, float] = {}
        self.created: dict[str, float] = {}

    def observe(self, endpoint: str, seconds: float) -> None:
        counts = self.counts.get(endpoint)
        if counts is None:
            counts = self.counts[endpoint] = [0] * (len(self.bounds) + 1)
            self.sums[endpoint] = 0.0
            self.created[endpoint] = time.time()
        counts[bisect_left(self.bounds, seconds)] += 1  # a bucket holds values <= its bound
        self.sums[endpoint] += seconds

    def family(self) -> HistogramMetricFamily:
        family = HistogramMetricFamily(self.name, self.documentation, labels=["endpoint"])
        # repr is how prometheus_client writes these bounds too (tests/test_serving_metrics.py compares)
        edges = [repr(float(bound)) for bound in self.bounds] + ["+Inf"]
        for endpoint, counts in self.counts.items():
            cumulative, total = [], 0
            for edge, count in zip(edges, counts, strict=True):
                total += count
                cumulative.append((edge, float(total)))
            family.add_metric([endpoint], cumulative, self.sums[endpoint])
            family.samples.append(Sample(f"{self.name}_created", {"endpoint": endpoint}, self.created[endpoint]))
        return family


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = LabelledCounter(
            "tpu_admission_requests",
            "Admission requests by endpoint and decision (allowed, denied, invalid, error).",
            ("endpoint", "decision"),
        )
        self.findings = LabelledCounter(
            "tpu_admission_findings", "Findings by rule and action (deny, warn).", ("rule", "action")
        )
        self.latency = LatencyHistogram()
        self.skipped = LabelledCounter(
            "tpu_admission_skipped_checks",
            "Cluster-aware checks skipped because the cluster state they need is unknown.",
            ("rule",),
        )
        self.excepted = LabelledCounter(
            "tpu_admission_excepted_findings",
            "Findings a policy exception turned into warnings, by rule (also in tpu_admission_findings_total as warn).",
            ("rule",),
        )
        self.connections = LabelledCounter(
            "tpu_admission_connections_at_limit",
            "New connections at server.maxConnections: an idle kept-alive connection closed to make room "
            "(closed_idle), or the new one closed because every connection was busy (refused).",
            ("outcome",),
        )
        self.simulate_lines = LabelledCounter(
            "tpu_admission_simulate_lines",
            "Validating calls of admitted creates by what became of their [simulate] line: read (already "
            "worked out for the snapshot) or left_out (not worked out yet: answered without it, never waited for).",
            ("outcome",),
        )
        self.registry.register(_RequestCollector(self))
        self.ready = Gauge("tpu_admission_ready", "1 when the server is ready.", registry=self.registry)

    def answered(self, endpoint: str, decision: Decision, seconds: float) -> None:
        """One judged request, counted once its answer is sent: its time, its decision
        and what it found (one call, so the request path pays one)."""
        self.latency.observe(endpoint, seconds)
        self.requests.inc(endpoint, "allowed" if decision.allowed else "denied")
        if decision.findings:
            findings = self.findings
            for finding in decision.findings:
                findings.inc(finding.rule, finding.action.value)
        if decision.skipped:
            for rule_id in decision.skipped:
                self.skipped.inc(rule_id)
        if decision.excepted:
            for rule_id in decision.excepted:
                self.excepted.inc(rule_id)

    def observe_cluster(self, kinds: Callable[[], Iterable[tuple[str, bool, float | None, float | None]]]) -> None:
        """Per-kind cluster cache gauges, read from ``kinds()`` at each scrape."""
        self.registry.register(_ClusterCollector(kinds))

    def observe_caches(self, caches: Callable[[], Iterable[tuple[str, int, int]]]) -> None:
        """Per-cache entries and bytes, read from ``caches()`` at each scrape."""
        self.registry.register(_CacheCollector(caches))

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _RequestCollector:
    """The request path's counts as Prometheus families, built at each scrape."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Any]:
        metrics = self.metrics
        yield metrics.requests.family()
        yield metrics.findings.family()
        yield metrics.latency.family()
        yield metrics.skipped.family()
        yield metrics.excepted.family()
        yield metrics.connections.family()
        yield metrics.simulate_lines.family()


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


class _CacheCollector:
    """``tpu_admission_cache_entries`` and ``…_cache_bytes`` per cache, computed on scrape."""

    def __init__(self, caches: Callable[[], Iterable[tuple[str, int, int]]]) -> None:
        self.caches = caches

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        entries = GaugeMetricFamily(
            "tpu_admission_cache_entries",
            "Entries held by each bounded cache (the current snapshot's memos, the watch cache's sharing table).",
            labels=["cache"],
        )
        held = GaugeMetricFamily(
            "tpu_admission_cache_bytes",
            "Bytes held by each bounded cache, as its bound counts them (strings exactly, the rest estimated).",
            labels=["cache"],
        )
        for cache, count, size in self.caches():
            entries.add_metric([cache], float(count))
            held.add_metric([cache], float(size))
        yield entries
        yield held
