"""Prometheus metrics. One registry per app so tests and benchmarks can run several."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


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
        self.ready = Gauge("tpu_admission_ready", "1 when the server is ready.", registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)
