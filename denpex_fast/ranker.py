"""Moved to :mod:`denpex_fast.analysis.ranker`; this alias stays for one release."""

import sys

from .analysis import ranker as _moved

sys.modules[__name__] = _moved
