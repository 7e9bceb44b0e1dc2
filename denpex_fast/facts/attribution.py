"""Attribution: fill ``rank``, ``host`` and ``ts`` of the match table.

The stage after the scanner.  Every row gets the rank and host of the
process that printed it and the time it was printed, when the line, its
path or the lines before it say so; what nothing says stays null::

    >>> import denpex_fast as dx
    >>> from denpex_fast.facts.attribution import attribute
    >>> table = dx.scan(["job/"])
    >>> att = attribute(table, default_tz="UTC")
    >>> att.table.select(["file", "line", "rank", "host", "ts"]).to_pylist()[:1]
    [{'file': 'job/console.log', 'line': 500, 'rank': 2, 'host': 'node7', 'ts': ...}]
    >>> att.notes
    ['ts of 1 row carried from the nearest earlier timestamped line (read back from the file)']

All per-row work is column-wise (``pyarrow.compute`` regexes and numpy);
Python loops run per file, or per merged read-back range.

**Rank**, first rule that applies (values already in the table are kept).
A global rank beats a local one wherever it sits in the line, and among
equals the outermost (the launcher's) wins, except an srun task label
before a torchrun worker's own ``[rankN]:`` (see 1.):

1. a launcher prefix at the line start that names a global rank:
   torchrun/PyTorch ``[rank3]:`` (also ``[rank3]:[E501 ...]`` and the
   ``[${rank}]:`` template ``[3]:``), Open MPI ``[1,3]<stderr>:``, Slurm
   ``srun --label`` ``3: `` (a task, so a torchrun worker's ``[rank7]:``
   behind it wins: one task runs a node's ranks), vLLM
   ``(VllmWorker rank=3 pid=254)``; these may
   sit behind other prefixes (``[default0]:``, pdsh ``node12: ``, Ray
   ``(RayWorkerWrapper pid=1061)``, kubectl ``[pod/x/c]``, a timestamp);
2. a tag in the message naming a global rank, leftmost first:
   ProcessGroupNCCL ``[PG 0 Rank 3]`` / ``[PG 0 (default_pg) Rank 3]``
   (other process groups number their own ranks, so they are skipped),
   DeepSpeed/NCCL ``[Rank 3]``, Lightning ``GLOBAL_RANK: 3``, the
   torchelastic summary ``rank : 3 (local_rank: 1)``, ``srun: error:
   node12: task 3: ...``, Open MPI ``Process name: [[1,1],3]`` and
   ``process rank 3 with PID ... on node ...``;
3. a *local* rank: the torchrun role prefix ``[default3]:``, then
   torchelastic ``local_rank: 2 (pid: 21002)`` and DeepSpeed's
   ``'--local_rank=2'`` (the notes say when local ranks were used: they
   equal global ranks only on one node); not on a launcher's report of a
   failed exit (``... exits with return code = 1``, ``CalledProcessError:
   ... returned non-zero exit status 1``), which echoes the command of the
   last process spawned, whichever failed;
4. another line of the same process in the same file (same NCCL
   ``host:pid``, same Ray/vLLM worker pid) that has a rank, when they agree;
5. the path: the file name (``rank5.log``, ``rank_5.txt``, ``rank-3.out``,
   ``train_rank3.log``, ``*-worker-3.log`` and Paddle's ``workerlog.3``: the
   worker index), a directory named only for a rank (``rank5/``, Open MPI's
   ``--output-filename`` ``1/rank.5/stderr``), the torchrun ``--log-dir`` layout
   ``<run_id>/attempt_0/5/stderr.log`` (``5`` is the local rank: it is taken
   as the rank, which is right on one node, and the notes say so).  Slurm
   ``slurm-1234_3.out`` names an array task and gives none; a directory
   such as ``oom-rank2-case/`` describes rather than names, and gives none.

pdsh ``worker-3: `` and NCCL's ``[3]`` (a CUDA device) are never ranks.
Every form is read behind a log collector's prefix too (a CRI file's
``<time> stderr F ``, ``kubectl logs --prefix``, docker compose's service
column: :func:`collector_length`).

**Host**: from the line, outermost launcher prefix first (pdsh
``node12: ``; kubectl ``[pod/name/container]``; Ray ``(... ip=10.0.0.2)``;
syslog/journal ``May 01 12:00:00 node12 kernel:``; NCCL ``node12:3121:3180
[3]``), then the message (torchelastic summary ``host : node7``, Slurm
``*** JOB 1 ON node12 CANCELLED``, ``srun: error: node12: task 3``, NCCL
``host:pid:tid [dev]`` anywhere, Kubeflow pod names such as
``pytorchjob-x-worker-3`` and ``pod/<name>``, ``mpirun ... on node X``);
then another line of the same process; then the path (``host-node3.log``,
``host=node3/``, a component named like a cluster node, ``node3``,
``nid001234``, ``ip-10-0-0-1``, anywhere in the path, and the file's own
name or its directory when they look like a host name and not like a run,
device or model: ``gpu-a100-07/`` is a host, ``gpu3/``, ``run2/`` and
``llama3/`` are not); last, a row without a host takes the host of its rank
when every other row of that rank in the same file names the same one.
pdsh prefixes are only read as hosts when the name holds a digit
(``node12``, ``ddp-0``), which keeps ``RuntimeError: `` out.

**Time**: see :mod:`denpex_fast.facts.timeparse` for the formats.  Naive times are
read in ``default_tz``; year-less times (glog, syslog, vLLM) take the year
from other timestamps of the same file (its rows, else the first 64 KiB of
the file; the date is taken on the side of that timestamp where the line
is), else from the file's modification time (the latest date not after
it); dmesg uptimes need a boot time (``boot_time=``, or a line of the same
file with both a clock and an uptime, e.g. ``kernel: [12.3]`` in syslog or
the RTC line) and stay null without one (they are not carried either).  A row whose line has no timestamp takes the nearest earlier
timestamped line of its file: plain files are read back with bounded
``os.pread`` windows before the row (4 KiB, growing to 16 MiB, never past
the previous row of the same file, whose time is known); compressed files,
stdin and files that cannot be opened carry the nearest earlier
timestamped row of the table instead.  ``Attribution.ts_carried`` marks
these rows and ``Attribution.notes`` says what was assumed.

This module is long because rank, host and time attribution share the vectorised
per-line facts and the per-file time context; they are computed in one pass over
the table.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import re
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..schema import MATCH_SCHEMA, file_codes
from . import regex
from . import timeparse as tp
from .timeparse import MISSING, ParsedTimes

BATCH_ROWS = 1 << 18  # rows per parallel batch
HEAD_WINDOW = 64 << 10  # bytes read from a file's start for a year or boot reference
READ_BACK = (4 << 10, 64 << 10, 1 << 20, 16 << 20)  # read-back window per pass
FLUSH_BYTES = 16 << 20  # read-back bytes parsed per vectorised batch
LINE_HEAD = 256  # bytes of a read-back line that are parsed
HEAD_TAGS = 256  # bytes of a line searched for rank/host tags in the message

BootTime = _dt.datetime | float | int | str

# ----------------------------------------------------------------------------
# line prefixes

_HOST = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
# a pdsh prefix: a letter first and a digit inside, so "RuntimeError: " is no host
_HOST_D = r"[A-Za-z][A-Za-z0-9-]*[0-9][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*"
_N = r"\d{1,7}"
_MON = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"

# Tags a launcher or collector puts on every line of one process's stream.
# Open MPI --tag-output [job,rank]; horovodrun under Gloo tags [rank] alone;
# SageMaker's mpirun writes [job,mpirank:rank,host]
_MPI_RANK = r"\[(?:\d+,)?(?:mpirank:)?"
_MPI_HOST = r"(?:,[A-Za-z][\w.-]{0,62})?\]<std(?:out|err)>:"
_MPI_TAG = _MPI_RANK + r"\d+" + _MPI_HOST + " ?"


def _mpi_rank(group: str) -> str:
    """Open MPI's stream tag with its rank in the named ``group``."""
    return _MPI_RANK + f"(?P<{group}>{_N})" + _MPI_HOST


_WORKER_TAG = r"\([\w-]+ [^()]*pid=\d+[^()]*\) ?"  # Ray / vLLM workers

# Prefixes log collectors put before every line, whichever process wrote it.
# kubectl logs --prefix; the Kubeflow training SDK's get_job_logs ("[Pod <name>]: ")
_KUBECTL = r"\[pod/[^\]\s]+\] |\[Pod [^\]\s]+\]: "
_COMPOSE = r"[\w.-]+ +\| "  # docker compose logs: "trainer-1  | "
_ANSI = r"\x1b\[[\d;]*m"  # terminal colours kept by `| tee` (Ray, vLLM, rich)
# kubectl logs --timestamps and CRI files (kubelet's /var/log/pods: "<time> stderr F "):
# RFC 3339 with its zone, unlike the times loggers print in their own prefixes
_COLLECTOR_TIME = (
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) (?:std(?:out|err) [FP] )?"
)

