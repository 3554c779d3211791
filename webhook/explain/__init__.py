"""Explain a job that is not running: its state in RFC-0033's words, why, by whom, until when.

A pure library (SPEC §13): the caller fills the inputs (``inputs``) from the watch cache
or state files, ``explainer.explain`` decides and explains, ``result`` shapes the JSON
answer, ``text`` renders it for an 80-column terminal, and ``quotaview`` renders the
cohort tree of ``tpu-admission quota``. Design notes: docs/explain.md.
"""
