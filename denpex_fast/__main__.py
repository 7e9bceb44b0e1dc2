"""``python -m denpex_fast``: the ``denpex`` command line.

Useful where the ``denpex`` script is not on ``PATH`` (a venv that is not
activated, ``pip install --user``) or to pick the interpreter explicitly::

    python3.10 -m denpex_fast diagnose job/
"""

from __future__ import annotations

from denpex_fast.cli import run

if __name__ == "__main__":
    run()
