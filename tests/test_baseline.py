"""Healthy-baseline comparison: masking rules and first divergence on real runs."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from denpex_fast import _native
from denpex_fast.analysis.baseline import first_divergence, template_set

CASES = Path(__file__).parent / "corpus" / "cases"


@pytest.mark.parametrize(
    "a,b",
    [
        (
            b"[rank3]: 2024-05-01 12:00:00,123 step=12 loss=0.5231",
            b"[rank0]: 2024-06-02 13:01:09,999 step=99 loss=1.25",
        ),
        (b"lr=3.0e-04 grad_norm=1.5", b"lr=2.5e-05 grad_norm=10.25"),
        (b"comm 0x55d0c8a1e0 rank 0 commId 0x9f1c2a7b3d4e5f60", b"comm 0x7f00 rank 3 commId 0x01"),
        (b"hash 9f1c2a7b3d4e5f60 done", b"hash 00aa11bb22cc33dd done"),
        (b'File "/home/alice/train.py", line 12', b'File "/opt/job/train.py", line 240'),
        (b"tokens/s=41,230 ok\r", b"tokens/s=9 ok"),
    ],
)
def test_variable_parts_are_masked(a: bytes, b: bytes) -> None:
    assert _native.template_hash(a) == _native.template_hash(b)


@pytest.mark.parametrize(
    "a,b",
    [
        (b"step=1 loss=0.5", b"step=1 loss=nan"),
        (b"[rank0]: Traceback (most recent call last):", b"[rank0]: step=1"),
        (b"NCCL INFO Init COMPLETE", b"NCCL WARN Init COMPLETE"),
        (b"deadbeef", b"cafe"),  # short hex-looking words stay words
    ],
)
def test_different_lines_stay_different(a: bytes, b: bytes) -> None:
    assert _native.template_hash(a) != _native.template_hash(b)


@pytest.mark.parametrize(
    "a,b,same",
    [
        # a number that runs past its word takes the rest of that word as text
        (b"v 1.5deadbeef12", b"v 2.0deadbeef7", True),
        (b"v 1.5deadbeef12", b"v 1.5cafebabe12", False),
        # a hex id ends at its word: what follows is a new word, not part of a number
        (b"id 12345678.5", b"id 1234567.5", False),
        (b"id deadbeef12.5", b"id 0x1f.7", True),
        # a masked part and the same literal byte are one template
        (b"a1b", b"a#b", True),
        (b"x /opt/y.py", b"x /", True),
        # cut-off numbers, hex and paths at the end of a line
        (b"ptr 0x", b"ptr 0x1f", False),
        (b"v 1e-", b"v 1e-5", False),
        (b"v 12.", b"v 12.5", False),
    ],
)
def test_masking_edges(a: bytes, b: bytes, same: bool) -> None:
    assert (_native.template_hash(a) == _native.template_hash(b)) is same


def test_template_set_and_new_lines_in_chunks(tmp_path: Path) -> None:
    healthy = tmp_path / "healthy.log"
    healthy.write_bytes(
        b"".join(b"[rank%d]: step=%d loss=0.%d\n" % (i % 4, i, i) for i in range(5000))
    )
    failed = tmp_path / "failed.log.gz"
    body = b"".join(b"[rank%d]: step=%d loss=0.%d\n" % (i % 4, i, i) for i in range(3000))
    body += b"[rank2]: Traceback (most recent call last):\n[rank2]: RuntimeError: boom 17\n"
    body += b"[rank1]: RuntimeError: boom 99\n"  # same template as rank2's: reported once
    failed.write_bytes(gzip.compress(body))
    known = template_set([healthy])
    assert len(known) == 1
    t = first_divergence([failed], known)
    assert t.column("line").to_pylist() == [3001, 3002]
    assert t.column("text").to_pylist() == [
        "[rank2]: Traceback (most recent call last):",
        "[rank2]: RuntimeError: boom 17",
    ]
    assert t.column("offset").to_pylist()[0] == len(body.split(b"[rank2]: Traceback")[0])


@pytest.mark.skipif(not (CASES / "009-sys-exit-3").exists(), reason="corpus not generated")
def test_real_failed_run_against_its_healthy_control() -> None:
    failed = sorted(str(p) for p in (CASES / "009-sys-exit-3").rglob("*.log"))
    healthy = sorted(str(p) for p in (CASES / "001-healthy-single").rglob("*.log"))
    t = first_divergence(failed, healthy, per_file=1)
    texts = t.column("text").to_pylist()
    # the healthy control never printed a traceback; every divergence here is failure output
    assert any("Traceback" in x for x in texts)
    assert not any("step=" in x and "loss" in x for x in texts)


def test_parallel_and_serial_baselines_agree(tmp_path: Path) -> None:
    from denpex_fast.analysis.baseline import first_divergence, template_set

    healthy, failed = tmp_path / "healthy", tmp_path / "failed"
    healthy.mkdir()
    failed.mkdir()
    for r in range(6):
        (healthy / f"rank{r}.log").write_text(
            "".join(f"step {i} loss {i * 0.5} rank {r}\n" for i in range(2000))
        )
        odd = f"rank {r} saw something new {r}\n" if r % 2 else ""
        (failed / f"rank{r}.log").write_text(
            "".join(f"step {i} loss {i * 0.25} rank {r}\n" for i in range(1000)) + odd
        )
    one = template_set([str(healthy)], threads=1)
    many = template_set([str(healthy)], threads=4)
    assert len(one) == len(many) > 0
    serial = first_divergence([str(failed)], [str(healthy)], threads=1)
    parallel = first_divergence([str(failed)], [str(healthy)], threads=4)
    assert serial.equals(parallel)
    assert parallel.column("line").to_pylist() == [1001, 1001, 1001]


def test_template_set_round_trips_through_an_array() -> None:
    known = _native.TemplateSet()
    data = b"step 1 loss 0.5\nNCCL WARN peer closed\nsaving checkpoint /a/b\n"
    known.add_lines(data, len(data))
    arr = known.to_array()
    assert len(arr) == len(known) == 3
    again = _native.TemplateSet.from_array(arr)
    assert len(again) == 3 and all(int(h) in again for h in arr)
    with pytest.raises(ValueError):
        _native.TemplateSet.from_array(np.array([5, 0], np.uint64))


def test_a_baseline_is_templated_once_and_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from denpex_fast.analysis import baseline as bl

    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path / "cache"))
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    log = healthy / "rank0.log"
    log.write_text("".join(f"step {i} loss {i * 0.5}\n" for i in range(500)))
    failed = tmp_path / "failed.log"
    failed.write_text("step 1 loss 0.5\nsaving checkpoint\nRuntimeError: boom\n")
    calls: list[int] = []
    real = bl._template_inputs

    def counted(*a: object, **k: object) -> _native.TemplateSet:
        calls.append(1)
        return real(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(bl, "_template_inputs", counted)
    first = first_divergence([str(failed)], [str(healthy)]).column("line").to_pylist()
    assert first == [2, 3] and calls == [1]
    (entry,) = (tmp_path / "cache").glob("baseline-*.tset")
    assert first_divergence([str(failed)], [str(healthy)]).column("line").to_pylist() == first
    assert calls == [1]  # the second comparison read the cached set
    entry.write_bytes(entry.read_bytes()[:-3] + b"xyz")  # corrupt: never trusted
    assert first_divergence([str(failed)], [str(healthy)]).column("line").to_pylist() == first
    assert calls == [1, 1]
    with log.open("a") as f:  # the baseline changed: its new template counts
        f.write("saving checkpoint\n")
    assert first_divergence([str(failed)], [str(healthy)]).column("line").to_pylist() == [3]
    assert calls == [1, 1, 1]
    assert template_set([str(healthy)], cache=False) is not None and calls == [1, 1, 1, 1]


def test_one_file_templated_in_parallel_chunks_gives_the_sequential_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file read in chunks on several threads reports the same first new
    lines as one read in order: templates repeated across chunks are taken
    once, in file order."""
    import denpex_fast.analysis.baseline as bl

    healthy, failed = tmp_path / "healthy.log", tmp_path / "failed.log"
    healthy.write_text("".join(f"step {i} loss {i * 0.5}\n" for i in range(3000)))
    lines = [f"step {i} loss {i * 0.25}\n" for i in range(3000)]
    for k, at in enumerate((40, 700, 701, 1500, 2200, 2999)):
        lines[at] = f"odd event kind{'x' * (k % 3)} at {at}\n"  # three templates, repeated
    for at in range(2400, 2410):
        lines[at] = f"late {'y' * (at - 2400)} line\n"  # ten more, one per line
    failed.write_text("".join(lines))
    monkeypatch.setattr(bl, "CHUNK", 2048)  # many chunks
    known = template_set([str(healthy)], threads=1, cache=False)
    serial = first_divergence([str(failed)], known, threads=1, per_file=8)
    parallel = first_divergence([str(failed)], known, threads=4, per_file=8)
    assert serial.equals(parallel)
    assert serial.column("line").to_pylist() == [41, 701, 702, 2401, 2402, 2403, 2404, 2405]
