"""What Kueue's scheduler would do with one job now: one scheduling attempt, nothing written.

- ``state``: the engine's input (queues, cohorts, flavors, Workloads admitted and pending),
  and its cohort tree with usage (``tree_of``; the tree itself is ``webhook.kueue``'s);
- ``workloads``: a stored Workload document as the engine's input Workload;
- ``placement``: static mode's placement, the whole node pools a job's slices need;
- ``engine``: the attempt itself, blockers first, and the job's place in its queue;
- ``result``: the answer as the contract's JSON, a text for people and the webhook line;
- ``live``: the one service the CLI, the server and explain call, on a cluster snapshot.

The Kueue model it runs is ``webhook.kueue``'s: the flavor assigner, the preemptor
(``webhook.kueue.preemption``), the cohort tree, LocalQueues and fair sharing. It sits after
``cluster`` and before ``explain``: explain, the engine's simulation of a submitted object,
the webhook's ``[simulate]`` line and the advisor read it; the "never fits" it answers is
the capacity rules' own question (``webhook.quota.feasibility``).
"""
