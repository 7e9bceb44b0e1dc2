"""Bundled sample logs: ``sample_job/`` is a failed 4-rank torchrun job in which
rank 2 runs out of GPU memory and the other ranks later report NCCL watchdog
timeouts.  ``denpex demo`` scans it."""
