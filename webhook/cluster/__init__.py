"""Cluster state for the cluster-aware rules: one interface, a watch cache and state read from files."""
