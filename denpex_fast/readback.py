"""Moved to :mod:`denpex_fast.io.readback`; this alias stays for one release."""

import sys

from .io import readback as _moved

sys.modules[__name__] = _moved
