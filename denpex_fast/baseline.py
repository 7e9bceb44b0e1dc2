"""Moved to :mod:`denpex_fast.analysis.baseline`; this alias stays for one release."""

import sys

from .analysis import baseline as _moved

sys.modules[__name__] = _moved
