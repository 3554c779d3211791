"""How long a text from a request the parse and render caches may keep.

Real values are short (``"4"``, ``"20Gi"``, a label key), and caching them saves a
regex match per request. But a quantity may have any number of digits and a map key
any length, so a cache keyed by untrusted text could hold 4096 entries of a megabyte
each. Texts longer than ``CACHED_CHARS`` are worked out every time and never kept.
"""

from __future__ import annotations

from typing import Final

CACHED_CHARS: Final = 256
