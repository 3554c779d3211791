"""Kueue's quota arithmetic: the objects it reads, flavor assignment, potential quota, the guaranteed ledger."""
