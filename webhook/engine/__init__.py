"""The decision: which rules run for a request, their findings, exceptions and the default-label patch."""
