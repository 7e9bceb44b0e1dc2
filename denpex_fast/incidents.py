"""Moved to :mod:`denpex_fast.analysis.incidents`; this alias stays for one release."""

import sys

from .analysis import incidents as _moved

sys.modules[__name__] = _moved
