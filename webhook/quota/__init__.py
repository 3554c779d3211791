"""The gates' questions of Kueue's quota model, split as Kueue splits it (kubernetes-sigs/kueue).

The model itself (quotas, the cohort tree with usage and potential available, the
ClusterQueue and Cohort views, the amount formatter) is ``webhook.kueue``, which the
simulator reads too; here is what the gates ask of it at zero usage:

- ``objects``: compact views of ResourceFlavors and Nodes, label selectors, node affinity;
- ``podsets``: a podSet's requests and pod count (``pkg/workload``, ``PodSetResources``);
- ``flavorassigner``: flavor eligibility and assignment (``pkg/scheduler/flavorassigner``);
- ``combinations``: whether some choice of flavors could hold several podSets together;
- ``ledger``: what Workloads hold and wait for, and the guaranteed balance;
- ``capacity``: Σ nominal over queues and Cohorts against the nodes' chips (the admin
  guard's sums: RFC-0033's quota pipeline check);
- ``model``: ``QuotaModel``, the above over the store's objects.

It imports nothing above it (no ``webhook.cluster``, ``rules`` or ``engine``): the store
hands the model a read-only view, and the rules ask through ``ClusterState``.
"""
