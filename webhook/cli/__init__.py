"""``tpu-admission``: the command line and the output formats of ``check``."""
