"""Kueue's quota model, laid out as Kueue lays out ``pkg/cache/scheduler`` (kubernetes-sigs/kueue).

Types at the bottom, each module importing only those listed before it:

- ``amounts``: the one formatter of the amounts messages print (``pkg/resources``);
- ``resources``: (flavor, resource), the quota of one, resource groups;
- ``clusterqueue``: a ClusterQueue's compact view, and what its nominal quota holds;
- ``resource_node``: quota and usage of one node: local quota, available, potential
  available (available at zero usage), add and remove usage (``resource_node.go``);
- ``cohort``: a Cohort's compact view, and its member queues' quota kept summed;
- ``workload``: an admitted Workload, what it holds and where;
- ``hierarchy``: the cohort tree, built once, cycles found and cut loose;
- ``fair_sharing``: the dominant resource share (``fair_sharing.go``);
- ``potential``: what a queue could ever hold, as a bound, for the gates.

The gates ask the tree at zero usage ("could it ever fit"), the simulator at current
usage ("what happens now"): one tree, one set of rules. Nothing here imports the stages
above (``quota``, ``cluster``, ``simulate``, ...).
"""
