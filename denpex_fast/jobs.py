"""Moved to :mod:`denpex_fast.io.jobs`; this alias stays for one release."""

import sys

from .io import jobs as _moved

sys.modules[__name__] = _moved
