"""Moved to :mod:`denpex_fast.engine.scanner`; this alias stays for one release."""

import sys

from .engine import scanner as _moved

sys.modules[__name__] = _moved
