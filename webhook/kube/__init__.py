"""Kubernetes vocabulary every stage reads: quantities, pod resources, TPU topologies, field paths."""
