"""Batch work over many jobs: the index store, its executors (threads, processes, Dask) and queries."""