# Prefixes launchers and log collectors put before a process's own text.
_CHAIN = (
    "(?:"
    + "|".join(
        [
            r"\[[A-Za-z_][\w-]*\d+\]: ?",  # [rank3]: [default3]:
            r"\[\d+\]: ?",  # [${rank}]: template
            _MPI_TAG,
            # Open MPI --timestamp-output: ctime() glued to the tag that follows
            r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:" + _MON + r") [ \d]\d \d\d:\d\d:\d\d \d{4} ?",
            r" *\d+: ",  # srun --label
            _HOST_D + ": ",  # pdsh
            _WORKER_TAG,
            _KUBECTL,
            # any leading time: a collector's, or a logger's own before a tag
            r"\[?\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?\]? (?:std(?:out|err) [FP] )?",
            _COMPOSE,
            _ANSI,
        ]
    )
    + ")*?"
)
_COLLECTED = "(?:" + "|".join([_KUBECTL, _COLLECTOR_TIME, _COMPOSE, _ANSI]) + ")*"
_COLLECTOR_RE = re.compile("^" + _COLLECTED)

_CHAIN_RE = re.compile("^" + _CHAIN.removesuffix("?"))  # greedy


#: a tag a launcher or collector puts on *every* line of a process's stream:
#: mpirun --tag-output ``[1,0]<stdout>:``, torchrun ``[default0]:``, srun -l
#: ``0: ``, Ray/vLLM ``(Worker pid=1)``.  (PyTorch's ``[rank0]:`` is not one:
#: it marks the Python lines of an exception only.)
STREAM_TAG = re.compile(
    "^"
    + _COLLECTED
    + r"\s*(?:"
    + _MPI_TAG
    + r"|\[(?!rank\d)[A-Za-z_][\w-]*?\d+\]:|\d{1,5}: |"
    + _WORKER_TAG
    + ")"
)


#: the tags of :data:`STREAM_TAG` a launcher puts on a process's output
#: stream itself (its file descriptors): srun's label, Open MPI's tag,
#: torchrun's.  Native libraries' writes carry them too, unlike the
#: Python-level tags of Ray and vLLM workers, which NCCL's own lines lack.
FD_STREAM_TAG = re.compile(
    "^" + _COLLECTED + r"\s*(?:" + _MPI_TAG + r"|\[(?!rank\d)[A-Za-z_][\w-]*?\d+\]:|\d{1,5}: )"
)


def collector_length(text: str) -> int:
    """How many leading characters of ``text`` a log collector put there (a
    CRI file's ``<time> stderr F ``, ``kubectl logs --prefix``, docker
    compose's service column, terminal colours): what comes after is the
    line as its process wrote it, launcher tags included."""
    return _COLLECTOR_RE.match(text).end()  # type: ignore[union-attr]


def prefix_length(text: str) -> int:
    """How many leading characters of ``text`` are launcher or collector
    prefixes (rank tags, timestamps, pod or service names) rather than the
    process's own words."""
    m = _CHAIN_RE.match(text)
    return m.end() if m else 0


_RANK_PREFIX_FORMS = (
    r"(?:\[rank(?P<a>" + _N + r")\]:|" + _mpi_rank("b") + r"|\s*(?P<c>" + _N + r"): "
    r"|\[(?P<d>" + _N + r")\]:."
    # IBM Spectrum MPI / PAMI glue the rank to the message: "[0]Error opening ..."
    r"|\[(?P<pm>" + _N + r")\][A-Z][a-z]"
    r"|\([\w-]+ rank=(?P<e>" + _N + r") [^()]*pid=\d+[^()]*\)"
    # vLLM's multiprocessing workers: Worker_TP1, Worker_DP0_TP1_EP1 (with no
    # data- or pipeline-parallel index above 0 the tensor-parallel index is the rank)
    r"|\(Worker(?:_DP0)?(?:_PP0)?_TP(?P<v>" + _N + r")(?:_EP\d+)? pid=\d+\))"
)
_SRUN_TASK_THEN_RANK = (
    "^" + _COLLECTED + r"\s*\d{1,5}: (?:\[[A-Za-z_][\w-]*\d+\]: ?)*?\[rank(?P<a>" + _N + r")\]:"
)
# the same forms at the line start, then behind other prefixes (slower: tried on fewer lines)
_RANK_PREFIX_AT0 = "^" + _RANK_PREFIX_FORMS
_RANK_PREFIX = "^" + _CHAIN + _RANK_PREFIX_FORMS
_LOCAL_FORM = r"\[(?P<role>[A-Za-z_][\w-]*?)(?P<l>" + _N + r")\]:"
_LOCAL_PREFIX_AT0 = "^" + _LOCAL_FORM
_LOCAL_PREFIX = "^" + _CHAIN + _LOCAL_FORM
_RANK_TAG = (
    "\\[PG (?:ID )?(?P<pg>\\d+)(?P<pgx>[^\\]]*?) Rank (?P<p>" + _N + r")\]"
    r"|\[Rank (?P<r>" + _N + r")\]"
    r"|GLOBAL_RANK: (?P<g>" + _N + r")"
    r"|^" + _COLLECTED + r"\s*rank\s*: (?P<t>" + _N + r")(?:$|[^\d])"
    r"|srun: error: [^\s:]+: task (?P<s>" + _N + r"):"
    r"|Process name: \[\[\d+,\d+\],(?P<m>" + _N + r")\]"  # Open MPI abort summary
    # Open MPI's components name the process that prints: [host][[job,1],vpid][file.c:N:fn]
    r"|(?:^|[\s|])\[[^\]\s]+\]\[\[\d+,\d+\],(?P<om>" + _N + r")\]\["
    r"|process rank (?P<o>" + _N + r") with PID \d+ on node "  # mpirun noticed that ...
    r"|local_rank: (?P<l>" + _N + r") \(pid: \d+\)"
    r"|'--local_rank=(?P<dl>" + _N + r")'"  # DeepSpeed launcher
    # a worker echoing the argv its launcher gave it: argparse refusing the
    # flag, or the script printing its parsed arguments
    r"|unrecognized arguments: (?:\S+ )*?--local[-_]rank[= ](?P<ua>" + _N + r")\b"
    r"|\bNamespace\((?:[^()]|\([^()]*\))*?\blocal_rank=(?P<ns>" + _N + r")\b"
    # torch.multiprocessing.spawn names the failed child by its process index
    # (the local rank the script was given)
    r"|^" + _COLLECTED + r"-- Process (?P<sp>" + _N + r") terminated with the following error:"
    r"|\bprocess (?P<sx>" + _N + r") terminated with (?:signal|exit code) "
    # JAX's coordination service names a process by its task index (its process id)
    r"|/job:jax_worker/replica:\d+/task:(?P<jt>" + _N + r")\b"
    # torch_npu's error record: "[ERROR] <time> (PID:n, Device:d, RankID:r) ERR02200 ..."
    r"|\(PID:\d+, Device:\d+, RankID:(?P<hr>" + _N + r")\)"
    # SGLang's scheduler tags its lines "[<time> TP3]" ("DP1 TP3", "TP3 EP3"):
    # the tensor-parallel rank is the global one unless pipeline stages
    # ("PP1 TP3") number the ranks again
    r"|\d\d:\d\d:\d\d(?: DP\d+)? TP(?P<sg>" + _N + r")(?: EP\d+)?\]"
    # a launcher's stream tag behind a collector's prefix no chain knows
    # (Determined: "[time] cf108822 [RUNNING] ||  <ctime>[1]<stderr>:")
    r"|" + _mpi_rank("hv")
)
_RANK_TAG_GROUPS = "p r g t s m om o l dl ua ns sp sx jt hr sg hv".split()
# The wordings a training script's own logger uses for its rank, in any case:
# "[rank 2]", "[RANK: 2]", "rank=2", "rank[2]", "Rank 1 will connect", "rank 3 of 8",
# "trainer.rank2".  Weaker than every form above (tried after them); a rank
# qualified by another word ("peer rank 3", "local rank 1", "src_rank=0")
# names some other process, so those matches are dropped.
_RANK_LOOSE = (
    r"(?i)\[rank[\s:=]*(?P<k>" + _N + r")\]"
    r"|(?i)(?:^|[^\w-])(?P<q>(?:local|peer|src|dst|remote|node|group|target|from|to|next|prev"
    r"|tp|pp|dp|cp|ep|mp|pg|expert)[ _-])?rank ?[=:\[]? ?(?P<w>" + _N + r")(?:$|[^\w.]|\.\D|\.$)"
    r"|(?i)(?:^|[\s.\[(])rank(?P<z>" + _N + r")(?:$|[\s\]:),])"
)
_LOCAL_TAGS = ("l", "dl", "ua", "ns", "sp", "sx")
# the end of a launcher's line reporting that a process it spawned failed
_EXIT_ECHO = r"\] exits with return code = -?\d+|\]' returned non-zero exit status -?\d+"

