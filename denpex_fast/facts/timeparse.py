"""Timestamps in log lines, parsed column-wise with ``pyarrow.compute``.

:func:`parse_times` finds the leftmost timestamp in the first
:data:`HEAD_BYTES` bytes of each line and returns its parts as numpy arrays
(:class:`ParsedTimes`).  Turning parts into UTC instants needs facts that a
line alone does not carry (the time zone of naive times, the year of glog and
syslog times, the boot time of dmesg uptimes); :func:`to_utc` applies them.

Formats (leftmost in the line wins; a ``[`` before the timestamp is fine):

============  ================================================  ===========
format        example                                           kind
============  ================================================  ===========
``iso``       ``2024-05-01T12:00:00.123Z``, ``2024-05-01           naive, or
              12:00:00,123`` (Python logging, DeepSpeed),         instant with
              ``2024-05-01_12:10:41`` (torchelastic summary),     a zone
              ``2024-05-01 12:00:00 +0200``, ``... UTC``
``glog``      ``I0501 12:00:00.123456``, ``[E501 12:10:40.5 ..``  no year
``syslog``    ``May 01 12:00:00``, ``May  1 12:00:00``;           no year;
              ``Wed May  1 12:00:00 2024`` (``dmesg -T``)         naive
``vllm``      ``INFO 05-01 12:00:00``                             no year
``epoch``     ``[1714564800.123]`` (10-digit seconds)             instant
``uptime``    ``[12345.678901]`` at line start (dmesg)            uptime
``slash``     ``2024/05/01 12:00:00`` (Go's ``log``, many C++     naive
              and Python loggers)
``us``        ``05/01/2024 12:00:00`` (month first: the           naive
              ``datefmt`` of Hugging Face's example scripts)
============  ================================================  ===========

Fractions beyond microseconds are truncated.  Only the first
:data:`HEAD_BYTES` bytes are searched: a date far into a message (a
checkpoint name, a quoted time) is not the line's time.

This module is long because it holds every timestamp format the tool recognises,
each with its vectorised parser and tests in its docstring.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import regex

HEAD_BYTES = 200  # where a line's own timestamp can start
TAIL_BYTES = 48  # longest timestamp text parsed after the start

NONE, INSTANT, NAIVE, NOYEAR, UPTIME = 0, 1, 2, 3, 4
KIND_NAMES = {NONE: "none", INSTANT: "instant", NAIVE: "naive", NOYEAR: "no-year", UPTIME: "uptime"}

US = 1_000_000
DAY_US = 86_400 * US
MISSING = np.iinfo(np.int64).min  # "no value" in int64 arrays

_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_MON = "|".join(_MONTHS)
_DOW = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"
_LEVEL = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL"
_FRAC = r"(?:[.,](?P<f>\d{1,9}))?"

# One anchored regex per format, tried on the text that starts where the
# leftmost timestamp starts.  Group names: Y year, mo month, mon month name,
# d day, H/M/S, f fraction, z zone, s seconds (epoch/uptime).
FORMATS: dict[str, str] = {
    "iso": (
        r"(?P<Y>(?:19|20)\d\d)-(?P<mo>\d\d)-(?P<d>\d\d)[T _](?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
        + _FRAC
        + r"(?P<z>Z|UTC|GMT|[+-]\d\d(?::?\d\d)?| [+-]\d\d:?\d\d| UTC| GMT)?"
    ),
    "glog": (
        r"[IWEF](?P<mo>\d{1,2})(?P<d>\d\d) (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
        r"(?:\.(?P<f>\d{1,9}))?"
    ),
    "syslog": (
        r"(?:(?:" + _DOW + r") )?(?P<mon>" + _MON + r") +(?P<d>\d{1,2}) "
        r"(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)(?:\.(?P<f>\d{1,9}))?"
        r"(?: (?P<Y>(?:19|20)\d\d)(?:$|[^\d]))?"
    ),
    "vllm": (
        r"(?:" + _LEVEL + r") (?P<mo>\d\d)-(?P<d>\d\d) (?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
        r"(?:\.(?P<f>\d{1,9}))?"
    ),
    "epoch": r"\[(?P<s>\d{10})(?:\.(?P<f>\d{1,9}))?\]",
    "uptime": r"(?:<\d+>)?\[ *(?P<s>\d{1,9})\.(?P<f>\d{6})\]",
    "slash": (
        r"(?P<Y>(?:19|20)\d\d)/(?P<mo>\d\d)/(?P<d>\d\d)[T -](?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
        + _FRAC
    ),
    "us": (
        r"(?P<mo>\d\d)/(?P<d>\d\d)/(?P<Y>(?:19|20)\d\d)[ ,-] ?(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
        + _FRAC
    ),
}
FORMAT_CODES = {name: i + 1 for i, name in enumerate(FORMATS)}
FORMAT_NAMES = {code: name for name, code in FORMAT_CODES.items()}


def _ungrouped(expr: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", expr)


# Where the leftmost timestamp starts.  Word boundaries keep dates inside
# identifiers (ckpt_2024-05-01_...) and glog-like tokens inside words out;
# uptimes count only at the line start, where dmesg puts them.
_FIND = "|".join(
    [
        r"^" + _ungrouped(FORMATS["uptime"]),
        r"\b" + _ungrouped(FORMATS["iso"]).split("(?:[.,]")[0],
        r"\b" + _ungrouped(FORMATS["glog"]).split("(?:\\.")[0],
        r"\b(?:(?:" + _DOW + r") )?(?:" + _MON + r") +\d{1,2} \d\d:\d\d:\d\d",
        r"\b(?:" + _LEVEL + r") \d\d-\d\d \d\d:\d\d:\d\d",
        _ungrouped(FORMATS["epoch"]),
        r"\b" + _ungrouped(FORMATS["slash"]).split("(?:[.,]")[0],
        r"\b" + _ungrouped(FORMATS["us"]).split("(?:[.,]")[0],
    ]
)


@dataclass
class ParsedTimes:
    """Parts of the leftmost timestamp of each line (numpy arrays, one per line).

    ``kind``: :data:`NONE`, :data:`INSTANT` (``value`` = UTC microseconds),
    :data:`NAIVE` (``value`` = wall-clock microseconds since 1970 read as if
    UTC), :data:`NOYEAR` (``value`` = microseconds into the day, with
    ``month``/``day``) or :data:`UPTIME` (``value`` = microseconds since
    boot); ``fmt``: the format code (:data:`FORMAT_CODES`).
    """

    kind: np.ndarray
    fmt: np.ndarray
    value: np.ndarray
    month: np.ndarray
    day: np.ndarray

    @classmethod
    def empty(cls, n: int) -> ParsedTimes:
        return cls(
            np.zeros(n, np.int8),
            np.zeros(n, np.int8),
            np.zeros(n, np.int64),
            np.zeros(n, np.int8),
            np.zeros(n, np.int8),
        )

    def __len__(self) -> int:
        return len(self.kind)

    def take(self, idx: np.ndarray) -> ParsedTimes:
        return ParsedTimes(
            self.kind[idx], self.fmt[idx], self.value[idx], self.month[idx], self.day[idx]
        )

    @classmethod
    def concat(cls, parts: list[ParsedTimes]) -> ParsedTimes:
        if not parts:
            return cls.empty(0)
        return cls(
            *(
                np.concatenate([getattr(p, f) for p in parts])
                for f in ("kind", "fmt", "value", "month", "day")
            )
        )


def _string_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if arr.type == pa.large_string():
        arr = arr.cast(pa.string())
    if arr.null_count:
        arr = pc.fill_null(arr, "")
    return arr


def substrings(arr: pa.Array, rows: np.ndarray, start: np.ndarray, length: int) -> pa.Array:
    """``arr[rows[i]][start[i]:start[i]+length]`` (byte positions) for every i, as strings.

    Positions come from ``find_substring_regex`` and fall on character
    boundaries; an end that would cut a multi-byte character (a progress
    bar's block, a non-breaking space) is moved back to the character's
    start, so every piece is valid UTF-8 wherever it is decoded.
    """
    n = len(rows)
    if n == 0:
        return pa.array([], pa.string())
    if np.any(np.diff(rows) < 0):  # the spread trick needs pieces in buffer order
        order = np.argsort(rows, kind="stable")
        back = np.empty(n, np.int64)
        back[order] = np.arange(n)
        return substrings(arr, rows[order], start[order], length).take(pa.array(back))
    offs = np.frombuffer(arr.buffers()[1], np.int32, len(arr) + 1, arr.offset * 4)
    begin = offs[rows] + start.astype(np.int32)
    end = np.minimum(offs[rows + 1], begin + length)
    data = arr.buffers()[2]
    if data is not None and data.size:
        raw = np.frombuffer(data, np.uint8)
        for _ in range(3):  # a UTF-8 character has at most 3 continuation bytes
            inside = np.flatnonzero(end < offs[rows + 1])
            cont = inside[(raw[end[inside]] & 0xC0) == 0x80]
            if len(cont) == 0:
                break
            end[cont] -= 1
    # an array whose even elements are the wanted pieces, then keep those
    inter = np.empty(2 * n + 1, np.int32)
    inter[0:-1:2] = begin
    inter[1::2] = end
    inter[-1] = end[-1]
    spread = pa.StringArray.from_buffers(2 * n, pa.py_buffer(inter), arr.buffers()[2])
    return spread.take(pa.array(np.arange(0, 2 * n, 2)))


def _digits(arr: pa.Array) -> np.ndarray:
    return pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False)


def _frac_us(f: pa.Array) -> np.ndarray:
    # right-pad to 6 digits, drop anything past microseconds
    return _digits(pc.utf8_slice_codeunits(pc.binary_join_element_wise(f, "000000", ""), 0, 6))


def days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (vectorised)."""
    y = y.astype(np.int64) - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (m.astype(np.int64) + 9) % 12
    doy = (153 * mp + 2) // 5 + d.astype(np.int64) - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def year_of_days(days: np.ndarray) -> np.ndarray:
    """Calendar year of days since 1970-01-01 (vectorised)."""
    z = days.astype(np.int64) + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    m = np.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (m <= 2)


_DIM = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], np.int64)


