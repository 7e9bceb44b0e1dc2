"""Moved to :mod:`denpex_fast.io.spool`; this alias stays for one release."""

import sys

from .io import spool as _moved

sys.modules[__name__] = _moved