_HOST_PREFIX = (
    "^" + _CHAIN + r"(?:(?P<pdsh>" + _HOST_D + r"): "
    r"|\[pod/(?P<pod>[^/\]\s]+)[^\]\s]*\] "
    r"|\([\w-]+ [^()]*ip=(?P<ray>[0-9a-fA-F.:]+)[^()]*\) ?"
    r"|(?:<\d+>)?(?:(?:" + _MON + r") +\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?"
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d))"
    r" (?P<sys>" + _HOST + r") [^\s:\[]+(?:\[\d+\])?: "
    r"|(?P<nccl>" + _HOST + r"):(?P<pid>\d+):\d+ \[\d+\] "
    # Open MPI's and glibc's handlers: "[host:pid] *** Process received signal ***"
    r"|\[(?P<sig>" + _HOST_D + r"):(?P<sigpid>\d+)\] )"
)
_HOST_TAG = (
    r"^\s*host\s*: (?P<elastic>" + _HOST + r")\s*$"
    r"|\*\*\* (?:JOB|STEP) [\w.]+ ON (?P<slurm>" + _HOST + r") CANCELLED"
    r"|srun: error: (?P<srun>" + _HOST + r"): task"
    r"|(?:^|[\s\[(])(?P<nccl>" + _HOST + r"):(?P<pid>\d+):\d+ \[\d+\] "
    r"|process rank \d+ with PID \d+ on node (?P<mpi>" + _HOST + r")"
    r"|(?:^|[\s|])\[(?P<ompi>" + _HOST + r")\]\[\[\d+,\d+\],\d+\]\["
    r"|pod/(?P<pod>[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?)"
    r"|(?:^|[^-\w.])(?P<kf>[a-z0-9][-a-z0-9]*-(?:worker|master|launcher|chief|ps|evaluator)"
    r"-\d+)(?:$|[^-\w])"
)
# a process's own prefix: Ray/vLLM workers "(Name pid=N, ip=A)"
_PROC_PREFIX = (
    "^" + _CHAIN + r"\([\w-]+ (?:[^()]*? )?pid=(?P<pid>\d+)(?:, ip=(?P<ip>[0-9a-fA-F.:]+))?"
)
# words that fill a host slot in look-alike lines ("... INFO root: msg")
_NOT_HOSTS = pa.array(
    [
        "DEBUG",
        "INFO",
        "WARN",
        "WARNING",
        "ERROR",
        "CRITICAL",
        "FATAL",
        "TRACE",
        "NOTICE",
        "localhost",
        "...",
    ]
)


