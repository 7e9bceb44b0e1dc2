"""Moved to :mod:`denpex_fast.analysis.causal`; this alias stays for one release."""

import sys

from .analysis import causal as _moved

sys.modules[__name__] = _moved
