"""Moved: :mod:`denpex_fast.batch.build` (``build_index``), :mod:`denpex_fast.batch.index`
(one job) and :mod:`denpex_fast.batch.store` (storage); this re-export stays for one release."""

from .batch.build import IndexSummary, build_index, previous_manifests  # noqa: F401
from .batch.index import *  # noqa: F403
from .batch.index import IndexOptions, JobContext, JobReport, index_job, scan_job  # noqa: F401
from .batch.store import DATASETS, PARTITIONING, IndexLockedError, IndexStore  # noqa: F401