def _ungrouped(expr: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", expr)


def _extract(
    arr: pa.Array, rows: np.ndarray, expr: str
) -> tuple[np.ndarray, pa.StructArray | None]:
    """Rows (of ``rows``) where ``expr`` matches, and its groups there.

    A plain match first: RE2 answers it with a DFA, while extracting groups
    is several times slower, so only matching lines pay for it.
    """
    if len(rows) == 0:
        return rows, None
    sub = arr if len(rows) == len(arr) else arr.take(pa.array(rows))
    hit = regex.matches(sub, _ungrouped(expr))
    if not hit.any():
        return rows[:0], None
    return rows[hit], regex.extract(sub.filter(pa.array(hit)), expr)


def _groups_int(parts: pa.StructArray, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(value, index of the group that held it) of the one non-empty group, or (-1, -1)."""
    n = len(parts)
    val = np.full(n, -1, np.int64)
    which = np.full(n, -1, np.int64)
    for k, name in enumerate(names):
        g = parts.field(name)
        has = pc.not_equal(g, "").to_numpy(zero_copy_only=False) & (val < 0)
        if has.any():
            val[has] = pc.cast(g.filter(pa.array(has)), pa.int64()).to_numpy(zero_copy_only=False)
            which[has] = k
    return val, which


def _groups_str(parts: pa.StructArray, names: list[str]) -> pa.Array:
    """The first non-empty group of each element, as strings (null when none)."""
    out = None
    for name in names:
        g = parts.field(name)
        g = pc.if_else(pc.equal(g, ""), pa.scalar(None, pa.string()), g)
        out = g if out is None else pc.coalesce(out, g)
    return out


@dataclass
class LineFacts:
    """What lines say about themselves (one element per line)."""

    rank: np.ndarray  # int64, -1 = unknown
    rank_local: np.ndarray  # bool: the rank is a local rank ([default3]:, local_rank:)
    host: pa.Array  # string, null = unknown
    times: ParsedTimes
    process: pa.Array  # string naming the printing process (NCCL host:pid, Ray pid), or null


def line_facts(text: pa.Array | pa.ChunkedArray) -> LineFacts:
    """Rank, host and timestamp parts of each line (see the module doc for the forms)."""
    arr = tp._string_array(text)
    n = len(arr)
    # tags in the message are looked for near the line start only
    longest = int(pc.max(pc.binary_length(arr)).as_py() or 0) if n else 0
    head = arr if longest <= HEAD_TAGS else pc.utf8_slice_codeunits(arr, 0, HEAD_TAGS)
    rank = np.full(n, -1, np.int64)
    local = np.zeros(n, bool)

    def prefix(expr: str, names: list[str], is_local: bool) -> None:
        at, parts = _extract(arr, np.flatnonzero(rank < 0), expr)
        if parts is not None:
            rank[at], _ = _groups_int(parts, names)
            local[at] = is_local

    prefix(_RANK_PREFIX_AT0, ["a", "b", "c", "d", "pm", "e", "v"], False)
    prefix(_RANK_PREFIX, ["a", "b", "c", "d", "pm", "e", "v"], False)
    # torchrun under "srun -l": srun numbers its tasks (one per node), the
    # worker's own "[rank7]:" behind that label names the process
    at, parts = _extract(arr, np.flatnonzero(rank >= 0), _SRUN_TASK_THEN_RANK)
    if parts is not None:
        rank[at], _ = _groups_int(parts, ["a"])
    at, parts = _extract(head, np.flatnonzero(rank < 0), _RANK_TAG)
    tag_local = np.zeros(0, np.int64)
    tagged = np.zeros(n, bool)  # a strong tag decided (maybe "another group's rank": none)
    tagged[at] = True
    if parts is not None:
        val, which = _groups_int(parts, _RANK_TAG_GROUPS)
        pg = parts.field("pg")
        # [PG 3 Rank 1]: the rank inside process group 3, not the global rank
        other_pg = pc.and_(pc.not_equal(pg, ""), pc.not_equal(pg, "0")).to_numpy(
            zero_copy_only=False
        ) & ~pc.match_substring(parts.field("pgx"), "default_pg").to_numpy(zero_copy_only=False)
        val[(which == 0) & other_pg] = -1
        # a launcher's report of a failed exit prints the command of the last
        # process it spawned, whichever failed (DeepSpeed's sigkill_handler,
        # the legacy torch.distributed.launch): that --local_rank names no one
        echoed = np.flatnonzero(which == _RANK_TAG_GROUPS.index("dl"))
        if len(echoed):
            val[echoed[regex.matches(arr.take(pa.array(at[echoed])), _EXIT_ECHO)]] = -1
        is_local = np.isin(which, [_RANK_TAG_GROUPS.index(x) for x in _LOCAL_TAGS])
        rank[at[~is_local]] = val[~is_local]
        tag_local = np.c_[at[is_local], val[is_local]]
    at, parts = _extract(head, np.flatnonzero((rank < 0) & ~tagged), _RANK_LOOSE)
    if parts is not None:
        val, _ = _groups_int(parts, ["k", "w", "z"])
        val[pc.not_equal(parts.field("q"), "").to_numpy(zero_copy_only=False)] = -1
        rank[at] = val
    # local ranks last: the launcher's role prefix, then local_rank: tags
    prefix(_LOCAL_PREFIX_AT0, ["l"], True)
    prefix(_LOCAL_PREFIX, ["l"], True)
    if len(tag_local):
        rows, vals = tag_local[:, 0], tag_local[:, 1]
        free = rank[rows] < 0
        rank[rows[free]] = vals[free]
        local[rows[free]] = vals[free] >= 0

    host_src: list[pa.Array] = []
    proc_src: list[pa.Array] = []
    host_idx = np.full(n, -1, np.int64)
    proc_idx = np.full(n, -1, np.int64)
    at, parts = _extract(arr, np.arange(n), _HOST_PREFIX)
    if parts is not None:
        host_src.append(_groups_str(parts, ["pdsh", "pod", "ray", "sys", "nccl", "sig"]))
        host_idx[at] = np.arange(len(at))
        proc_src.append(_nccl_process(parts, ("nccl", "pid"), ("sig", "sigpid")))
        proc_idx[at] = np.arange(len(at))
    base = len(host_src[0]) if host_src else 0
    at, parts = _extract(head, np.flatnonzero(host_idx < 0), _HOST_TAG)
    if parts is not None:
        host_src.append(
            _groups_str(parts, ["elastic", "slurm", "srun", "nccl", "mpi", "ompi", "pod", "kf"])
        )
        host_idx[at] = base + np.arange(len(at))
        proc_src.append(_nccl_process(parts, ("nccl", "pid")))
        proc_idx[at] = base + np.arange(len(at))
    host = _gather_strings(host_src, host_idx)
    base = sum(len(p) for p in proc_src)
    at, parts = _extract(arr, np.arange(n), _PROC_PREFIX)
    if parts is not None:
        ip = pc.fill_null(parts.field("ip"), "")
        proc_src.append(pc.binary_join_element_wise("ray", ip, parts.field("pid"), ":"))
        proc_idx[at] = base + np.arange(len(at))
    process = _gather_strings(proc_src, proc_idx)
    # look-alike lines put a log level or a placeholder where a host would be
    bad = pc.or_kleene(
        pc.is_in(host, value_set=_NOT_HOSTS),
        # numbers, and CANN error codes that open a line like a pdsh host ("EI0002: ")
        pc.match_substring_regex(host, r"^\d+$|^-|^[EW][A-Z0-9]\d{4}$"),
    )
    host = pc.if_else(pc.fill_null(bad, False), pa.scalar(None, pa.string()), host)
    return LineFacts(rank, local, host, tp.parse_times(arr), process)


def _nccl_process(parts: pa.StructArray, *groups: tuple[str, str]) -> pa.Array:
    """``nccl:host:pid`` where a (host, pid) pair of ``groups`` matched (NCCL's
    ``host:pid:tid``, a signal handler's ``[host:pid]``: one OS process), else null."""
    out = pa.nulls(len(parts), pa.string())
    for host_group, pid_group in groups:
        host = parts.field(host_group)
        key = pc.binary_join_element_wise("nccl", host, parts.field(pid_group), ":")
        out = pc.if_else(pc.equal(host, ""), out, key)
    return out


def _gather_strings(sources: list[pa.Array], idx: np.ndarray) -> pa.Array:
    """``concat(sources)[idx]`` with -1 giving null."""
    values = pa.concat_arrays([*(s.cast(pa.string()) for s in sources), pa.nulls(1, pa.string())])
    return values.take(pa.array(np.where(idx < 0, len(values) - 1, idx)))


# ----------------------------------------------------------------------------
# paths

_PATH_RANK = re.compile(r"(?:^|[^A-Za-z0-9])rank[-_]?(\d{1,7})(?![0-9])", re.I)
# a directory named for a rank; ``rank.N`` is Open MPI's --output-filename layout
_DIR_RANK = re.compile(r"^rank[-_.]?(\d{1,7})$", re.I)
_PATH_RANK_PREFIXED = re.compile(r"(?:local|node|group|mp|pp|tp|dp|ep|cp)[-_]rank[-_]?\d", re.I)
# ``worker-3.log``; Paddle's launcher writes ``log/workerlog.3`` (the trainer's local index)
_PATH_WORKER = re.compile(r"(?:^|[-_.])worker(?:log)?[-_.]?(\d{1,7})$", re.I)
_TORCHRUN_DIR = re.compile(r"(?:^|/)attempt_\d+/(\d{1,7})/(?:stdout|stderr)\.log$")
_EXPLICIT_HOST = re.compile(r"^(?:host|hostname|node)[-_=](" + _HOST + r")$", re.I)
_NODE_NAME = re.compile(
    r"^(?:node|nid|host|compute|cn|gpu-?node|worker-?node|dgx|hgx|ip)"
    r"[-_]?\d+(?:[-.][A-Za-z0-9]+)*$",
    re.I,
)
_HOST_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9-]*[0-9][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*$")
# Names with a digit that are runs, files, devices or models, not hosts: a
# word from the first set followed by a number ("gpu3", "run2", "llama3"), or
# any name starting with a word from the second ("rank-3", "llama-3-8b").
_NOT_HOST_WORDS = frozenset(
    """
array batch case chunk console cp cuda day debug dev device dp dump ep err error eval fold gpu
iter iteration job jobs local log logs model mp out output part phase pid pp proc process py
python sample shard split stage stderr stdout t task temp tp train training v ver version worker x
""".split()
)
_NOT_HOST_FIRST = frozenset(
    """
attempt bert bloom case checkpoint ckpt deepspeed epoch exp experiment falcon gemma gpt llama megatron
mistral mixtral nccl opt phi pyspy pytest qwen rank run runs seed slurm step t5 test tests tmp
torch trial
""".split()
)
_LOG_SUFFIXES = (".gz", ".zst", ".zstd", ".log", ".out", ".err", ".txt", ".stderr", ".stdout")


@dataclass(frozen=True)
class PathFacts:
    """What a file's path says: rank (``None``: nothing), how, and host."""

    rank: int | None = None
    rank_how: str = ""  # "path" or "torchrun-log-dir"
    host: str | None = None


def _stem(name: str) -> str:
    changed = True
    while changed:
        changed = False
        for suf in _LOG_SUFFIXES:
            if name.lower().endswith(suf) and len(name) > len(suf):
                name, changed = name[: -len(suf)], True
    return name


def _host_word_ok(token: str) -> bool:
    first = re.split(r"[-_.]", token, maxsplit=1)[0].lower()
    word = re.match(r"[a-z]+", first)
    if word is None or word.group(0) in _NOT_HOST_FIRST:
        return False
    plain = re.fullmatch(r"([a-z]+)[-_]?\d+", token.lower())
    if plain and plain.group(1) in _NOT_HOST_WORDS:
        return False
    return not _PATH_RANK.search(token)  # "oom-rank2-watchdog" describes, it does not name


def log_parts_key(name: str) -> tuple[str, int] | None:
    """(directory, rank) when ``name`` is one part of a rank's log: a file
    whose path names its rank, grouped with the others of that rank in the
    same directory (``rank3/part0001.log``, ``rank3.log`` and ``rank3.log.1``);
    None for a file whose path names no rank."""
    rank = path_facts(name).rank
    return None if rank is None else (os.path.dirname(name), rank)


@functools.lru_cache(maxsize=1 << 16)
def path_facts(name: str) -> PathFacts:
    """Rank and host implied by a path (see the module doc for the forms)."""
    path = name.split("::", 1)[-1].replace("\\", "/")
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    if not parts:
        return PathFacts()
    stem = _stem(parts[-1])
    comps = parts[:-1] + [stem]  # innermost last
    rank, how = None, ""
    m = _TORCHRUN_DIR.search(path)
    if m:
        rank, how = int(m.group(1)), "torchrun-log-dir"
    else:
        # the file's name may say it among other words (train_rank3.log); a
        # directory only when that is all it says (a case named "oom-rank2-..." is no rank)
        for i, comp in enumerate(reversed(comps)):
            if _PATH_RANK_PREFIXED.search(comp):
                continue
            m = (_PATH_RANK if i == 0 else _DIR_RANK).search(comp)
            if m:
                rank, how = int(m.group(1)), "path"
                break
        if rank is None:
            m = _PATH_WORKER.search(stem)
            if m:
                rank, how = int(m.group(1)), "path"
    host = None
    for i, comp in enumerate(reversed(comps)):
        m = _EXPLICIT_HOST.match(comp)
        if m and not _DIR_RANK.search(m.group(1)):
            host = m.group(1)
            break
        first = re.split(r"[_]", comp, maxsplit=1)[0]
        if _NODE_NAME.match(comp) or (first != comp and _NODE_NAME.match(first)):
            host = comp if _NODE_NAME.match(comp) else first
            break
        # the file's name and its directory: any host-shaped name that is no run/model word
        if i < 2 and _HOST_LIKE.match(comp) and _host_word_ok(comp) and len(comp) <= 63:
            host = comp
            break
    return PathFacts(rank, how, host)


# ----------------------------------------------------------------------------
# files: what can be read back


@dataclass
class _Source:
    name: str
    path: bytes | None = None
    compression: str | None = None
    size: int = 0
    mtime: float | None = None
    problem: str = ""  # why it cannot be read ("" = readable)
    _head: tuple[np.ndarray, pa.Array] | None = None
    reader: Any = None  # the job's readback.JobBytes: every read goes through it

    @property
    def plain(self) -> bool:
        return not self.problem and self.compression is None

    def head_lines(self) -> tuple[np.ndarray, pa.Array]:
        """Offsets and texts of the lines in the first ``HEAD_WINDOW`` bytes."""
        if self._head is None:
            data = b""
            if not self.problem:
                try:
                    data = _read_head(self, HEAD_WINDOW)
                except (OSError, ValueError, EOFError):
                    data = b""
            if data and len(data) == HEAD_WINDOW:
                data = data[: data.rfind(b"\n") + 1]  # only whole lines
            self._head = _split_lines([(0, data, True)])[:2]
        return self._head


def _open_source(name: str, reader: Any) -> _Source:
    from ..io.sources import STDIN

    src = _Source(name, reader=reader)
    inp = reader.input(name)
    if inp is None:
        src.problem = (
            "stdin" if name == STDIN else "archive member" if "::" in name else "cannot open"
        )
        return src
    try:
        st = os.stat(inp.path)
    except OSError as exc:
        src.problem = exc.strerror or "cannot open"
        return src
    src.path, src.size, src.mtime, src.compression = (
        inp.path,
        st.st_size,
        st.st_mtime,
        inp.compression,
    )
    return src


def _read_head(src: _Source, nbytes: int) -> bytes:
    return src.reader.read(src.name, 0, nbytes) or b""


def _split_lines(
    chunks: list[tuple[int, bytes, bool]],
) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """Lines that start inside each chunk, as (file offsets, texts of their
    first bytes, the chunk of each line), in chunk order.

    A chunk is ``(file offset of data[0], data, data starts a line)``; a line
    begins after each newline (and at ``data[0]`` when it starts a line);
    the partial line at the front of a chunk that does not start a line
    belongs to an earlier chunk and is skipped.  Bytes >= 0x80 become
    ``?`` so the texts are valid UTF-8 (timestamps are ASCII).  Column-wise
    over all chunks at once.
    """
    sizes = np.array([len(c[1]) for c in chunks], np.int64)
    if not chunks or sizes.sum() == 0:
        return np.zeros(0, np.int64), pa.array([], pa.string()), np.zeros(0, np.int64)
    blob = np.frombuffer(b"".join(c[1] for c in chunks), np.uint8).copy()
    blob[blob >= 0x80] = ord("?")
    cend = np.cumsum(sizes)
    cstart = cend - sizes
    base = np.array([c[0] for c in chunks], np.int64)
    at_start = np.array([c[2] for c in chunks], bool) & (sizes > 0)
    nl = np.flatnonzero(blob == 10)
    after = nl + 1
    after = after[after < cend[np.searchsorted(cend, nl, side="right")]] if len(nl) else after
    starts = np.sort(np.r_[after, cstart[at_start]])
    chunk = np.searchsorted(cend, starts, side="right")
    # each line ends at the next newline of its chunk, or at the chunk's end
    k = np.searchsorted(nl, starts)
    nxt = nl[np.minimum(k, len(nl) - 1)] if len(nl) else np.zeros(len(starts), np.int64)
    ends = np.where((k < len(nl)) & (nxt < cend[chunk]), nxt, cend[chunk])
    ends = np.minimum(ends, starts + LINE_HEAD)
    offsets = base[chunk] + (starts - cstart[chunk])
    if len(starts) == 0:
        return offsets, pa.array([], pa.string()), chunk
    inter = np.empty(2 * len(starts) + 1, np.int64)
    inter[0:-1:2] = starts
    inter[1::2] = ends
    inter[-1] = ends[-1]
    spread = pa.LargeStringArray.from_buffers(
        2 * len(starts), pa.py_buffer(inter), pa.py_buffer(blob)
    )
    texts = spread.take(pa.array(np.arange(0, 2 * len(starts), 2))).cast(pa.string())
    return offsets, texts, chunk


# ----------------------------------------------------------------------------
# the result


@dataclass
class Attribution:
    """The attributed match table and what was assumed to fill it.

    ``table``: the input rows with ``rank``, ``host`` and ``ts`` filled where
    known (schema of :data:`~denpex_fast.engine.scanner.MATCH_SCHEMA`);
    ``notes``: one sentence per assumption (time zones, years, boot times,
    carried timestamps, local ranks); ``ts_carried``: per row, True where
    ``ts`` was taken from an earlier line rather than the row's own line.
    """

    table: pa.Table
    notes: list[str] = field(default_factory=list)
    ts_carried: pa.BooleanArray = field(default_factory=lambda: pa.array([], pa.bool_()))

    def __repr__(self) -> str:
        n = self.table.num_rows
        known = [
            f"{c} {n - self.table.column(c).null_count:,}"
            for c in ("rank", "host", "ts")
            if c in self.table.column_names
        ]
        notes = len(self.notes)
        return (
            f"<Attribution {n:,} row{'' if n == 1 else 's'}; known: {', '.join(known)}; "
            f"{notes} note{'' if notes == 1 else 's'}>"
        )


def _files_phrase(names: list[str] | set[str], limit: int = 3) -> str:
    names = sorted(names)
    if len(names) == 1:
        return names[0]
    shown = ", ".join(names[:limit])
    more = f", ... ({len(names)} files)" if len(names) > limit else ""
    return f"{shown}{more}" if len(names) > limit else shown


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


class _Notes:
    def __init__(self) -> None:
        self.files: dict[str, set[str]] = defaultdict(set)
        self.counts: dict[str, int] = defaultdict(int)
        self.extra: dict[str, str] = {}

    def file(self, key: str, name: str) -> None:
        self.files[key].add(name)


def _boot_us(value: BootTime, tz: str) -> int:
    if isinstance(value, (int, float)):
        return int(round(float(value) * tp.US))
    if isinstance(value, str):
        value = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if not isinstance(value, _dt.datetime):
        raise TypeError(f"boot_time must be a datetime, epoch seconds or ISO string, got {value!r}")
    if value.tzinfo is not None:
        return int(round(value.timestamp() * tp.US))
    naive = int((value - _dt.datetime(1970, 1, 1)) // _dt.timedelta(microseconds=1))
    return int(tp.wall_to_utc(np.array([naive], np.int64), tz)[0])


class _TimeContext:
    """Per-file facts needed to turn parsed parts into UTC: year reference, boot time."""

    def __init__(
        self,
        tz: str,
        boot_time: BootTime | Mapping[str, BootTime] | None,
        sources: list[_Source],
        notes: _Notes,
    ) -> None:
        self.tz = tz
        self.sources = sources
        self.notes = notes
        self.boot_arg = boot_time
        self.year_ref: dict[int, int] = {}  # file -> wall-clock reference (us)
        self.ref_offset: dict[int, int] = {}  # file -> offset of the reference line (-1: none)
        self.ref_source: dict[int, str] = {}  # file -> "file", "mtime" or "now"
        self.boot: dict[int, int] = {}  # file -> boot time (UTC us)
        self._now = int(time.time() * tp.US)

    def set_row_refs(self, file_idx: np.ndarray, offset: np.ndarray, parsed: ParsedTimes) -> None:
        """The earliest full-date timestamp of each file's rows is its year reference."""
        full = np.flatnonzero((parsed.kind == tp.INSTANT) | (parsed.kind == tp.NAIVE))
        if len(full) == 0:
            return
        order = full[np.lexsort((offset[full], file_idx[full]))]
        files, first = np.unique(file_idx[order], return_index=True)
        for f, i in zip(files.tolist(), order[first].tolist()):
            self.year_ref[f] = int(parsed.value[i])
            self.ref_offset[f] = int(offset[i])
            self.ref_source[f] = "file"

    def ref_for(self, f: int) -> int:
        if f in self.year_ref:
            return self.year_ref[f]
        src = self.sources[f]
        offs, texts = src.head_lines()
        p = tp.parse_times(texts)
        full = np.flatnonzero((p.kind == tp.INSTANT) | (p.kind == tp.NAIVE))
        at = -1
        if len(full):
            ref, how, at = int(p.value[full[0]]), "file", int(offs[full[0]])
        elif src.mtime is not None:
            ref, how = int(src.mtime * tp.US), "mtime"
        else:
            ref, how = self._now, "now"
        self.year_ref[f] = ref
        self.ref_offset[f] = at
        self.ref_source[f] = how
        return ref

    def boot_for(
        self,
        f: int,
        rows_text: pa.Array | None = None,
        rows_parsed: ParsedTimes | None = None,
        rows_off: np.ndarray | None = None,
    ) -> int:
        if f in self.boot:
            return self.boot[f]
        src = self.sources[f]
        boot = MISSING
        arg = self.boot_arg
        if isinstance(arg, Mapping):
            arg = arg.get(src.name)
        if arg is not None:
            boot = _boot_us(arg, self.tz)
            self.notes.file("boot-from-arg", src.name)
        else:
            head_off, head_text = src.head_lines()
            candidates: list[tuple[pa.Array, ParsedTimes, np.ndarray]] = []
            if rows_text is not None and rows_parsed is not None and rows_off is not None:
                candidates.append((rows_text, rows_parsed, rows_off))
            candidates.append((head_text, tp.parse_times(head_text), head_off))
            for text, parsed, offs in candidates:
                utc = self.resolve(
                    np.full(len(parsed), f, np.int64), parsed, offs, with_uptime=False
                )
                anchors = tp.boot_anchors(text, parsed, utc)
                have = np.flatnonzero(anchors != MISSING)
                if len(have):
                    boot = int(anchors[have[0]])
                    self.notes.file("boot-from-line", src.name)
                    break
            if boot == MISSING:
                self.notes.file("boot-missing", src.name)
        self.boot[f] = boot
        return boot

    def resolve(
        self,
        file_idx: np.ndarray,
        parsed: ParsedTimes,
        offsets: np.ndarray,
        *,
        with_uptime: bool = True,
        texts: pa.Array | None = None,
    ) -> np.ndarray:
        """UTC microseconds (or MISSING) of parsed parts of lines at ``offsets`` of files ``file_idx``."""
        n = len(parsed)
        out = np.full(n, MISSING, np.int64)
        k = parsed.kind
        inst = k == tp.INSTANT
        out[inst] = parsed.value[inst]
        wall = np.full(n, MISSING, np.int64)
        naive = k == tp.NAIVE
        wall[naive] = parsed.value[naive]
        noyear = np.flatnonzero(k == tp.NOYEAR)
        if len(noyear):
            files = file_idx[noyear]
            uniq = np.unique(files).tolist()
            ref_of = {f: self.ref_for(f) for f in uniq}
            refs = (
                np.array([ref_of[f] for f in files.tolist()], np.int64)
                if len(uniq) > 1
                else np.full(len(noyear), ref_of[uniq[0]], np.int64)
            )
            ref_at = (
                np.array([self.ref_offset[f] for f in files.tolist()], np.int64)
                if len(uniq) > 1
                else np.full(len(noyear), self.ref_offset[uniq[0]], np.int64)
            )
            # after the reference line: +1; before it, or no line (mtime, now): -1
            side = np.where((ref_at >= 0) & (offsets[noyear] > ref_at), 1, -1)
            wall[noyear] = tp.complete_years(
                parsed.month[noyear], parsed.day[noyear], parsed.value[noyear], refs, side
            )
            for f in np.unique(file_idx[noyear]).tolist():
                self.notes.file("year-from-" + self.ref_source[f], self.sources[f].name)
        has_wall = wall != MISSING
        if has_wall.any():
            out[has_wall] = tp.wall_to_utc(wall[has_wall], self.tz)
            for f in np.unique(file_idx[has_wall]).tolist():
                self.notes.file("naive", self.sources[f].name)
        if with_uptime:
            up = np.flatnonzero(k == tp.UPTIME)
            if len(up):
                for f in np.unique(file_idx[up]).tolist():
                    sel = up[file_idx[up] == f]
                    if f not in self.boot and texts is not None:
                        # every line of this file here may anchor the boot time
                        mine = np.flatnonzero(file_idx == f)
                        self.boot_for(
                            f, texts.take(pa.array(mine)), parsed.take(mine), offsets[mine]
                        )
                    boot = self.boot_for(f)
                    if boot != MISSING:
                        out[sel] = boot + parsed.value[sel]
        return out


# ----------------------------------------------------------------------------
# read-back of earlier lines


class _PlainCarry:
    """One plain file's rows (sorted by offset) whose times are read back."""

    def __init__(
        self,
        src: _Source,
        f: int,
        off: np.ndarray,
        prev_end: np.ndarray,
        ts: np.ndarray,
        keep: np.ndarray,
    ) -> None:
        self.src, self.f, self.off, self.prev_end, self.ts = src, f, off, prev_end, ts
        n = len(off)
        self.need = (ts == MISSING) & ~keep
        self.found = np.full(n, MISSING, np.int64)  # time from a line read back
        self.pending = np.flatnonzero(self.need & (off > 0))  # nothing before the first byte
        self.unreadable = False

    def windows(self, window: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The pending rows' read-back windows of this pass (None: none left)."""
        if len(self.pending) == 0 or self.unreadable:
            return None
        lo = np.maximum(self.prev_end[self.pending], self.off[self.pending] - window)
        hi = self.off[self.pending]
        full = lo < hi  # an empty window: the previous row is the nearest line
        self.pending, lo, hi = self.pending[full], lo[full], hi[full]
        return (lo, hi) if len(self.pending) else None

    def settle(
        self, lo: np.ndarray, hi: np.ndarray, cand_off: np.ndarray, cand_ts: np.ndarray
    ) -> None:
        k = np.searchsorted(cand_off, hi, side="left") - 1
        ok = (
            (k >= 0) & (cand_off[np.maximum(k, 0)] >= lo)
            if len(cand_off)
            else np.zeros(len(hi), bool)
        )
        self.found[self.pending[ok]] = cand_ts[k[ok]]
        reached = ~ok & (lo <= self.prev_end[self.pending])
        self.pending = self.pending[~(ok | reached)]

    def result(self) -> tuple[np.ndarray, np.ndarray, int]:
        """(times, carried, rows carried from beyond the largest window: those
        still pending after the last pass)."""
        if self.unreadable:
            return self.ts.copy(), np.zeros(len(self.ts), bool), 0
        out = self.ts.copy()
        out[self.found != MISSING] = self.found[self.found != MISSING]
        # the rest take the previous row's time: the nearest earlier known one
        out = _ffill(out, self.need & (self.found == MISSING))
        carried = self.need & (out != MISSING)
        return out, carried, int(carried[self.pending].sum())


def _carry_plain(files: list[_PlainCarry], ctx: _TimeContext) -> None:
    """Carry timestamps for the rows of plain files, all files per pass.

    A row without a time looks at the bytes between the end of the previous
    row's line and its own start (at most the pass's window); the latest
    timestamped line there is its time; if the window reached the previous
    row, the previous row's time (own or carried) is the nearest one.  Each
    pass reads every file's windows and parses the lines of all of them
    together (a job of many small files pays the parser's set-up once per
    pass, not once per file).
    """
    for n_pass, window in enumerate(READ_BACK):
        asked: list[tuple[_PlainCarry, np.ndarray, np.ndarray]] = []
        groups: list[tuple[int, list[tuple[int, bytes, bool]]]] = []
        for pc_ in files:
            w = pc_.windows(window)
            if w is None and n_pass:
                continue
            # (the first pass opens every file: one that cannot be read keeps its rows as they are)
            with pc_.src.reader.reading(pc_.src.name) as read:
                if read is None:
                    pc_.unreadable = True
                    continue
                if w is None:
                    continue
                groups.append((pc_.f, _window_chunks(read, pc_.src.size, *w)))
            asked.append((pc_, *w))
        if not asked:
            break
        for (pc_, lo, hi), (cand_off, cand_ts) in zip(asked, _times_of_chunks(groups, ctx)):
            pc_.settle(lo, hi, cand_off, cand_ts)


def _ffill(values: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """``values`` with elements where ``fill`` set to the last earlier non-MISSING value."""
    idx = np.arange(len(values))
    src = np.where((values != MISSING) & ~fill, idx, -1)
    last = np.maximum.accumulate(src) if len(src) else src
    out = values.copy()
    take = fill & (last >= 0)
    out[take] = values[last[take]]
    return out


# a window whose lines average fewer bytes than this is split sparsely
SPARSE_LINE = 8
# a line shorter than this holds no timestamp the parser knows
_TIMESTAMP_SIZED = re.compile(rb"(?m)^[^\n]{6,}")


def _window_chunks(
    read: Callable[[int, int], bytes], size: int, lo: np.ndarray, hi: np.ndarray
) -> list[tuple[int, bytes, bool]]:
    """The bytes of the windows [lo, hi) of one file, as :func:`_split_lines` chunks."""
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    # merge overlapping/adjacent windows: one pread each
    brk = np.r_[True, lo[1:] > np.maximum.accumulate(hi)[:-1]]
    starts = lo[brk]
    ends = np.maximum.reduceat(hi, np.flatnonzero(brk))
    chunks: list[tuple[int, bytes, bool]] = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        b = min(b, size)
        if b <= a:
            continue
        # one byte before the window says whether a line starts at its first byte
        first = max(a - 1, 0)
        data = read(first, b - first)
        if a > 0:
            at_start = data[:1] == b"\n"
            piece, base = data[1:], a
        else:
            piece, base, at_start = data, 0, True
        if piece.count(b"\n") > len(piece) // SPARSE_LINE:
            # mostly blank or tiny lines: only lines long enough to hold a
            # timestamp are split (a window of blank lines costs no arrays)
            for m in _TIMESTAMP_SIZED.finditer(piece):
                if m.start() or at_start:
                    chunks.append((base + m.start(), m.group(), True))
        else:
            chunks.append((base, piece, at_start))
    return chunks


def _times_of_chunks(
    groups: list[tuple[int, list[tuple[int, bytes, bool]]]], ctx: _TimeContext
) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each (file, chunks): offsets and UTC times of its timestamped
    lines, sorted by offset.  The lines of all groups are parsed together,
    :data:`FLUSH_BYTES` at a time."""
    out: list[tuple[list[np.ndarray], list[np.ndarray]]] = [([], []) for _ in groups]
    file_of_group = np.array([f for f, _ in groups], np.int64)
    # the chunks of many groups are split into lines together (a job of
    # many small files pays numpy's per-call cost once per batch, not per file)
    batch: list[tuple[int, bytes, bool]] = []
    batch_group: list[int] = []
    pending_bytes = 0

    def flush() -> None:
        nonlocal batch, batch_group, pending_bytes
        if not batch:
            return
        offs, texts, which = _split_lines(batch)
        # the group of each line, non-decreasing: groups join the batch in order
        owner = np.asarray(batch_group, np.int64)[which]
        files = file_of_group[owner]
        batch, batch_group, pending_bytes = [], [], 0
        if len(offs) == 0:
            return
        parsed = tp.parse_times(texts)
        keep = np.flatnonzero(parsed.kind != tp.NONE)
        if len(keep) == 0:
            return
        utc = ctx.resolve(
            files[keep], parsed.take(keep), offs[keep], texts=texts.take(pa.array(keep))
        )
        good = keep[utc != MISSING]
        utc = utc[utc != MISSING]
        present, first = np.unique(owner[good], return_index=True)
        for g, o, t in zip(
            present.tolist(), np.split(offs[good], first[1:]), np.split(utc, first[1:])
        ):
            out[g][0].append(o)
            out[g][1].append(t)

    for g, (_, chunks) in enumerate(groups):
        if not chunks:
            continue
        batch += chunks
        batch_group += [g] * len(chunks)
        pending_bytes += sum(len(c[1]) for c in chunks)
        if pending_bytes >= FLUSH_BYTES:
            flush()
    flush()
    result = []
    for offs_all, ts_all in out:
        if not offs_all:
            result.append((np.zeros(0, np.int64), np.zeros(0, np.int64)))
            continue
        o_, t_ = np.concatenate(offs_all), np.concatenate(ts_all)
        o = np.argsort(o_, kind="stable")
        result.append((o_[o], t_[o]))
    return result


# ----------------------------------------------------------------------------
# the stage


def _line_facts_parallel(text: pa.ChunkedArray, threads: int) -> LineFacts:
    n = len(text)
    bounds = list(range(0, n, BATCH_ROWS)) or [0]
    slices = [text.slice(s, BATCH_ROWS) for s in bounds]
    if threads > 1 and len(slices) > 1:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="denpex-attr") as pool:
            parts = list(pool.map(line_facts, slices))
    else:
        parts = [line_facts(s) for s in slices]
    return LineFacts(
        np.concatenate([p.rank for p in parts]),
        np.concatenate([p.rank_local for p in parts]),
        pa.concat_arrays([p.host for p in parts]),
        ParsedTimes.concat([p.times for p in parts]),
        pa.concat_arrays([p.process for p in parts]),
    )


def attribute(
    table: pa.Table,
    *,
    default_tz: str = "UTC",
    read_context: bool = True,
    boot_time: BootTime | Mapping[str, BootTime] | None = None,
    threads: int | None = None,
    locations: Mapping[str, str] | None = None,
    reader: Any = None,
) -> Attribution:
    """Fill ``rank``, ``host`` and ``ts`` of a match table (see the module doc).

    ``default_tz``: the IANA zone (or ``+HH:MM``) naive timestamps are read
    in.  ``read_context``: read plain files back to date rows without a
    timestamp (and to find a year or boot reference in a file's head); with
    False, rows carry the nearest earlier timestamped row of the table and
    no file is opened.  ``boot_time``: when dmesg uptimes count from (a
    datetime, epoch seconds or ISO string; or a mapping file name -> one of
    those).  ``threads``: parallel batches (default: all cores).
    ``locations``: where to read a file whose ``file`` label is not its path
    (the batch index labels files relative to their job); ``reader``: the
    job's :class:`~denpex_fast.io.readback.JobBytes` (default: one over
    ``locations``), through which every read-back goes.

    Values already in ``rank``/``host``/``ts`` are kept.  Returns an
    :class:`Attribution`; its table has the input's rows in the input's
    order and the :data:`~denpex_fast.engine.scanner.MATCH_SCHEMA` schema.
    """
    from ..engine.scanner import default_threads

    tp.check_timezone(default_tz)
    missing = [c for c in ("file", "offset", "text") if c not in table.column_names]
    if missing:
        raise ValueError(f"not a match table: no column(s) {', '.join(missing)}")
    n = table.num_rows
    notes = _Notes()
    file_idx, names = file_codes(table.column("file"))
    offset = table.column("offset").to_numpy().astype(np.int64) if n else np.zeros(0, np.int64)
    text = table.column("text")
    facts = (
        _line_facts_parallel(text, threads or default_threads())
        if n
        else LineFacts(
            np.zeros(0, np.int64),
            np.zeros(0, bool),
            pa.array([], pa.string()),
            ParsedTimes.empty(0),
            pa.array([], pa.string()),
        )
    )
    paths = [path_facts(nm) for nm in names]
    sources: list[_Source] = [_Source(nm, problem="not read") for nm in names]
    if read_context:
        if reader is None:
            from ..io.readback import JobBytes

            reader = JobBytes(locations=locations)
        used = np.unique(file_idx).tolist() if n else []
        for f in used:
            sources[f] = _open_source(names[f], reader)

    # rank: kept > line > same process > path
    old_rank = _old(table, "rank", pa.int32(), n)
    rank = np.where(old_rank >= 0, old_rank, facts.rank)
    local_rows = (old_rank < 0) & facts.rank_local & (rank >= 0)
    proc = _codes(facts.process)
    rank, k = _propagate(rank, proc, file_idx)
    notes.counts["rank-from-process"] += k
    path_rank = np.array([-1 if p.rank is None else p.rank for p in paths] or [-1], np.int64)
    from_path = (rank < 0) & (path_rank[file_idx] >= 0) if n else np.zeros(0, bool)
    rank = np.where(from_path, path_rank[file_idx] if n else rank, rank)
    for f in np.unique(file_idx[from_path]).tolist():
        if paths[f].rank_how == "torchrun-log-dir":
            notes.file("rank-torchrun-dir", names[f])
    if local_rows.any():
        notes.counts["rank-local"] += int(local_rows.sum())

    # host: kept > line > same process > path > same rank in the same file
    host = pc.coalesce(_old_strings(table, "host", n), facts.host)
    host_codes, host_values = _codes(host, with_values=True)
    host_codes, k = _propagate(host_codes, proc, file_idx)
    notes.counts["host-from-process"] += k
    path_host = [p.host for p in paths]
    if n and any(h is not None for h in path_host):
        extra = sorted({h for h in path_host if h is not None} - set(host_values))
        host_values = host_values + extra
        index = {h: i for i, h in enumerate(host_values)}
        per_file = np.array([-1 if h is None else index[h] for h in path_host], np.int64)
        host_codes = np.where(host_codes < 0, per_file[file_idx], host_codes)
    host_codes, k = _propagate(host_codes, rank, file_idx)
    notes.counts["host-from-rank"] += k

    # time: kept > own line > carried
    old_ts = _old(table, "ts", pa.int64(), n, missing=MISSING)
    ctx = _TimeContext(default_tz, boot_time, sources, notes)
    parsed = facts.times
    ctx.set_row_refs(file_idx, offset, parsed)
    own = ctx.resolve(file_idx, parsed, offset, texts=tp._string_array(text) if n else None)
    ts = np.where(old_ts != MISSING, old_ts, own)
    # a dmesg line has a time of its own even when no boot time turns it into a clock
    keep = (parsed.kind == tp.UPTIME) & (old_ts == MISSING)
    carried = _carry(ts, file_idx, offset, text, sources, ctx, notes, read_context, keep)
    ts = np.where(carried[1], carried[0], ts)

    out = _build(table, MATCH_SCHEMA, rank, host_codes, host_values, ts)
    return Attribution(out, _compose_notes(notes, default_tz), pa.array(carried[1], pa.bool_()))


def _old(table: pa.Table, name: str, typ: pa.DataType, n: int, missing: int = -1) -> np.ndarray:
    if name not in table.column_names or n == 0:
        return np.full(n, missing, np.int64)
    col = table.column(name).combine_chunks() if table.column(name).num_chunks else None
    if col is None or col.null_count == len(col):
        return np.full(n, missing, np.int64)
    vals = col.cast(typ)
    return pc.fill_null(vals, missing).to_numpy(zero_copy_only=False).astype(np.int64)


def _old_strings(table: pa.Table, name: str, n: int) -> pa.Array:
    if name not in table.column_names or n == 0:
        return pa.nulls(n, pa.string())
    col = table.column(name)
    if col.null_count == len(col):
        return pa.nulls(n, pa.string())
    return col.cast(pa.string()).combine_chunks()


def _codes(values: pa.Array, with_values: bool = False):  # type: ignore[no-untyped-def]
    """Integer codes of strings (-1 for null), and with ``with_values`` the distinct strings."""
    enc = pc.dictionary_encode(values)
    codes = (
        pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        if len(values)
        else np.zeros(0, np.int64)
    )
    if with_values:
        return codes, [str(v) for v in enc.dictionary.to_pylist()]
    return codes


def _propagate(values: np.ndarray, key: np.ndarray, file_idx: np.ndarray) -> tuple[np.ndarray, int]:
    """Fill unknown ``values`` (-1) from rows of the same file and ``key`` (>= 0).

    Only where the rows of that (file, key) that know a value all know the
    same one: a rank runs on one host, a process has one rank.
    Returns the filled values and how many were filled.
    """
    n = len(values)
    known = (key >= 0) & (values >= 0)
    want = (key >= 0) & (values < 0)
    if n == 0 or not known.any() or not want.any():
        return values, 0
    fk = file_idx * (int(key.max()) + 1) + key
    pairs = np.unique(np.c_[fk[known], values[known]], axis=0)
    keys, first, counts = np.unique(pairs[:, 0], return_index=True, return_counts=True)
    single = counts == 1
    keys, vals = keys[single], pairs[first[single], 1]
    if len(keys) == 0:
        return values, 0
    pos = np.searchsorted(keys, fk[want])
    hit = (pos < len(keys)) & (keys[np.minimum(pos, len(keys) - 1)] == fk[want])
    out = values.copy()
    rows = np.flatnonzero(want)[hit]
    out[rows] = vals[pos[hit]]
    return out, int(hit.sum())


def _carry(
    ts: np.ndarray,
    file_idx: np.ndarray,
    offset: np.ndarray,
    text: pa.ChunkedArray,
    sources: list[_Source],
    ctx: _TimeContext,
    notes: _Notes,
    read_context: bool,
    keep: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Carried times for rows without one (``keep``: rows that stay as they are)."""
    n = len(ts)
    out = ts.copy()
    carried = np.zeros(n, bool)
    if n == 0 or not (ts == MISSING).any():
        return out, carried
    order = np.lexsort((offset, file_idx))
    f_sorted = file_idx[order]
    bounds = np.flatnonzero(np.r_[True, f_sorted[1:] != f_sorted[:-1], True])
    need_files = set(np.unique(file_idx[ts == MISSING]).tolist())
    tlen = None
    plain: list[tuple[np.ndarray, _PlainCarry]] = []
    for s, e in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        f = int(f_sorted[s])
        if f not in need_files:
            continue
        rows = order[s:e]
        src = sources[f]
        row_ts = ts[rows]
        if read_context and src.plain and src.size >= int(offset[rows].max()):
            if tlen is None:
                tlen = _line_byte_lengths(text)
            off = offset[rows]
            # the next line after the previous row's starts at least this far on
            # (its text and newline; see _line_byte_lengths)
            prev_end = np.r_[0, off[:-1] + tlen[rows[:-1]] + 1]
            prev_end = np.minimum(prev_end, off)
            plain.append((rows, _PlainCarry(src, f, off, prev_end, row_ts, keep[rows])))
            continue
        want = (row_ts == MISSING) & ~keep[rows]
        new = _ffill(row_ts, want)
        car = want & (new != MISSING)
        if car.any():
            notes.counts["carried-rows"] += int(car.sum())
            why = src.problem or ("compressed" if src.compression else "")
            if not read_context:
                why = "read_context=False"
            elif src.plain:
                why = "file smaller than the row offsets"
            notes.file(f"rows-carried:{why}", src.name)
        out[rows] = new
        carried[rows] = car
    _carry_plain([p for _, p in plain], ctx)
    for rows, p in plain:
        new, car, far = p.result()
        notes.counts["carried-read"] += int(car.sum())
        notes.counts["carried-far"] += far
        out[rows] = new
        carried[rows] = car
    return out, carried


def _line_byte_lengths(text: pa.ChunkedArray) -> np.ndarray:
    """Bytes of the row's line known to precede the next line: its text, or 1.

    The text is a prefix of the line (or its tail end for cut lines) except
    where invalid UTF-8 became U+FFFD (more bytes than the line had): those
    count as 1 byte so the read-back window never starts past a line start.
    """
    lens = (
        pc.binary_length(text).to_numpy().astype(np.int64) if len(text) else np.zeros(0, np.int64)
    )
    repl = pc.match_substring(text, "\ufffd").to_numpy() if len(text) else np.zeros(0, bool)
    return np.where(repl, 1, np.maximum(lens, 1))


def _build(
    table: pa.Table,
    schema: pa.Schema,
    rank: np.ndarray,
    host_codes: np.ndarray,
    host_values: list[str],
    ts: np.ndarray,
) -> pa.Table:
    rank_arr = pa.array(np.where(rank < 0, 0, rank).astype(np.int32), pa.int32(), mask=rank < 0)
    # a dictionary of only the hosts that rows use
    used, inverse = np.unique(host_codes[host_codes >= 0], return_inverse=True)
    idx = np.full(len(host_codes), 0, np.int32)
    idx[host_codes >= 0] = inverse
    host_arr = pa.DictionaryArray.from_arrays(
        pa.array(idx, pa.int32(), mask=host_codes < 0),
        pa.array([host_values[i] for i in used.tolist()], pa.string()),
    )
    ts_arr = pa.array(np.where(ts == MISSING, 0, ts), pa.int64(), mask=ts == MISSING).cast(
        pa.timestamp("us", tz="UTC")
    )
    out = table
    for name, arr in (("rank", rank_arr), ("host", host_arr), ("ts", ts_arr)):
        fld = schema.field(name)
        if name in out.column_names:
            out = out.set_column(out.column_names.index(name), fld, arr)
        else:
            out = out.append_column(fld, arr)
    if set(out.column_names) == set(schema.names):
        out = out.select(schema.names).cast(schema)
    return out


def _compose_notes(notes: _Notes, tz: str) -> list[str]:
    out: list[str] = []
    fl = notes.files
    if fl.get("naive"):
        out.append(f"naive timestamps in {_files_phrase(fl['naive'])} were read as {tz}")
    if fl.get("year-from-file"):
        out.append(
            "year-less timestamps (glog, syslog, vLLM) in "
            f"{_files_phrase(fl['year-from-file'])} took the year from other "
            "timestamps in the same file"
        )
    if fl.get("year-from-mtime"):
        out.append(
            "year-less timestamps (glog, syslog, vLLM) in "
            f"{_files_phrase(fl['year-from-mtime'])} took the year from the file's "
            "modification time: no dated line in the file"
        )
    if fl.get("year-from-now"):
        out.append(
            "year-less timestamps in "
            f"{_files_phrase(fl['year-from-now'])} took the current year: no dated "
            "line and no file to look at"
        )
    if fl.get("boot-from-arg"):
        out.append(
            f"dmesg uptimes in {_files_phrase(fl['boot-from-arg'])} count from the given boot_time"
        )
    if fl.get("boot-from-line"):
        out.append(
            f"dmesg uptimes in {_files_phrase(fl['boot-from-line'])} count from the "
            "boot time implied by a line with both a clock and an uptime"
        )
    if fl.get("boot-missing"):
        out.append(
            f"dmesg uptimes in {_files_phrase(fl['boot-missing'])} have no boot "
            "anchor (pass boot_time=); their ts is left null"
        )
    c = notes.counts
    if c.get("carried-read"):
        out.append(
            f"ts of {_rows(c['carried-read'])} carried from the nearest earlier "
            "timestamped line (read back from the file)"
        )
    if c.get("carried-far"):
        out.append(
            f"ts of {_rows(c['carried-far'])} carried from an earlier row: no "
            f"timestamped line in the {READ_BACK[-1] >> 20} MiB read back before them"
        )
    for key in sorted(k for k in fl if k.startswith("rows-carried:")):
        why = key.split(":", 1)[1]
        out.append(
            f"ts of rows in {_files_phrase(fl[key])} carried from the nearest earlier "
            f"timestamped row of the table, not read back ({why})"
        )
    if c.get("carried-rows") and not any(k.startswith("rows-carried:") for k in fl):
        out.append(f"ts of {_rows(c['carried-rows'])} carried from earlier rows of the table")
    if fl.get("rank-torchrun-dir"):
        out.append(
            f"rank of {_files_phrase(fl['rank-torchrun-dir'])} is the local rank of the "
            "torchrun --log-dir layout (<run>/attempt_K/<local_rank>/); it equals the "
            "global rank only on a single node"
        )
    if c.get("rank-local"):
        out.append(
            f"rank of {_rows(c['rank-local'])} is a local rank ([default3]:, "
            "local_rank: N); it equals the global rank only on a single node"
        )
    if c.get("rank-from-process"):
        out.append(
            f"rank of {_rows(c['rank-from-process'])} taken from other lines of the same "
            "process (NCCL host:pid, Ray/vLLM pid) in the same file"
        )
    if c.get("host-from-process"):
        out.append(
            f"host of {_rows(c['host-from-process'])} taken from other lines of the same "
            "process in the same file"
        )
    if c.get("host-from-rank"):
        out.append(
            f"host of {_rows(c['host-from-rank'])} taken from other rows of the same "
            "rank in the same file"
        )
    return out
