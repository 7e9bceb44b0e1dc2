"""Moved to :mod:`denpex_fast.engine._native`; this alias stays for one release."""

import sys

from .engine import _native as _moved

sys.modules[__name__] = _moved
