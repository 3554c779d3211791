"""``python -m webhook`` is ``tpu-admission``."""

import sys

from webhook.cli.main import main

sys.exit(main())
