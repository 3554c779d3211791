"""What the API server would refuse, refused the same way (``webhook.objects.apivalidation``)."""

from __future__ import annotations

from typing import Any

from builders import jobset

from webhook.objects.apivalidation import LABEL_RULE, SUBDOMAIN_RULE, VALUE_RULE, printable, printable_json, refusals

TPU = "google.com/tpu"


def workload(name: str = "w", count: Any = 1, tpu: Any = "4", podset: str = "main") -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {TPU: tpu}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {
            "queueName": "team-a-queue",
            "podSets": [{"name": podset, "count": count, "template": {"spec": {"containers": [container]}}}],
        },
    }


def test_a_valid_workload_and_jobset_are_not_refused() -> None:
    assert refusals(workload()) == []
    assert refusals(jobset().obj()) == []
    assert refusals(workload(count=0, tpu=0)) == []  # zero is a count and a quantity the API server takes


def test_negative_counts_and_quantities_are_refused_as_the_api_server_refuses_them() -> None:
    assert refusals(workload(count=-1, tpu="-64")) == [
        'spec.podSets[0].count: Invalid value: "-1": must be greater than or equal to 0',
        f'spec.podSets[0].template.spec.containers[0].resources.requests[{TPU}]: Invalid value: "-64": '
        "must be greater than or equal to 0",
    ]
    assert refusals(workload(tpu="four")) == [
        f'spec.podSets[0].template.spec.containers[0].resources.requests[{TPU}]: Invalid value: "four": '
        "quantities must match the regular expression of a Kubernetes quantity"
    ]
    job = jobset().obj()
    job["spec"]["replicatedJobs"][0]["replicas"] = -2
    job["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"] = -1
    assert refusals(job) == [
        'spec.replicatedJobs[0].replicas: Invalid value: "-2": must be greater than or equal to 0',
        'spec.replicatedJobs[0].template.spec.parallelism: Invalid value: "-1": must be greater than or equal to 0',
    ]


def test_names_follow_the_dns_1123_rules_per_field_with_control_characters_escaped() -> None:
    assert refusals(workload(name="a\x00b\u202ec", podset="Main")) == [
        f'metadata.name: Invalid value: "a\\u0000b\\u202ec": {SUBDOMAIN_RULE}',
        f'spec.podSets[0].name: Invalid value: "Main": {LABEL_RULE}',
    ]
    dotted = workload(name="team.a.job", podset="a.b")  # a subdomain may have dots; a podSet name may not
    assert refusals(dotted) == [f'spec.podSets[0].name: Invalid value: "a.b": {LABEL_RULE}']
    long = workload(name="x" * 254)
    assert refusals(long) == [f'metadata.name: Invalid value: "{"x" * 100}...": must be no more than 253 characters']
    labelled = jobset().obj()
    labelled["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "q\u0085"
    assert refusals(labelled) == [f'metadata.labels: Invalid value: "q\\u0085": {VALUE_RULE}']


def test_printable_escapes_controls_and_bidirectional_formats_only() -> None:
    assert printable("plain-name.é 日本") == "plain-name.é 日本"
    assert printable("\x00\x1b[31m\x7f\x85\u202e\u2066\u200b\u2028\U000e0001") == (
        "\\u0000\\u001b[31m\\u007f\\u0085\\u202e\\u2066\\u200b\\u2028\\U000e0001"
    )
    assert printable("abcdef", 3) == "abc..."


def test_printable_json_reaches_every_string_keys_included() -> None:
    answer = {"name": "a\u202eb", "holders": [{"w\x00": ["ok", "c\x85"]}], "count": 3}
    assert printable_json(answer) == {"name": "a\\u202eb", "holders": [{"w\\u0000": ["ok", "c\\u0085"]}], "count": 3}


def test_printable_json_keeps_a_messages_line_breaks_for_json_to_write() -> None:
    """A denial's violations are one line each: JSON writes the breaks as ``\\n`` itself, so
    decoding gives the lines back; an escape or an override inside a line is still escaped."""
    value = {"message": "first\nsecond \u202eevil\x1b[2J"}
    assert printable_json(value) == {"message": "first\nsecond \\u202eevil\\u001b[2J"}
