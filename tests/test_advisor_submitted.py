"""One submitted object through the webhook, then the simulator (``webhook.advisor.submitted``)."""

from __future__ import annotations

from cluster_fixtures import POLICY, STATE
from support import load_jobset

from webhook.advisor.submitted import simulate_submitted
from webhook.engine.decision import AdmissionFacts, decide
from webhook.objects.kinds import JOBSET
from webhook.simulate.live import live


def test_a_job_in_a_dev_namespace_is_simulated_with_the_labels_the_mutating_call_adds() -> None:
    """No queue label: the dev tier (from the namespace's label) injects its default queue, as the
    mutating call would, so the job is simulated in the ClusterQueue that LocalQueue points at."""
    job = load_jobset("rfc-4.6-static")
    job["metadata"]["labels"] = {}
    job["metadata"]["namespace"] = "default"
    result = simulate_submitted(job, live(STATE.snapshot(), POLICY))
    assert (result.namespace, result.cluster_queue) == ("default", "dev")


def test_a_job_the_webhook_would_deny_never_reaches_the_simulator() -> None:
    job = load_jobset("rfc-4.6-static")
    job["metadata"]["labels"] = {}  # production: no queue label is a denial, nothing is injected
    result = simulate_submitted(job, live(STATE.snapshot(), POLICY))
    assert (result.outcome, result.reason, result.cluster_queue) == ("never", "Denied", "")
    assert result.message.startswith("the webhook would deny it: [")


def test_a_denied_answer_names_every_violation_as_check_does() -> None:
    job = load_jobset("rfc-4.6-static")
    job["metadata"]["labels"] = {}  # no queue, no priority ...
    pod = job["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    del pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"]  # ... and no static topology
    facts = AdmissionFacts(operation="CREATE", stage="mutate", namespace="kubemaker", kind=JOBSET)
    decision = decide(job, facts, POLICY, STATE)
    assert len(decision.violations) > 1
    result = simulate_submitted(job, live(STATE.snapshot(), POLICY))
    assert result.outcome == "never"
    assert result.message.splitlines() == [
        f"the webhook would deny it: {decision.violations[0].line()}",
        *(f"  {finding.line()}" for finding in decision.violations[1:]),
    ]
