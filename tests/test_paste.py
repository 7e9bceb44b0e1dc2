"""Pasted excerpts are diagnosed as the program printed them (denpex_fast.io.paste)."""

from __future__ import annotations

import gc
import os
import shutil
from pathlib import Path

import pytest

import denpex_fast as dx
from denpex_fast.io.paste import MAX_FILES, clean, spool_pastes

TRACE = [
    "Traceback (most recent call last):",
    '  File "train.py", line 27, in <module>',
    "    pretrain(args)",
    '  File "deepspeed/runtime/pipe/engine.py", line 258, in _exec_reduce_grads',
    "    raise NotImplementedError()",
    "NotImplementedError",
]


def _text(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize(
    "dressed",
    [
        ["    " + x for x in TRACE],  # a Markdown code block
        ["  " + x for x in TRACE],  # a code block inside a list item
        ["   " + x for x in TRACE],
        ["\t" + x for x in TRACE],
        ["> " + x for x in TRACE],  # a quote
        [">     " + x for x in TRACE],  # a quoted code block
        ["\x1b[31m" + x + "\x1b[0m" for x in TRACE],  # raw colour codes
        ["#033[31m" + x + "#033[0m" for x in TRACE],  # as syslog escapes them
        ["^[[31m" + x + "^[[0m" for x in TRACE],  # caret notation
        ["[31m" + x + "[0m" for x in TRACE],  # the escape byte lost in a copy
    ],
    ids=[
        "indent",
        "list-item",
        "list-item-3",
        "tab",
        "quote",
        "quoted-block",
        "ansi",
        "syslog",
        "caret",
        "bare",
    ],
)
def test_a_paste_is_read_without_its_dressing(tmp_path: Path, dressed: list[str]) -> None:
    assert clean(_text(dressed)) == _text(TRACE)
    log = tmp_path / "paste.txt"
    log.write_bytes(_text(dressed))
    d = dx.diagnose(str(log))
    # named, whichever way the confidence puts it (a short excerpt is a suspect
    # below the 95%-precision confidence)
    assert d.verdict in ("failure", "suspect") and d.initiating is not None
    assert (d.initiating.file, d.initiating.line) == (str(log), 6)
    assert d.initiating.text == "NotImplementedError"


def test_lines_that_carry_their_own_structure_are_left_alone() -> None:
    # a traceback cut above its first line keeps its two-space frames, as does
    # faulthandler's dump of frames alone
    assert clean(_text(TRACE[1:5])) is None
    assert clean(_text([TRACE[1], TRACE[3]])) is None
    assert clean(_text(TRACE)) is None
    # indentation that not every line shares, a quote on some lines only
    assert clean(_text(["    a", "b"])) is None
    assert clean(_text(["> a", "b"])) is None
    # one bracketed "[5m" is a duration, not a colour code
    assert clean(b"waited [5m] for the store\n") is None
    # blank lines do not count against a shared indentation; line count is kept
    assert clean(b"    a\n\n    b\n") == b"a\n\nb\n"


def test_copies_keep_names_and_go_away_with_the_diagnosis(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / "rank0.log").write_bytes(_text(["    " + x for x in TRACE]))
    (job / "rank1.log").write_bytes(b"[rank1]: step 3\n")
    sp = spool_pastes([str(job)])
    assert sp is not None and sp.directory is not None
    assert sorted(sp.labels.values()) == [str(job / "rank0.log")]
    assert str(job / "rank1.log") in [os.fsdecode(p) for p in sp.paths]
    tmp = os.path.dirname(sp.directory)

    def copies() -> set[str]:
        return {p for p in os.listdir(tmp) if p.startswith("denpex-paste-")}

    before = copies()
    d = dx.diagnose(str(job))
    assert d.initiating is not None and d.initiating.file == str(job / "rank0.log")
    assert d.initiating.text == "NotImplementedError"
    made = copies() - before
    assert len(made) == 1  # the diagnosis read its own cleaned copy
    del d
    gc.collect()
    assert not made & copies()  # and it went away with the diagnosis
    shutil.rmtree(sp.directory)  # the spool made above by hand


def test_more_files_than_a_paste_are_scanned_as_they_are(tmp_path: Path) -> None:
    for k in range(MAX_FILES + 1):
        (tmp_path / f"rank{k}.log").write_bytes(_text(["    " + x for x in TRACE]))
    assert spool_pastes([str(tmp_path)]) is None


def test_a_terminals_hard_wraps_are_joined_and_line_numbers_kept(tmp_path: Path) -> None:
    wd = (
        "[rank3]:[E501 12:10:40.512000 21000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600078 milliseconds before timing out."
    )
    oom = "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB."
    width = 60  # a terminal this wide wraps every longer line
    original = ["[rank2]: step 7", oom, wd, "[rank1]: step 8"]
    lines = [ln[k : k + width] for ln in original for k in range(0, len(ln), width)]
    got = clean(_text(lines))
    assert got is not None
    out = got.decode().split("\n")[:-1]
    assert len(out) == len(lines)  # every line keeps its number
    assert [x for x in out if x] == original  # each record whole on its first line
    assert out.index(wd) == 3 and out.index(oom) == 1

    # two lines of one length are a coincidence, not a terminal's width
    assert clean(_text([wd[:width], wd[:width], "short"])) is None
    log = tmp_path / "paste.txt"
    log.write_bytes(_text(lines))
    d = dx.diagnose(str(log))
    assert d.initiating is not None and (d.initiating.line, d.initiating.rank) == (2, 2)
    assert d.initiating.text == oom


def test_two_lines_cut_inside_a_word_are_a_wrap_two_cut_between_words_are_not() -> None:
    first = (
        "Failed to create NCCL communicator: INTERNAL: ncclCommInitRankConfig(...) failed: "
        "invalid usage"
    )
    second = "invalid usage ... Last NCCL warning(error): 'Bootstrap : no socket interface found'"
    width = 80
    lines = [first[:width], first[width:], second[:width], second[width:]]
    assert len(first[:width]) == len(second[:width]) == width
    got = clean(_text(lines))
    assert got is not None
    assert got.decode().split("\n")[:-1] == [first, "", second, ""]
    # the same two lengths, but each line ends a word and the next opens a
    # record: at a terminal's standard width as at any other, not a wrap
    prose = [first[: width - 1] + " ", "Next words", second[: width - 1] + " ", "More words"]
    assert len(prose[0]) == len(prose[2]) == width
    assert clean(_text(prose)) is None
    odd = [x[:-2] + " " if k % 2 == 0 else x.lower() for k, x in enumerate(prose)]
    assert len(odd[0]) == 79 and clean(_text(odd)) is None  # 79 columns: no terminal's width


def test_one_row_at_a_terminals_width_that_goes_on_mid_sentence_is_a_wrap(tmp_path: Path) -> None:
    warn = (
        "node1:54573:54696 [1] include/socket.h:194 WARN Call to recv failed : Connection reset "
        "by peer"
    )
    trace = ["node1:54573:54696 [1] INFO transport/net_ib.cu:537 -> 2"]
    for width in (80, 120):
        line = warn if width == 80 else warn + " " + "x" * (width - len(warn) - 1) + " again"
        rows = [line[:width], line[width:], *trace]
        got = clean(_text(rows))
        assert got is not None and got.decode().split("\n")[:3] == [line, "", trace[0]]
    # a path or identifier cut in the middle goes on in lowercase too
    path = "INFO - __main__ - Loading features from cached file /data/glue/MRPC/cached_dev_bert_128"
    rows = [path[:80], path[80:]]
    got = clean(_text(rows))
    assert got is not None and got.decode().split("\n")[:2] == [path, ""]
    # one row that happens to be 80 long before a record of its own stays as it is
    rows = [warn[:80], "Node1 restarted", *trace]
    assert clean(_text(rows)) is None
    # the line a wrap cut is diagnosed whole, on its first row
    log = tmp_path / "nccl.txt"
    log.write_bytes(_text([warn[:80], warn[80:], *trace]))
    d = dx.diagnose(str(log))
    assert d.initiating is not None and d.initiating.line == 1
    assert d.initiating.text == warn


def test_two_rows_at_a_terminals_width_one_cut_inside_a_token_are_a_wrap() -> None:
    bar = "Preparing test set...:  46%|####      | 31/67 [29:02<35:12, 58.67s/it]slurmstepd"
    cancel = ": error: *** STEP 6053.0 ON node20 CANCELLED AT 2024-04-23T12:18:08 ***"
    note = "srun: launch/slurm: _task_finish: Received task exit notification for 1 task of "
    rows = [bar.ljust(80, "x")[:80], cancel, note.ljust(80)[:80], "StepId=6053.0 (status=0x000f)."]
    assert [len(r) for r in rows[::2]] == [80, 80]
    got = clean(_text(rows))
    assert got is not None
    assert got.decode().split("\n")[:4] == [rows[0] + cancel, "", rows[2] + rows[3], ""]


def test_an_indented_paste_that_was_wrapped_keeps_its_launcher_prefix(tmp_path: Path) -> None:
    # the rows a wrap split off lack the code block's indent: the indent is
    # removed once the wraps are joined, so [default3]: still names the rank
    err = (
        "[default3]:FileNotFoundError: [Errno 2] No such file or directory: '/ckpt/step_15/trainer'"
    )
    lines = [
        "[default3]:[17:14:41] DEBUG Removing past checkpoint for step 15 (/ckpt/step_15)",
        err,
    ]
    rows: list[str] = []
    for ln in lines:
        ln = "  " + ln
        rows += [ln[k : k + 80] for k in range(0, len(ln), 80)]
    log = tmp_path / "paste.txt"
    log.write_bytes(_text(rows))
    d = dx.diagnose(str(log))
    assert d.initiating is not None
    assert (d.initiating.rank, d.initiating.text) == (3, err)


def test_lines_of_one_template_are_not_taken_for_a_terminals_wraps() -> None:
    # seven ranks' lines of one template share a length: each is its own record
    lines = [
        f"[rank{r}]: iter 4/10 | loss 1.0977 | 8.5 ms/it | tokens/s 12345.6 | lr 1e-4"
        for r in range(7)
    ]
    assert len({len(x) for x in lines}) == 1 and len(lines[0]) >= 60
    assert clean(_text(lines)) is None


def test_the_rules_framing_a_help_message_are_not_a_terminals_wraps() -> None:
    # Open MPI frames each help message in 74 dashes: the longest lines of the
    # paste, and never text a terminal cut
    rule = "-" * 74
    lines = [
        rule,
        "PMI2_Init failed to initialize.  Return code: 14",
        rule,
        rule,
        'The application appears to have been direct launched using "srun",',
        "but OMPI was not built with SLURM's PMI support and therefore cannot",
        rule,
    ]
    assert clean(_text(lines)) is None


def test_the_rows_of_a_drawn_box_are_not_a_terminals_wraps() -> None:
    # rich draws a traceback's frames in a box as wide as the terminal; the
    # exception line printed below its bottom edge is a line of its own
    inner = "│ " + "x" * 74 + " │"
    lines = [
        "30: ╭" + "─" * 76 + "╮",
        *[f"30: {inner}" for _ in range(4)],
        "30: ╰" + "─" * 76 + "╯",
        "RuntimeError: view size is not compatible with input tensor's size and stride ",
    ]
    assert clean(_text(lines)) is None


@pytest.mark.parametrize(
    "prefix",
    ["trainer-1  | ", "2024-05-01T12:00:00.123456789Z stderr F "],
    ids=["compose", "cri"],
)
def test_a_collectors_prefix_hides_neither_a_cut_traceback_nor_its_rank(
    tmp_path: Path, prefix: str
) -> None:
    # a traceback cut before its exception line, behind a collector's prefix:
    # its frames still end the file and its innermost code line is the candidate
    frames = [f"[rank7]: {x}" for x in TRACE[1:5]] + ["[rank7]:   "]
    log = tmp_path / "worker.log"
    log.write_text("".join(prefix + x + "\n" for x in frames))
    d = dx.diagnose(str(log))
    assert d.initiating is not None and d.verdict != "healthy"
    assert (d.initiating.line, d.initiating.rank) == (4, 7)
    assert d.initiating.text.endswith("raise NotImplementedError()")


def test_a_collectors_prefix_alone_is_not_a_ranks_work(tmp_path: Path) -> None:
    # two ranks time out behind a compose prefix; the silent rank's last line
    # is its own console's, never the prefix in front of another rank's line
    console = tmp_path / "console_head.log"
    console.write_text("INFO:trainer: saving the full model state dict\n")
    waits = tmp_path / "timeouts.log"
    waits.write_text(
        "".join(
            f"trainer-1  | [rank{r}]:[E1129 11:56:57.20415{r}533 ProcessGroupNCCL.cpp:616] "
            f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=28956, "
            "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600008 "
            "milliseconds before timing out.\n"
            for r in (1, 2)
        )
    )
    d = dx.diagnose([str(console), str(waits)])
    assert d.initiating is not None and d.initiating.rank == 0
    assert (Path(d.initiating.file).name, d.initiating.line) == ("console_head.log", 1)


def test_a_production_console_with_colour_codes_is_read_without_them(tmp_path: Path) -> None:
    # larger than a paste: scanned as it is, the codes left out in C
    from denpex_fast.io.paste import MAX_BYTES

    log = tmp_path / "driver.log"
    filler = "".join(
        f"\x1b[36m(RayWorkerWrapper pid=41{r})\x1b[0m step {s} ok\n"
        for s in range(12000)
        for r in range(8)
    )
    assert len(filler) > MAX_BYTES
    log.write_text(
        filler
        + "\x1b[36m(RayWorkerWrapper pid=413)\x1b[0m \x1b[1;31mtorch.OutOfMemoryError:\x1b[0m CUDA"
        " out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB\n"
    )
    d = dx.diagnose(str(log))
    assert d.verdict in ("failure", "suspect") and d.initiating is not None
    assert d.initiating.line == 96001
    assert d.initiating.text.startswith("(RayWorkerWrapper pid=413) torch.OutOfMemoryError: CUDA")


def test_rows_a_terminal_padded_with_blanks_are_complete_and_its_wraps_still_join() -> None:
    # tmux/screen copies pad every row to the width: a padded row is whole; a
    # row whose text reaches the edge continues on the next one
    width = 90
    wrapped = (
        "W0511 18:18:50.796322 914 session_master.cc:539] task tpu-38 missed 1 health checks: "
        "UNAVAILABLE: failed to connect to all addresses"
    )
    rows = [
        "I0511 18:18:30.779521 915 session_master.cc:211] Worker Address: tpu-53:8471",
        "I0511 18:18:30.779522 915 session_master.cc:211] Worker Address: tpu-38:8471",
        wrapped[:width],
        wrapped[width:],
        "E0511 18:18:50.796514 915 session_master.cc:505] Session is failing",
    ]
    padded = [r.ljust(width) for r in rows]
    got = clean(_text(padded))
    assert got is not None
    out = [x.rstrip() for x in got.decode().split("\n")[:-1]]
    assert out == [rows[0], rows[1], wrapped, "", rows[4]]


def test_non_breaking_spaces_of_a_web_copy_are_read_as_spaces(tmp_path: Path) -> None:
    """A log copied from a rendered page or a chat has U+00A0 where the
    program printed blanks; the exception line is still one."""
    text = 'Traceback (most recent call last):\n  File "draft.py", line 9, in propose\nRuntimeError: The expanded size of the tensor (1024) must match the existing size (32)\n'
    log = tmp_path / "log.txt"
    log.write_text(text.replace(" ", "\u00a0"))
    got = clean(log.read_bytes())
    assert got is not None and got.decode() == text
    d = dx.diagnose(str(log))
    assert d.initiating is not None and d.initiating.line == 3
