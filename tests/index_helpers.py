"""Helpers shared by the index, query and Dask tests: a small archive of jobs."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from backports import zstd

SAMPLE = Path(__file__).parent / "data" / "synthetic_gpu_oom_console.log"

OOM = b"[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
NCCL = (
    b"[rank0]: [E501 12:10:40.512000 21000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
    b"collective operation timeout: WorkNCCL(SeqNum=4812, OpType=ALLREDUCE, NumelIn=1, "
    b"NumelOut=1, Timeout(ms)=600000) ran for 600078 milliseconds before timing out.\n"
)
FILLER = b"[rank0]: 2024-05-01 12:00:00,000 INFO train.py:10 step=1 loss=1.0\n" * 50


def tar_bytes(members: dict[str, bytes], compress: bool = True) -> bytes:
    """A tar(.gz) archive holding ``members`` (names used verbatim, even ``../x``)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if compress else "w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def make_archive(root: Path, n_extra: int = 0) -> Path:
    """Jobs: plain+gz+zst files in nested dirs, a tar.gz job, a healthy job."""
    sample = SAMPLE.read_bytes()
    (root / "job-a" / "node0").mkdir(parents=True)
    (root / "job-a" / "node0" / "rank0.log").write_bytes(FILLER + NCCL + FILLER)
    (root / "job-a" / "node1").mkdir()
    (root / "job-a" / "node1" / "rank1.log.gz").write_bytes(gzip.compress(FILLER + OOM))
    (root / "job-a" / "launcher.log.zst").write_bytes(zstd.compress(FILLER))
    (root / "job-b").mkdir()
    (root / "job-b" / "console.log").write_bytes(sample)
    (root / "job-c.tar.gz").write_bytes(
        tar_bytes({"logs/rank0.log": FILLER + OOM, "logs/rank1.log.gz": gzip.compress(NCCL)})
    )
    (root / "healthy").mkdir()
    (root / "healthy" / "rank0.log").write_bytes(FILLER)
    for i in range(n_extra):
        d = root / f"extra-{i:03d}"
        d.mkdir()
        (d / "rank0.log").write_bytes(FILLER * 20 + (OOM if i % 2 else NCCL) + FILLER)
        (d / "rank1.log.gz").write_bytes(gzip.compress(FILLER * 20 + NCCL))
    return root


VOLATILE = ("scanned_at", "seconds")


def comparable(ix: Any) -> dict[str, list[dict[str, Any]]]:
    """Every dataset of an index as sorted rows, without timing columns."""
    out = {}
    for name in ("matches", "diagnosis", "rank_fates", "manifest"):
        t: pa.Table = getattr(ix, name)()
        t = t.drop_columns([c for c in VOLATILE if c in t.column_names])
        rows = t.to_pylist()
        out[name] = sorted(rows, key=lambda r: repr(sorted(r.items(), key=lambda kv: kv[0])))
    return out


def jobs_in(table: pa.Table) -> set[str]:
    """Distinct ``job`` values of a table."""
    return set(pc.unique(table.column("job")).to_pylist()) if table.num_rows else set()
