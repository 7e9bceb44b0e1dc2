"""Moved to :mod:`denpex_fast.kb.signatures`; this alias stays for one release."""

import sys

from .kb import signatures as _moved

sys.modules[__name__] = _moved
