"""Moved to :mod:`denpex_fast.batch.dask`; this alias stays for one release."""

import sys

from .batch import dask as _moved

sys.modules[__name__] = _moved
