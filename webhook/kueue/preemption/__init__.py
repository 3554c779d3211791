"""Kueue's preemption: the Workloads its preemptor would evict for one job, and why.

It restates kubernetes-sigs/kueue ``pkg/scheduler/preemption`` over the cohort tree with
usage (``webhook.kueue.hierarchy``), laid out as Kueue lays out its own: ``preemptor``
(``preemption.go``), ``classical`` and ``fairsharing`` (the two policies), ``common``
(what they share) and ``candidates`` (each queue's candidates in order).


- **candidates** come only from where Kueue looks: the job's own ClusterQueue
  (``withinClusterQueue``), and, for ``reclaimWithinCohort``, queues of its cohort tree
  that use more than their quota in a needed (flavor, resource): the per-queue index of
  admitted Workloads, never all of them. A candidate must use a (flavor, resource) that
  needs preemption and satisfy the policy (``SatisfiesPreemptionPolicy``).
- **order** (``CandidatesOrdering``): already evicted first, other queues before the
  job's own, lower priority first, most recently admitted first, then UID.
- **classical**: candidates are removed in order until the job fits (with or without
  borrowing, in the order Kueue tries those), each checked still valid after the
  removals before it; then every removed one the job does not need is put back, last
  but one first (``fillBackWorkloads``). Hierarchical cohorts: a queue whose subtree has
  room for the job reclaims from the rest of the tree (``InCohortReclamation``);
  otherwise only lower priority, and with ``borrowWithinCohort`` only below its threshold.
- **fair sharing**: target queues picked from the root by the highest dominant resource
  share, per the configured strategies in order, compared at the two nodes just below the
  queues' common ancestor; the same put-back at the end.

Everything runs on the tree with usage removed and added back, so nothing is written. The
flavor assigner reaches the preemptor only through its oracle (``preemptor.Oracle``).
"""
