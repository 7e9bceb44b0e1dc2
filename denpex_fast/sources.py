"""Moved to :mod:`denpex_fast.io.sources`; this alias stays for one release."""

import sys

from .io import sources as _moved

sys.modules[__name__] = _moved
