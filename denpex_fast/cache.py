"""Moved to :mod:`denpex_fast.engine.cache`; this alias stays for one release."""

import sys

from .engine import cache as _moved

sys.modules[__name__] = _moved
