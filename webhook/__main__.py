"""``python -m webhook`` is ``tpu-admission``."""

import sys

from webhook.cli import main

sys.exit(main())
