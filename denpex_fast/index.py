"""Moved to :mod:`denpex_fast.batch.index`; this alias stays for one release."""

import sys

from .batch import index as _moved

sys.modules[__name__] = _moved
