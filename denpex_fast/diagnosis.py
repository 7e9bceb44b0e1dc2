"""Moved to :mod:`denpex_fast.analysis.diagnosis`; this alias stays for one release."""

import sys

from .analysis import diagnosis as _moved

sys.modules[__name__] = _moved
