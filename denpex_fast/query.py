"""Moved to :mod:`denpex_fast.batch.query`; this alias stays for one release."""

import sys

from .batch import query as _moved

sys.modules[__name__] = _moved
