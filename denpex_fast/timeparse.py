"""Moved to :mod:`denpex_fast.facts.timeparse`; this alias stays for one release."""

import sys

from .facts import timeparse as _moved

sys.modules[__name__] = _moved
