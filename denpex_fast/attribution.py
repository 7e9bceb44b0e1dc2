"""Moved to :mod:`denpex_fast.facts.attribution`; this alias stays for one release."""

import sys

from .facts import attribution as _moved

sys.modules[__name__] = _moved
