"""Kueue's quota arithmetic, split as Kueue splits it (kubernetes-sigs/kueue).

- ``objects``: compact views of ClusterQueues, Cohorts, ResourceFlavors and Nodes;
- ``podsets``: a podSet's requests and pod count (``pkg/workload``, ``PodSetResources``);
- ``resource_node``: subtree quota, local quota, potential available through the cohort
  tree (``pkg/cache/scheduler/resource_node.go``);
- ``flavorassigner``: flavor eligibility and assignment (``pkg/scheduler/flavorassigner``);
- ``combinations``: whether some choice of flavors could hold several podSets together;
- ``ledger``: what Workloads hold and wait for, and the guaranteed balance;
- ``amounts``: the one formatter of the amounts messages print;
- ``capacity``: Σ nominal over queues and Cohorts against the nodes' chips (the admin
  guard's sums: RFC-0033's quota pipeline check);
- ``model``: ``QuotaModel``, the above over the store's objects.

It imports nothing above it (no ``webhook.cluster``, ``rules`` or ``engine``): the store
hands the model a read-only view, and the rules ask through ``ClusterState``.
"""
