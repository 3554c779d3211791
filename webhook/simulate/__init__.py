"""What Kueue's scheduler would do with one job now: one scheduling attempt, nothing written.

- ``state``: the engine's input (queues, cohorts, flavors, Workloads admitted and pending),
  and its cohort tree with usage (``tree_of``; the tree itself is ``webhook.kueue``'s);
- ``workloads``: a stored Workload document as the engine's input Workload;
- ``documents``: the state from Kueue's objects as stored, and fair sharing from its Configuration;
- ``candidates``: each queue's admitted Workloads kept in Kueue's candidate order;
- ``preempt``: the victims Kueue's preemptor picks (``pkg/scheduler/preemption``);
- ``assign``: flavor assignment with the current usage (``pkg/scheduler/flavorassigner``);
- ``engine``: the attempt itself, blockers first, and the job's place in its queue;
- ``result``: the answer as the contract's JSON, a text for people and the webhook line.

It sits after ``cluster`` and before ``explain``: explain, the engine's simulation of a
submitted object, the webhook's ``[simulate]`` line and the advisor read it; it reads
Kueue's quota model (``webhook.kueue``: the one cohort tree, fair sharing), the quota
model's pure parts and the snapshot.
"""