def valid_date(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """True where (y, m, d) is a real calendar date."""
    y = y.astype(np.int64)
    ok = (m >= 1) & (m <= 12) & (d >= 1)
    leap = ((y % 4 == 0) & (y % 100 != 0)) | (y % 400 == 0)
    dim = _DIM[np.clip(m, 1, 12) - 1] + ((m == 2) & leap)
    return ok & (d <= dim)


def _tod(
    H: np.ndarray, M: np.ndarray, S: np.ndarray, f: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    ok = (H <= 23) & (M <= 59) & (S <= 60)  # 60: a leap second, kept as the next second
    return ((H * 60 + M) * 60 + S) * US + f, ok


def parse_times(text: pa.Array | pa.ChunkedArray) -> ParsedTimes:
    """Find and split the leftmost timestamp of every line (see module doc).

    Column-wise: one ``find_substring_regex`` over all lines, then per
    format an anchored match over the text from there; the fields of the
    common formats (ISO, glog) are read from fixed byte positions with
    numpy, the others with ``extract_regex``.
    """
    arr = _string_array(text)
    n = len(arr)
    out = ParsedTimes.empty(n)
    if n == 0:
        return out
    pos = pc.find_substring_regex(arr, _FIND).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero((pos >= 0) & (pos <= HEAD_BYTES))
    if len(rows) == 0:
        return out
    tails = substrings(arr, rows, pos[rows], TAIL_BYTES)
    left = np.ones(len(rows), bool)
    for name, expr in FORMATS.items():
        if not left.any():
            break
        cand = np.flatnonzero(left)
        sub = tails.take(pa.array(cand)) if len(cand) < len(tails) else tails
        hit = regex.matches(sub, "^" + _ungrouped(expr))
        if not hit.any():
            continue
        sel = cand[hit]
        left[sel] = False
        matched = sub.filter(pa.array(hit))
        if name in _FIXED:
            _FIXED[name](out, rows[sel], matched)
        else:
            _fill(out, rows[sel], name, regex.extract(matched, "^" + expr))
    return out


# -- reading fields at byte positions (texts already matched the format's regex)


class _Bytes:
    """The first :data:`TAIL_BYTES` bytes of each string as a matrix (0 past its end).

    ``at(k)`` is byte ``k`` of every element (``k`` a constant or one per
    element); the texts are the timestamp tails, short by construction.
    """

    def __init__(self, arr: pa.Array) -> None:
        n = len(arr)
        width = TAIL_BYTES + 16  # room for positions a little past the end
        offs = np.frombuffer(arr.buffers()[1], np.int32, n + 1, arr.offset * 4).astype(np.int64)
        buf = arr.buffers()[2]
        data = np.frombuffer(buf, np.uint8) if buf is not None else np.zeros(0, np.uint8)
        padded = np.zeros(len(data) + width, np.uint8)
        padded[: len(data)] = data
        # row i: the `width` bytes from its start (one gather through a strided view)
        self.mat = np.lib.stride_tricks.sliding_window_view(padded, width)[offs[:-1]]
        length = offs[1:] - offs[:-1]
        self.mat[np.arange(width)[None, :] >= length[:, None]] = 0  # 0: past the end
        self.rows = np.arange(n)

    @classmethod
    def subset(cls, b: _Bytes, rows: np.ndarray) -> _Bytes:
        out = cls.__new__(cls)
        out.mat = b.mat[rows]
        out.rows = np.arange(len(rows))
        return out

    def at(self, k: np.ndarray | int) -> np.ndarray:
        if isinstance(k, int):
            return self.mat[:, k].astype(np.int64)
        k = np.asarray(k, np.int64)
        return self.mat[self.rows, np.clip(k, 0, self.mat.shape[1] - 1)].astype(np.int64)

    def num(self, k: np.ndarray | int, width: int) -> np.ndarray:
        """The ``width`` digits at ``k`` as an integer (the regex guarantees digits)."""
        weights = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
        if isinstance(k, int):
            return (self.mat[:, k : k + width].astype(np.int64) - 48) @ weights
        v = np.zeros(len(self.rows), np.int64)
        for i in range(width):
            v = v * 10 + (self.at(k + i) - 48)
        return v

    def run(self, k: np.ndarray | int, max_width: int) -> tuple[np.ndarray, np.ndarray]:
        """(value, width) of the run of up to ``max_width`` digits at ``k``."""
        v = np.zeros(len(self.rows), np.int64)
        w = np.zeros(len(self.rows), np.int64)
        going = np.ones(len(self.rows), bool)
        for i in range(max_width):
            c = self.at(k + i)
            going &= (c >= 48) & (c <= 57)
            if not going.any():
                break
            v = np.where(going, v * 10 + (c - 48), v)
            w += going
        return v, w


def _scale_us(v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Microseconds of a fraction with ``w`` digits and value ``v``."""
    up = np.power(10, np.clip(6 - w, 0, 6))
    down = np.power(10, np.clip(w - 6, 0, 3))
    return np.where(w > 0, v * up // down, 0)


def _fixed_iso(out: ParsedTimes, at: np.ndarray, texts: pa.Array) -> None:
    b = _Bytes(texts)
    n = len(at)
    Y, mo, d = b.num(0, 4), b.num(5, 2), b.num(8, 2)
    H, M, S = b.num(11, 2), b.num(14, 2), b.num(17, 2)
    f = np.zeros(n, np.int64)
    p = np.full(n, 19, np.int64)
    c = b.mat[:, 19]
    fr = np.flatnonzero((c == ord(".")) | (c == ord(",")))
    if len(fr):
        sub = _Bytes.subset(b, fr)
        fv, fw = sub.run(20, 9)
        f[fr] = _scale_us(fv, fw)
        p[fr] += 1 + fw
    zone = np.zeros(n, bool)
    off = np.zeros(n, np.int64)
    c0 = b.at(p)
    maybe = np.flatnonzero(
        np.isin(c0, [ord("Z"), ord("U"), ord("G"), ord("+"), ord("-"), ord(" ")])
    )
    if len(maybe):
        zb = _Bytes.subset(b, maybe)
        zone[maybe], off[maybe] = _zone(zb, p[maybe])
    _store(out, at, FORMAT_CODES["iso"], Y, np.ones(n, bool), mo, d, H, M, S, f, zone, off)


def _zone(b: _Bytes, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(has zone, seconds east of UTC) of the zone text at ``p``, as the ISO regex reads it."""
    c0 = b.at(p)
    # a space before the zone only for "+hhmm"/"+hh:mm" and " UTC"/" GMT"
    spaced = c0 == ord(" ")
    q = np.where(spaced, p + 1, p)
    c1 = b.at(q)
    word = np.zeros(len(p), bool)
    for w in (b"UTC", b"GMT"):
        word |= (c1 == w[0]) & (b.at(q + 1) == w[1]) & (b.at(q + 2) == w[2])
    sign = np.where(c1 == ord("+"), 1, np.where(c1 == ord("-"), -1, 0))
    hh_ok = _is_digit(b.at(q + 1)) & _is_digit(b.at(q + 2))
    colon = b.at(q + 3) == ord(":")
    mq = np.where(colon, q + 4, q + 3)
    mm_ok = _is_digit(b.at(mq)) & _is_digit(b.at(mq + 1))
    signed = (sign != 0) & hh_ok & (mm_ok | ~spaced)
    hh = b.num(q + 1, 2)
    mm = np.where(mm_ok, b.num(mq, 2), 0)
    zone = word | ((c0 == ord("Z")) & ~spaced) | signed
    return zone, np.where(signed, sign * (hh * 3600 + mm * 60), 0)


def _fixed_glog(out: ParsedTimes, at: np.ndarray, texts: pa.Array) -> None:
    b = _Bytes(texts)
    one = b.at(4) == ord(" ")  # E501 (c10) vs I0501 (glog)
    t = np.where(one, 5, 6)
    mo = np.where(one, b.num(1, 1), b.num(1, 2))
    d = np.where(one, b.num(2, 2), b.num(3, 2))
    H, M, S = b.num(t, 2), b.num(t + 3, 2), b.num(t + 6, 2)
    fv, fw = b.run(t + 9, 9)
    f = np.where(b.at(t + 8) == ord("."), _scale_us(fv, fw), 0)
    n = len(at)
    _store(
        out,
        at,
        FORMAT_CODES["glog"],
        np.zeros(n, np.int64),
        np.zeros(n, bool),
        mo,
        d,
        H,
        M,
        S,
        f,
        np.zeros(n, bool),
        np.zeros(n, np.int64),
    )


def _is_digit(c: np.ndarray) -> np.ndarray:
    return (c >= 48) & (c <= 57)


_FIXED = {"iso": _fixed_iso, "glog": _fixed_glog}


def _store(
    out: ParsedTimes,
    at: np.ndarray,
    code: int,
    year: np.ndarray,
    has_year: np.ndarray,
    month: np.ndarray,
    day: np.ndarray,
    H: np.ndarray,
    M: np.ndarray,
    S: np.ndarray,
    f: np.ndarray,
    has_zone: np.ndarray,
    off_s: np.ndarray,
) -> None:
    tod, ok = _tod(H, M, S, f)
    ok &= valid_date(np.where(has_year, year, 2000), month, day)
    kind = np.where(has_year, NAIVE, NOYEAR).astype(np.int8)
    value = np.where(
        has_year, days_from_civil(np.where(has_year, year, 2000), month, day) * DAY_US + tod, tod
    )
    kind[has_zone & has_year] = INSTANT
    value = np.where(has_zone & has_year, value - off_s * US, value)
    kind[~ok] = NONE
    out.kind[at] = kind
    out.fmt[at] = np.where(ok, code, 0)
    out.value[at] = np.where(ok, value, 0)
    out.month[at] = np.where(kind == NOYEAR, month, 0)
    out.day[at] = np.where(kind == NOYEAR, day, 0)


def _fill(out: ParsedTimes, at: np.ndarray, name: str, parts: pa.StructArray) -> None:
    g = {f.name: parts.field(i) for i, f in enumerate(parts.type)}
    code = FORMAT_CODES[name]
    f = _frac_us(g["f"])
    n = len(at)
    if name in ("epoch", "uptime"):
        out.kind[at] = INSTANT if name == "epoch" else UPTIME
        out.fmt[at] = code
        out.value[at] = _digits(g["s"]) * US + f
        return
    if "mon" in g:
        month = pc.add(pc.index_in(g["mon"], value_set=pa.array(_MONTHS)), 1)
        month = month.to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        month = _digits(g["mo"])
    if "Y" in g:
        ytxt = g["Y"]
        has_year = pc.not_equal(ytxt, "").to_numpy(zero_copy_only=False)
        year = _digits(pc.if_else(pa.array(has_year), ytxt, "2000"))
    else:
        has_year = np.zeros(n, bool)
        year = np.zeros(n, np.int64)
    _store(
        out,
        at,
        code,
        year,
        has_year,
        month,
        _digits(g["d"]),
        _digits(g["H"]),
        _digits(g["M"]),
        _digits(g["S"]),
        f,
        np.zeros(n, bool),
        np.zeros(n, np.int64),
    )


def complete_years(
    month: np.ndarray, day: np.ndarray, tod: np.ndarray, ref_us: np.ndarray, side: np.ndarray
) -> np.ndarray:
    """Wall-clock microseconds for year-less dates, taking the year from a reference.

    ``ref_us`` (one per element) is a wall-clock time of the same file and
    ``side`` says where the element's line is: +1 after the reference line
    (the earliest date from a day before the reference on wins), -1 before
    it, or when the reference is the file's modification time or now (the
    latest date up to a day after the reference wins: a line is not written
    after its file).  So a log running across New Year keeps its order.
    Elements whose reference is :data:`MISSING` stay :data:`MISSING`.
    """
    out = np.full(len(month), MISSING, np.int64)
    have = ref_us != MISSING
    if not have.any():
        return out
    m, d, t = month[have].astype(np.int64), day[have].astype(np.int64), tod[have]
    ref, after = ref_us[have], side[have] > 0
    y0 = year_of_days(np.floor_divide(ref, DAY_US))
    best = np.full(len(m), MISSING, np.int64)
    best_gap = np.full(len(m), np.iinfo(np.int64).max, np.int64)
    for dy in (-2, -1, 0, 1, 2):
        y = y0 + dy
        ok = valid_date(y, m, d)  # 29 Feb needs a leap year
        wall = days_from_civil(y, m, np.where(ok, d, 1)) * DAY_US + t
        gap = np.where(after, wall - (ref - DAY_US), (ref + DAY_US) - wall)
        better = ok & (gap >= 0) & (gap < best_gap)
        best = np.where(better, wall, best)
        best_gap = np.where(better, gap, best_gap)
    out[have] = best
    return out


def wall_to_utc(wall_us: np.ndarray, tz: str) -> np.ndarray:
    """UTC microseconds of naive wall-clock times read in time zone ``tz``.

    Ambiguous and non-existent local times (DST changes) take the earlier
    reading.  :data:`MISSING` stays :data:`MISSING`.
    """
    if tz in ("UTC", "Z", "Etc/UTC", "+00:00") or len(wall_us) == 0:
        return wall_us.copy()
    have = wall_us != MISSING
    arr = pa.array(np.where(have, wall_us, 0), pa.timestamp("us"))
    local = pc.assume_timezone(arr, timezone=tz, ambiguous="earliest", nonexistent="earliest")
    out = local.cast(pa.int64()).to_numpy(zero_copy_only=False)
    return np.where(have, out, MISSING)


def check_timezone(tz: str) -> None:
    """Raise ``ValueError`` unless Arrow knows time zone ``tz``."""
    try:
        pc.assume_timezone(pa.array([0], pa.timestamp("us")), timezone=tz)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"unknown time zone {tz!r}: {exc}") from None


_KERNEL_UPTIME = r"\bkernel: *\[ *(?P<s>\d{1,9})\.(?P<f>\d{6})\]"


def boot_anchors(text: pa.Array, parsed: ParsedTimes, utc: np.ndarray) -> np.ndarray:
    """Boot time (UTC microseconds) implied by each line, or :data:`MISSING`.

    A line implies the boot time when it carries both a wall clock and an
    uptime: a syslog/journal line ``May 01 12:00:00 node12 kernel: [12.345678] ...``
    (``utc`` must already hold its resolved time), or a dmesg line whose
    message states the wall clock (``[5.123456] rtc_cmos 00:00: setting
    system clock to 2024-05-01T12:00:00 UTC (1714564800)``).  Meant for
    small arrays (rows of one file, a head window).
    """
    arr = _string_array(text)
    out = np.full(len(arr), MISSING, np.int64)
    wall = np.flatnonzero((parsed.kind != NONE) & (parsed.kind != UPTIME) & (utc != MISSING))
    if len(wall):
        sub = arr.take(pa.array(wall))
        parts = regex.extract(sub, _KERNEL_UPTIME)
        ok = parts.is_valid().to_numpy(zero_copy_only=False)
        if ok.any():
            p = parts.filter(pa.array(ok))
            up = _digits(p.field("s")) * US + _frac_us(p.field("f"))
            out[wall[ok]] = utc[wall[ok]] - up
    upt = np.flatnonzero(parsed.kind == UPTIME)
    if len(upt):
        sub = arr.take(pa.array(upt))
        rest = regex.extract(sub, r"^(?:<\d+>)?\[ *\d+\.\d{6}\] ?(?P<rest>.*)")
        ok = rest.is_valid().to_numpy(zero_copy_only=False)
        if ok.any():
            inner = parse_times(rest.filter(pa.array(ok)).field("rest"))
            # only an explicit instant (a zone or epoch seconds) says when the boot was
            good = inner.kind == INSTANT
            at = upt[ok][good]
            out[at] = inner.value[good] - parsed.value[at]
    return out
