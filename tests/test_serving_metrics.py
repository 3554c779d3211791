"""The request path's plain-dict counters export exactly what prometheus_client's own
Counter and Histogram would, for the same observations."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from webhook.serving.metrics import LATENCY_BUCKETS, LatencyHistogram, Metrics

OBSERVATIONS = [0.0001, 0.0005, 0.0005000001, 0.001, 0.02, 0.3, 1.0, 7.5]


def _without_created(text: bytes) -> list[str]:
    """Exposition lines minus the ``_created`` ones (they carry the wall clock of first use)."""
    return [line for line in text.decode().splitlines() if "_created" not in line]


def test_exposition_matches_prometheus_client() -> None:
    ours = Metrics()
    reference = CollectorRegistry()
    requests = Counter(
        "tpu_admission_requests_total",
        ours.requests.documentation,
        ["endpoint", "decision"],
        registry=reference,
    )
    findings = Counter(
        "tpu_admission_findings_total", ours.findings.documentation, ["rule", "action"], registry=reference
    )
    latency = Histogram(
        "tpu_admission_request_duration_seconds",
        ours.latency.documentation,
        ["endpoint"],
        buckets=LATENCY_BUCKETS,
        registry=reference,
    )
    Counter("tpu_admission_skipped_checks_total", ours.skipped.documentation, ["rule"], registry=reference)
    excepted = Counter(
        "tpu_admission_excepted_findings_total", ours.excepted.documentation, ["rule"], registry=reference
    )
    connections = Counter(
        "tpu_admission_connections_at_limit_total", ours.connections.documentation, ["outcome"], registry=reference
    )
    lines = Counter(
        "tpu_admission_simulate_lines_total", ours.simulate_lines.documentation, ["outcome"], registry=reference
    )

    for seconds in OBSERVATIONS:
        ours.latency.observe("validate", seconds)
        latency.labels("validate").observe(seconds)
    ours.latency.observe("mutate", 0.002)
    latency.labels("mutate").observe(0.002)
    for endpoint, decision in [("validate", "allowed"), ("validate", "allowed"), ("mutate", "denied")]:
        ours.requests.inc(endpoint, decision)
        requests.labels(endpoint, decision).inc()
    ours.findings.inc("suspend-forbidden", "deny")
    findings.labels("suspend-forbidden", "deny").inc()
    ours.excepted.inc("suspend-forbidden")
    excepted.labels("suspend-forbidden").inc()
    for outcome in ("closed_idle", "closed_idle", "refused"):
        ours.connections.inc(outcome)
        connections.labels(outcome).inc()
    for outcome in ("read", "left_out", "read"):
        ours.simulate_lines.inc(outcome)
        lines.labels(outcome).inc()

    expected = _without_created(generate_latest(reference))
    got = _without_created(ours.render())
    assert got[: len(expected)] == expected
    assert got[len(expected) :] == [
        "# HELP tpu_admission_ready 1 when the server is ready.",
        "# TYPE tpu_admission_ready gauge",
        "tpu_admission_ready 0.0",
    ]


def test_created_series_are_kept() -> None:
    metrics = Metrics()
    metrics.requests.inc("mutate", "allowed")
    metrics.latency.observe("mutate", 0.001)
    text = metrics.render().decode()
    assert 'tpu_admission_requests_created{decision="allowed",endpoint="mutate"} ' in text
    assert 'tpu_admission_request_duration_seconds_created{endpoint="mutate"} ' in text


@pytest.mark.parametrize(
    ("seconds", "bucket"),
    [(0.0, 0), (0.0005, 0), (0.00050001, 1), (1.0, 9), (1.0000001, 10), (1e9, 10)],
)
def test_a_bucket_holds_values_up_to_and_including_its_bound(seconds: float, bucket: int) -> None:
    histogram = LatencyHistogram()
    histogram.observe("validate", seconds)
    expected = [0] * (len(LATENCY_BUCKETS) + 1)
    expected[bucket] = 1
    assert histogram.counts["validate"] == expected
    assert histogram.sums["validate"] == seconds


def test_only_label_sets_counted_are_kept() -> None:
    metrics = Metrics()
    metrics.requests.inc("mutate", "denied")
    metrics.requests.inc("mutate", "denied")
    assert metrics.requests.values == {("mutate", "denied"): 2}
