"""Explain a job that is not running: its state in RFC-0033's words, why, by whom, until when.

A pure library (SPEC §13): the caller fills the inputs (``inputs``) from the watch cache
or state files, ``explainer.explain`` decides and explains, ``result`` shapes the JSON
answer, and ``text`` renders it for an 80-column terminal (its quota bars, ``bars``, also
draw ``tpu-admission quota``'s cohort tree). Design notes: docs/explain.md.
"""
