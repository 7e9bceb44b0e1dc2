"""Moved to :mod:`denpex_fast.analysis.resume`; this alias stays for one release."""

import sys

from .analysis import resume as _moved

sys.modules[__name__] = _moved
