"""Moved to :mod:`denpex_fast.analysis.progress`; this alias stays for one release."""

import sys

from .analysis import progress as _moved

sys.modules[__name__] = _moved
