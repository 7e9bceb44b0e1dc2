"""The ``denpex`` command line.

``denpex scan`` is grep-shaped: ``path:line:signature:text`` on stdout, exit
status 0 when something matched, 1 when nothing did, 2 on any error (with
``-q``, a match wins over an error, as in grep).  Progress and messages go to
stderr, so stdout stays machine-readable.

This module is long because every subcommand's options and help text live with
its function, so the command-line reference is one file.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from .pandas_guard import without_pandas

EXIT_MATCH, EXIT_NONE, EXIT_ERROR = 0, 1, 2
#: bytes of a file per scanning task while rows are printed as they are found:
#: the rows of every task in flight are held until printed, so smaller
#: ranges keep memory flat when nearly every line matches
STREAM_UNIT = 16 << 20


def _stderr_console(quiet: bool = False) -> Any:
    """rich's stderr console, made on first use (a run that prints no message
    spares its ~17 ms of imports)."""
    return _LazyConsole(quiet)


class _LazyConsole:
    def __init__(self, quiet: bool) -> None:
        self._quiet = quiet
        self._console: Any = None

    def real(self) -> Any:
        """The rich Console itself (for rich objects that take one)."""
        if self._console is None:
            from rich.console import Console

            # soft_wrap: a message is one line whatever its length (rich would
            # otherwise wrap at 80 columns when stderr is not a terminal)
            self._console = Console(stderr=True, quiet=self._quiet, highlight=False, soft_wrap=True)
        return self._console

    @property
    def is_terminal(self) -> bool:
        if self._console is not None:
            return bool(self._console.is_terminal)
        return self._plain() is None

    def _plain(self) -> Any:
        """stderr, when plain text is all rich would write to it (not a
        terminal, no colour forced): a one-line message then costs no import."""
        if os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE"):
            return None
        try:
            return None if sys.stderr.isatty() else sys.stderr
        except (AttributeError, ValueError):
            return None

    def print(self, *objects: Any, **kw: Any) -> None:
        plain = self._plain() if self._console is None else None
        if (
            plain is not None
            and all(isinstance(o, str) for o in objects)
            and kw.get("markup") is False
        ):
            if not self._quiet:
                plain.write(" ".join(objects) + kw.get("end", "\n"))
            return
        self.real().print(*objects, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)


def parse_pattern_file(path: str) -> dict[str, list[str]]:
    """Patterns from ``-f FILE``: ``ID=REGEX`` or bare ``REGEX`` lines, ``#`` comments.

    Bare expressions get ids ``<file-stem>-<line number>``.
    """
    out: dict[str, list[str]] = {}
    stem = Path(path).stem
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            sig, sep, expr = line.partition("=")
            if sep and sig and all(c.isalnum() or c in "-_." for c in sig):
                out.setdefault(sig, []).append(expr)
            else:
                out.setdefault(f"{stem}-{n}", []).append(line)
    if not out:
        raise click.BadParameter(f"{path}: no patterns", param_hint="-f/--file")
    return out


def _build_scanner(
    exprs: Sequence[str],
    files: Sequence[str],
    signature_dirs: Sequence[str],
    ignore_case: bool,
    max_count: int,
    max_text: int,
    fixed: bool = False,
    word: bool = False,
) -> Any:
    from .engine.scanner import Scanner

    def shaped(expr: str) -> str:
        # -F: a literal (every non-alphanumeric escaped, which Hyperscan accepts)
        if fixed:
            expr = re.sub(r"([^A-Za-z0-9_])", r"\\\1", expr)
        return rf"\b(?:{expr})\b" if word else expr

    patterns: dict[str, list[str]] = {}
    toml_files: list[str] = []
    for e in exprs:
        sig, sep, expr = e.partition("=")
        if not sep or not sig:
            raise click.BadParameter(f"expected ID=REGEX, got {e!r}", param_hint="-e/--regexp")
        patterns.setdefault(sig, []).append(shaped(expr))
    for f in files:
        if f.endswith(".toml"):
            toml_files.append(f)
        else:
            for sig, pats in parse_pattern_file(f).items():
                patterns.setdefault(sig, []).extend(shaped(x) for x in pats)
    kw: dict[str, Any] = dict(
        max_rows_per_signature=max_count, max_text=max_text, caseless=ignore_case
    )
    if toml_files:
        from .kb.signatures import load_signatures

        kb = load_signatures(toml_files, builtin=False)
        patterns = {**kb.patterns(), **patterns}
    if patterns:
        return Scanner(patterns=patterns, **kw)
    return Scanner(list(signature_dirs) or None, **kw)


def _write_table(table: Any, out: str) -> None:
    import pyarrow as pa

    suffix = Path(out).suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, out)
    elif suffix in (".arrow", ".feather", ".ipc"):
        import pyarrow.feather as feather

        feather.write_feather(table, out)
    elif suffix == ".csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(
            table.cast(
                pa.schema(
                    [
                        pa.field(f.name, pa.string() if pa.types.is_dictionary(f.type) else f.type)
                        for f in table.schema
                    ]
                )
            ),
            out,
        )
    else:
        raise click.BadParameter(
            f"unknown output format {suffix!r} (use .parquet, .arrow or .csv)",
            param_hint="-o/--output",
        )


def _byte_progress(console: Any, label: str) -> Any:
    """A rich progress bar on ``console``: label, bar, bytes, rate, ETA."""
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    if isinstance(console, _LazyConsole):
        console = console.real()
    return Progress(
        TextColumn(label),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )


def _progress(console: Any, enabled: bool) -> Any:
    """The scan's progress bar on stderr, or None when not a TTY."""
    if not enabled or not console.is_terminal:
        return None
    return _byte_progress(console, "scanning")


#: optional modules -> the extra that installs them
EXTRAS = {
    "duckdb": "index",
    "fsspec": "index",
    "xxhash": "index",
    "dask": "dask",
    "distributed": "dask",
}


class _Group(click.Group):
    """The command group: a missing optional dependency is one line naming
    the ``pip install`` that fixes it, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            top = (exc.name or "").split(".")[0]
            if top not in EXTRAS:
                return self._fail(exc)
            _stderr_console().print(
                f"denpex: this command needs {top}: pip install 'denpex_fast[{EXTRAS[top]}]'",
                style="red",
                markup=False,
            )
            sys.exit(EXIT_ERROR)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # noqa: BLE001 - one line, never a traceback
            return self._fail(exc)

    @staticmethod
    def _fail(exc: BaseException) -> Any:
        """Every unexpected error: one line on stderr, exit 2 (``DENPEX_DEBUG=1`` re-raises)."""
        if os.environ.get("DENPEX_DEBUG"):
            raise exc
        _stderr_console().print(f"denpex: {type(exc).__name__}: {exc}", style="red", markup=False)
        sys.exit(EXIT_ERROR)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="denpex_fast")
@click.pass_context
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Log what the tool does on stderr (-v: steps and timings, -vv: debug).",
)
def main(ctx: click.Context, verbose: int = 0) -> None:
    """Index and diagnose distributed-training failure logs.

    Defaults for any command's options can be set per project in
    pyproject.toml, e.g. [tool.denpex_fast.defaults.diagnose] tz = "UTC".
    """
    _setup_logging(verbose)
    ctx.default_map = _project_defaults(ctx)
    if ctx.invoked_subcommand in ("scan", "diagnose", "demo"):
        ctx.with_resource(without_pandas())


def run() -> None:
    """Entry point of the ``denpex`` script and ``python -m denpex_fast``.

    Runs :func:`main`, then leaves without the interpreter's teardown: Arrow's
    thread pools can abort a process at teardown ("terminate called without an
    active exception", apache/arrow#36980, #34314) after every result was
    written, which turned a successful run into exit status 134.  Python's own
    exit handlers (temporary directories, logging) still run first.
    """
    # numpy's OpenBLAS starts a thread per core that wakes and spins beside
    # the scanning threads; nothing here does linear algebra.  Set before any
    # import of numpy, for this process and the workers it starts.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        main()
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    import atexit

    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is not None:
        run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code or 0)


def _setup_logging(verbose: int) -> None:
    import logging

    if not verbose:
        return  # quiet by default: warnings only, through Python's last-resort handler
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("denpex: %(name)s: %(message)s"))
    root = logging.getLogger("denpex_fast")
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)


def _project_defaults(ctx: click.Context) -> dict[str, dict[str, Any]]:
    """[tool.denpex_fast.defaults.<command>] as click's default_map, every key
    checked against the command's options (a typo is an error naming it)."""
    from .config import ConfigError, command_defaults

    try:
        path, table = command_defaults()
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from None
    out: dict[str, dict[str, Any]] = {}
    group = ctx.command
    assert isinstance(group, click.Group)
    for name, values in table.items():
        cmd = group.commands.get(name)
        if cmd is None:
            raise click.UsageError(
                f"{path}: [tool.denpex_fast.defaults.{name}]: no command {name!r} "
                f"(commands: {', '.join(sorted(group.commands))})"
            )
        by_flag: dict[str, str] = {}
        for param in cmd.params:
            if isinstance(param, click.Option) and param.name:
                by_flag[param.name] = param.name
                for opt in param.opts + param.secondary_opts:
                    if opt.startswith("--"):
                        by_flag[opt[2:].replace("-", "_")] = param.name
        mapped: dict[str, Any] = {}
        for key, value in values.items():
            target = by_flag.get(key.replace("-", "_"))
            if target is None:
                raise click.UsageError(
                    f"{path}: [tool.denpex_fast.defaults.{name}]: {name} has no option --{key}"
                )
            mapped[target] = value
        out[name] = mapped
    return out


@main.command("scan")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "-e",
    "--regexp",
    "exprs",
    multiple=True,
    metavar="ID=REGEX",
    help="Scan for this Hyperscan expression under signature ID (repeatable).",
)
@click.option(
    "-f",
    "--file",
    "files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Patterns from FILE: a signature .toml, or ID=REGEX / REGEX lines (repeatable).",
)
@click.option(
    "--signatures",
    "signature_dirs",
    multiple=True,
    type=click.Path(exists=True),
    help="Extra signature directory or file, overriding built-ins by id (repeatable).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="JSON Lines output: begin/match/end/summary messages."
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the match table to a .parquet, .arrow or .csv file instead.",
)
@click.option(
    "-j",
    "--threads",
    type=click.IntRange(1),
    default=None,
    help="Scanning threads (default: all cores).",
)
@click.option("-i", "--ignore-case", is_flag=True, help="Case-insensitive patterns.")
@click.option(
    "-F",
    "--fixed-strings",
    is_flag=True,
    help="Treat the -e patterns (and REGEX lines of -f files) as literal strings.",
)
@click.option(
    "-w",
    "--word-regexp",
    is_flag=True,
    help="Only match whole words (the -e/-f patterns wrapped in \\b...\\b).",
)
@click.option(
    "-l",
    "--files-with-matches",
    is_flag=True,
    help="Print only the names of files with a match (from the exact counts).",
)
@click.option(
    "-c",
    "--count",
    "count_lines",
    is_flag=True,
    help="Print the number of matching lines per file (a line matched by several "
    "signatures counts once; exact, --max-count does not apply).",
)
@click.option(
    "-A",
    "--after-context",
    type=click.IntRange(0, 1000),
    default=0,
    help="Print NUM lines after each match (read back from the same input).",
)
@click.option(
    "-B",
    "--before-context",
    type=click.IntRange(0, 1000),
    default=0,
    help="Print NUM lines before each match.",
)
@click.option(
    "-C",
    "--context",
    type=click.IntRange(0, 1000),
    default=None,
    help="Print NUM lines before and after each match (-A/-B override it).",
)
@click.option(
    "-g",
    "--glob",
    "globs",
    multiple=True,
    metavar="GLOB",
    help="Only scan files found in directories whose name (or path, when GLOB has a /) "
    "matches GLOB; !GLOB excludes; the last matching glob wins (repeatable).",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Highlight matches, paths and line numbers (auto: when stdout is a terminal).",
)
@click.option(
    "--heading/--no-heading",
    default=None,
    help="Print each file name once above its rows (default: when stdout is a terminal).",
)
@click.option(
    "-m",
    "--max-count",
    type=click.IntRange(1),
    default=10_000,
    show_default=True,
    help="Rows kept per (file, signature); counts stay exact.",
)
@click.option(
    "--max-text",
    type=click.IntRange(1, 1 << 24),
    default=1024,
    show_default=True,
    help="Bytes of each matched line kept in the text column.",
)
@click.option("--no-mmap", is_flag=True, help="Read files with read() instead of mapping them.")
@click.option("-L", "--follow", is_flag=True, help="Follow symbolic links in directories.")
@click.option(
    "--binary",
    is_flag=True,
    help="Scan binary files too (ELF, PNG, archives, NUL bytes in the first block); "
    "by default they are skipped and counted.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print nothing; only the exit status.")
@click.option(
    "-s",
    "--no-messages",
    is_flag=True,
    help="Do not print per-file errors or the warnings on rows not shown.",
)
@click.option("--stats", is_flag=True, help="Print counts per signature and totals to stderr.")
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help="Progress bar on stderr (only when stderr is a terminal).",
)
def scan_cmd(
    paths: tuple[str, ...],
    exprs: tuple[str, ...],
    files: tuple[str, ...],
    signature_dirs: tuple[str, ...],
    as_json: bool,
    output: str | None,
    threads: int | None,
    ignore_case: bool,
    max_count: int,
    max_text: int,
    no_mmap: bool,
    follow: bool,
    quiet: bool,
    no_messages: bool,
    stats: bool,
    progress: bool,
    binary: bool = False,
    fixed_strings: bool = False,
    word_regexp: bool = False,
    files_with_matches: bool = False,
    count_lines: bool = False,
    after_context: int = 0,
    before_context: int = 0,
    context: int | None = None,
    globs: tuple[str, ...] = (),
    color: str = "auto",
    heading: bool | None = None,
) -> None:
    """Scan PATHS (files, directories, .gz/.zst, - for stdin) for failure signatures.

    Without -e/-f the built-in signature knowledge base is used.
    Exit status: 0 if any line matched, 1 if none, 2 on error.
    """
    from .errors import DenpexError

    console = _stderr_console(quiet)
    if (count_lines or files_with_matches) and output:
        # the table written is every matching line (its text is not shown)
        max_count, max_text = (1 << 62), 1
    elif count_lines or files_with_matches:
        # the exact counts come from the scan itself: no row beyond one per signature
        max_count, max_text = 1, 1
    if quiet:  # only whether a line matched: one row per signature and file is enough
        max_count, max_text = 1, 1
    try:
        scanner = _build_scanner(
            exprs,
            files,
            signature_dirs,
            ignore_case,
            max_count,
            max_text,
            fixed=fixed_strings,
            word=word_regexp,
        )
    except (DenpexError, OSError) as exc:
        console.print(f"denpex: {exc}", style="red", markup=False)
        sys.exit(EXIT_ERROR)

    tty = sys.stdout.isatty()
    use_color = color == "always" or (color == "auto" and tty)
    before = before_context or (context or 0)
    after = after_context or (context or 0)
    use_heading = tty if heading is None else heading
    # plain rows are printed as the scan finds them (memory does not grow with them)
    stream = not (output or quiet or files_with_matches or count_lines or as_json) and not (
        use_color or use_heading or before or after
    )
    from .engine.scanner import DEFAULT_UNIT

    if not quiet:  # -q prints nothing: its start-up spares the output modules
        from . import scan_output as so
    bar = _progress(console, progress and not quiet)
    task = bar.add_task("scan", total=None) if bar else None

    def on_progress(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total or None)

    on_batch: Any = None  # None: the result keeps its rows for the output below
    if stream:
        on_batch = lambda batch: so.write_plain_batch(sys.stdout.buffer, batch)  # noqa: E731
    elif quiet:
        on_batch = lambda batch: None  # noqa: E731  -q keeps no rows: only whether any matched

    if stream:
        sys.stdout.flush()
    if bar:
        bar.start()
    try:
        result = scanner.run(
            list(paths),
            threads=threads,
            errors="collect",
            mmap=not no_mmap,
            follow_symlinks=follow,
            progress=on_progress if bar else None,
            binary=binary,
            globs=globs,
            on_batch=on_batch,
            unit_size=STREAM_UNIT if stream else DEFAULT_UNIT,
        )
        if stream:
            sys.stdout.buffer.flush()
    except KeyboardInterrupt:
        console.print("denpex: interrupted", style="red")
        sys.exit(130)
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly, as grep and rg do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(EXIT_MATCH)
    finally:
        if bar:
            bar.stop()

    table = result.table
    if not (no_messages or quiet):  # -q prints nothing, messages included
        for e in result.errors:
            console.print(f"denpex: {e.path}: {e.message}", style="red", markup=False)
        if not (count_lines or files_with_matches):
            for warning in _scan_warnings(result, max_count):
                console.print(f"denpex: {warning}", style="yellow", markup=False)
    order = list(result.inputs) if getattr(result, "inputs", None) else []
    if output and not quiet:
        _write_table(table, output)
    elif quiet or stream:
        pass
    elif files_with_matches:
        so.write_files_with_matches(sys.stdout, result.counts, order)
    elif count_lines:
        so.write_counts(sys.stdout, result.matching_lines, order, single=len(order) == 1)
    elif as_json:
        so.write_json(sys.stdout, result, _highlighter(scanner, ignore_case))
    else:
        style = so.Style(color=use_color, heading=use_heading, before=before, after=after)
        reader = None
        if before or after:
            from .io.readback import JobBytes

            reader = JobBytes.from_scan(result)
        with reader.keep_open() if reader is not None else contextlib.nullcontext():
            so.write_text(
                sys.stdout,
                table,
                style,
                _highlighter(scanner, ignore_case) if use_color else None,
                reader.around if reader is not None else None,
            )
    if stats:
        _print_stats(console, result)
    matched = result.stats["rows"] > 0
    if result.errors and not (quiet and matched):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_MATCH if matched else EXIT_NONE)


def _scan_warnings(result: Any, max_count: int) -> list[str]:
    """What the printed rows leave out: rows past --max-count, dropped text."""
    out = []
    counts = result.counts
    if counts.num_rows:
        lines, kept = counts.column("lines").to_numpy(), counts.column("kept").to_numpy()
        hidden = int(lines.sum()) - int(kept.sum())
        if hidden > 0:
            out.append(
                f"{hidden:,} matching lines not shown: --max-count keeps {max_count:,} "
                "per signature and file (-m to raise it; --stats for the counts)"
            )
    dropped = int(result.stats.get("text_dropped", 0))
    if dropped:
        out.append(
            f"the text of {dropped:,} rows was dropped (over 2 GiB of text in one scan "
            "task); their file and line are kept"
        )
    return out


def _highlighter(scanner: Any, caseless: bool) -> Any:
    from .scan_output import Highlighter

    return Highlighter(scanner.patterns, caseless)


def _print_stats(console: Any, result: Any) -> None:
    import pyarrow.compute as pc

    by_sig = result.counts.group_by("signature").aggregate([("lines", "sum"), ("kept", "sum")])
    by_sig = by_sig.sort_by([("lines_sum", "descending")])
    for row in by_sig.to_pylist():
        n = row["lines_sum"]
        console.print(
            f"{row['signature']}: {n} matching line{'' if n == 1 else 's'} "
            f"({row['kept_sum']} kept)",
            markup=False,
        )
    s = result.stats
    mb = s["bytes"] / 1e6
    rate = mb / s["seconds"] if s["seconds"] else 0.0
    total = pc.sum(result.counts.column("lines")).as_py() or 0
    skipped = int(s.get("skipped", 0))
    console.print(
        f"{s['files']} files, {mb:.1f} MB, {total} matching lines, "
        f"{s['seconds']:.2f} s ({rate:.0f} MB/s)"
        + (
            f"; {skipped} binary file{'' if skipped == 1 else 's'} skipped (--binary scans them)"
            if skipped
            else ""
        ),
        markup=False,
    )


@main.command("diagnose")
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown", "sarif", "github", "html"]),
    default="text",
    show_default=True,
    help="Report format: text, json (denpex.diagnosis/1), markdown, sarif (SARIF 2.1.0), "
    "github (workflow annotations) or html (one self-contained page with a "
    "per-rank timeline; use -o).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the report to this file instead of stdout.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option(
    "--signatures",
    "signature_dirs",
    multiple=True,
    type=click.Path(exists=True),
    help="Extra signature directory or file, overriding built-ins by id (repeatable).",
)
@click.option(
    "-j",
    "--threads",
    type=click.IntRange(1),
    default=None,
    help="Scanning threads (default: all cores).",
)
@click.option(
    "--tz",
    "default_tz",
    default="UTC",
    show_default=True,
    help="Time zone of timestamps that carry none.",
)
@click.option(
    "--baseline",
    "baseline",
    multiple=True,
    type=click.Path(exists=True),
    help="A healthy run of the same job: report the first lines it never printed (repeatable). "
    "Its line templates are cached (keyed by each file's path, size and mtime), so later "
    "comparisons against the same run do not read it again.",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when a failure was diagnosed.")
def diagnose_cmd(
    paths: tuple[str, ...],
    fmt: str,
    as_json: bool,
    signature_dirs: tuple[str, ...],
    threads: int | None,
    default_tz: str,
    exit_zero: bool,
    baseline: tuple[str, ...] = (),
    output: str | None = None,
) -> None:
    """Diagnose a failed job: the rank and line that failed first, the collateral,
    the fix and the command that verifies it.

    PATHS: one job: a job directory (one file per rank, a torchrun --log-dir
    tree, Slurm outputs per node), its files, .gz/.zst, or - for a pasted log
    on stdin.  Verdicts: failure, suspect, stopped, incomplete, no-failure-found.
    Exit status: 0 no failure found, 1 any other verdict, 2 usage or input error.
    """
    from .analysis.diagnosis import diagnose
    from .engine.scanner import Scanner
    from .errors import DenpexError
    from .report import render_text, to_github, to_json, to_markdown, to_sarif

    console = _stderr_console()
    dirs = [p for p in paths if p != "-" and os.path.isdir(p)]
    if len(dirs) > 1:
        console.print(
            f"denpex: {len(dirs)} directories given ({', '.join(dirs[:3])}...): diagnose one "
            "job at a time (name the job's own directory, or list its files)",
            style="red",
            markup=False,
        )
        sys.exit(EXIT_ERROR)
    try:
        from .analysis.diagnosis import diagnosis_scanner

        # fewer rows of the high-volume context lines: the ranking reads few of them
        scanner = diagnosis_scanner(Scanner(list(signature_dirs) or None))
        # a spinner with the elapsed time on stderr, only on a terminal
        status = (
            console.status("diagnosing...") if console.is_terminal else contextlib.nullcontext()
        )
        with status:
            d = diagnose(
                list(paths),
                scanner=scanner,
                threads=threads,
                default_tz=default_tz,
                baseline=list(baseline) or None,
            )
    except (DenpexError, OSError, ValueError) as exc:
        console.print(f"denpex: {exc}", style="red", markup=False)
        sys.exit(EXIT_ERROR)
    except Exception as exc:  # noqa: BLE001 - one line, never a traceback, for a user at a shell
        console.print(
            f"denpex: internal error: {type(exc).__name__}: {exc}", style="red", markup=False
        )
        sys.exit(EXIT_ERROR)
    if d.stats.get("files", 0) == 0:
        for e in d.errors:
            console.print(f"denpex: {e.get('path')}: {e.get('message')}", style="red", markup=False)
        if not d.errors:
            console.print("denpex: no file to read", style="red", markup=False)
        sys.exit(EXIT_ERROR)
    fmt = "json" if as_json else fmt
    out = None
    if fmt == "json":
        out = to_json(d)
    elif fmt == "markdown":
        out = to_markdown(d)
    elif fmt == "sarif":
        out = to_sarif(d)
    elif fmt == "github":
        out = to_github(d)
    elif fmt == "html":
        from .timeline import to_html

        out = to_html(d)
    if out is not None and output:
        try:
            with open(output, "w", encoding="utf-8") as f:
                f.write(out + "\n")
        except OSError as exc:
            console.print(f"denpex: {output}: {exc.strerror or exc}", style="red", markup=False)
            sys.exit(EXIT_ERROR)
    elif out is not None:
        click.echo(out)
    else:
        from rich.console import Console

        if output:
            with open(output, "w", encoding="utf-8") as f:
                render_text(d, Console(file=f, highlight=False, width=100))
        else:
            render_text(d, Console(highlight=False))
    if exit_zero or d.verdict == "no-failure-found":
        sys.exit(EXIT_MATCH)
    sys.exit(EXIT_NONE)


@main.command("schema")
@click.argument(
    "name",
    type=click.Choice(
        ["diagnosis", "signatures", "matches", "rank-fates", "manifest", "diagnosis-rows"]
    ),
)
def schema_cmd(name: str) -> None:
    """Print a published contract: the JSON Schema of a diagnosis or a
    signature file, or the Arrow schema (as JSON) of the match table, the
    rank fates, or the index's manifest/diagnosis datasets."""
    from .schema import describe

    try:
        click.echo(describe(name))
    except ModuleNotFoundError as exc:
        click.echo(
            f"denpex: {exc.name} is needed for this schema: pip install 'denpex_fast[index]'",
            err=True,
        )
        sys.exit(EXIT_ERROR)


def sample_job_path() -> Path:
    """The bundled sample job (a failed 4-rank run) used by ``denpex demo``."""
    from importlib.resources import files

    return Path(str(files("denpex_fast.samples") / "sample_job"))


@main.command("demo")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="Report format on stdout.",
)
def demo_cmd(fmt: str) -> None:
    """Diagnose the bundled sample job (a failed 4-rank run)."""
    path = sample_job_path()
    click.echo(f"# diagnosing the sample job at {path}", err=True)
    ctx = click.get_current_context()
    ctx.invoke(diagnose_cmd, paths=(str(path),), fmt=fmt, exit_zero=True)


class _IndexProgress:
    """Progress of ``denpex index`` on stderr: jobs, files, bytes/s, ETA."""

    def __init__(self, console: Any) -> None:
        self.bar = _byte_progress(console, "{task.description}")
        self.task = self.bar.add_task("indexing", total=None)
        self.jobs = self.files = self.n_jobs = self.n_files = 0
        self.file_bytes = self.job_bytes = self.skipped_bytes = 0

    def __call__(self, event: str, value: Any) -> None:
        if event == "start":
            self.n_jobs, self.n_files, total = value
            self.bar.update(self.task, total=total or None)
            self.bar.start()
        elif event == "file":
            self.files += 1
            self.file_bytes += value
        elif event == "job":
            self.jobs += 1
            self.job_bytes += value.size
            if value.status != "indexed":
                self.skipped_bytes += value.size
                self.files += value.files
        # per-file events come from local threads only; processes and Dask report whole jobs
        done = self.file_bytes + self.skipped_bytes if self.file_bytes else self.job_bytes
        self.bar.update(
            self.task,
            completed=done,
            description=f"jobs {self.jobs}/{self.n_jobs}  files {self.files}/{self.n_files}",
        )

    def stop(self) -> None:
        self.bar.stop()


@main.command("index")
@click.argument("root")
@click.option(
    "-o",
    "--output",
    "index",
    required=True,
    help="The index: a directory or fsspec URL (created if missing).",
)
@click.option(
    "--job-glob",
    metavar="GLOB",
    help="Jobs are the directories/tar archives matching GLOB under ROOT "
    "(default: each immediate subdirectory or archive).",
)
@click.option(
    "--job-regex",
    metavar="REGEX",
    help="Jobs are the directories/archives whose path relative to ROOT fully "
    "matches REGEX; its (?P<job>...) group names the job.",
)
@click.option(
    "-e",
    "--regexp",
    "exprs",
    multiple=True,
    metavar="ID=REGEX",
    help="Scan for this expression instead of the knowledge base (repeatable).",
)
@click.option(
    "-f",
    "--file",
    "files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Patterns from FILE: a signature .toml, or ID=REGEX / REGEX lines.",
)
@click.option(
    "--signatures",
    "signature_dirs",
    multiple=True,
    type=click.Path(exists=True),
    help="Extra signature directory or file, overriding built-ins by id (repeatable).",
)
@click.option(
    "-j",
    "--threads",
    type=click.IntRange(1),
    default=None,
    help="Jobs indexed at once in threads (default: one job per core, in this process "
    "and worker processes when there are two jobs per core and 32 MiB of new or changed "
    "jobs, else in threads).",
)
@click.option(
    "-p",
    "--processes",
    type=click.IntRange(1),
    default=None,
    metavar="N",
    help="Index N jobs at once in worker processes instead of threads "
    "(faster on many jobs: diagnosis holds the GIL).",
)
@click.option(
    "--dask",
    "dask_address",
    metavar="ADDRESS|local",
    help="Run the jobs on a Dask cluster: a scheduler address, or 'local' for a "
    "2-worker LocalCluster.",
)
@click.option(
    "--checksum",
    is_flag=True,
    help="Compare content hashes even when size and mtime are unchanged.",
)
@click.option(
    "--retry-errors", is_flag=True, help="Index again the jobs with files that failed last time."
)
@click.option("--force", is_flag=True, help="Index every job again, changed or not.")
@click.option("--prune", is_flag=True, help="Drop jobs that are no longer under ROOT.")
@click.option(
    "--binary",
    is_flag=True,
    help="Scan binary files too (by default skipped, with a 'skipped' manifest row).",
)
@click.option(
    "--wait",
    "lock_timeout",
    type=click.FloatRange(0),
    default=0.0,
    metavar="SECONDS",
    help="When another denpex index is writing this index, wait up to SECONDS for "
    "it to finish (default: stop at once, naming the other writer).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary.")
@click.option(
    "--progress/--no-progress",
    default=True,
    show_default=True,
    help="Progress bar on stderr (only when stderr is a terminal).",
)
def index_cmd(
    root: str,
    index: str,
    job_glob: str | None,
    job_regex: str | None,
    exprs: tuple[str, ...],
    files: tuple[str, ...],
    signature_dirs: tuple[str, ...],
    threads: int | None,
    processes: int | None,
    dask_address: str | None,
    checksum: bool,
    retry_errors: bool,
    force: bool,
    prune: bool,
    quiet: bool,
    progress: bool,
    binary: bool = False,
    lock_timeout: float = 0.0,
) -> None:
    """Index the jobs under ROOT into a partitioned Parquet dataset.

    Only new or changed jobs are scanned; each job is committed atomically.
    Exit status: 0 when every job was indexed (files that could not be read
    are recorded in the manifest), 2 when a job failed or on a usage error.
    """
    import time

    t0 = time.perf_counter()
    console = _stderr_console(quiet)
    err = _stderr_console()  # errors are shown even with -q
    if job_glob and job_regex:
        raise click.UsageError("give --job-glob or --job-regex, not both")
    if sum(x is not None for x in (threads, processes, dask_address)) > 1:
        raise click.UsageError("give -j/--threads, -p/--processes or --dask, not two")
    if not (exprs or files or signature_dirs or force or checksum or retry_errors or prune):
        # an archive unchanged since the last clean run is proven so by stats
        # alone, without importing the index's machinery (pyarrow, fsspec)
        from .batch import seal

        request = seal.request_key(
            root, index, job_glob=job_glob, job_regex=job_regex, signatures=None, binary=binary
        )
        jobs = seal.check(root, index, request)
        if jobs is not None:
            if not quiet:
                console.print(
                    _index_summary_line(
                        len(jobs), 0, len(jobs), 0, 0, 0, 0.0, time.perf_counter() - t0
                    ),
                    markup=False,
                )
            sys.exit(0)

    from .batch.build import build_index
    from .batch.index import IndexOptions
    from .errors import DenpexError

    if dask_address is None:  # Dask itself needs pandas; the local index does not
        click.get_current_context().with_resource(without_pandas())
    scanner: Any = None  # the built-in knowledge base, made only when a job needs a scan
    if exprs or files or signature_dirs:  # the user's patterns are checked up front
        try:
            scanner = _build_scanner(exprs, files, signature_dirs, False, 10_000, 1024)
        except (DenpexError, OSError) as exc:
            err.print(f"denpex: {exc}", style="red", markup=False)
            sys.exit(EXIT_ERROR)
    bar = _IndexProgress(console) if progress and not quiet and console.is_terminal else None
    opts = IndexOptions(checksum=checksum, retry_errors=retry_errors, force=force, binary=binary)
    try:
        summary = build_index(
            root,
            index,
            scanner=scanner,
            signatures=list(signature_dirs) or None,
            job_glob=job_glob,
            job_regex=job_regex,
            threads=threads,
            # default: worker processes when the work pays for their start
            processes="auto"
            if threads is None and processes is None and dask_address is None
            else processes,
            dask=dask_address,
            prune=prune,
            options=opts,
            progress=bar,
            lock_timeout=lock_timeout,
        )
    except KeyboardInterrupt:
        err.print("denpex: interrupted (committed jobs are kept)", style="red")
        sys.exit(130)
    except (ValueError, OSError, DenpexError) as exc:
        err.print(f"denpex: {exc}", style="red", markup=False)
        sys.exit(EXIT_ERROR)
    finally:
        if bar:
            bar.stop()
    for r in summary.reports:
        if r.status == "failed":
            err.print(f"denpex: job {r.job}: {r.error}", style="red", markup=False)
    if not quiet:
        console.print(
            _index_summary_line(
                len(summary.reports),
                summary.count("indexed"),
                summary.count("unchanged"),
                summary.count("touched"),
                summary.count("failed"),
                len(summary.pruned),
                sum(r.bytes for r in summary.reports) / 1e6,
                summary.seconds,
                sum(r.file_errors for r in summary.reports),
            ),
            markup=False,
        )
    sys.exit(0 if summary.ok else EXIT_ERROR)


def _index_summary_line(
    jobs: int,
    indexed: int,
    unchanged: int,
    touched: int,
    failed: int,
    pruned: int,
    mb: float,
    seconds: float,
    errs: int = 0,
) -> str:
    """The line ``denpex index`` ends with."""
    return (
        f"{jobs} jobs: {indexed} indexed, {unchanged} unchanged, {touched} touched, {failed} failed"
        + (f", {pruned} pruned" if pruned else "")
        + f"; {mb:.1f} MB scanned in {seconds:.1f} s"
        + (f"; {errs} unreadable files (see the manifest)" if errs else "")
    )


_FORMAT = click.Choice(["text", "json", "csv"])


def _open_index_or_exit(index: str, unsafe: bool = False) -> Any:
    from .batch.query import open_index

    try:
        return open_index(index, unsafe=unsafe)
    except FileNotFoundError as exc:
        _stderr_console().print(f"denpex: {exc}", style="red", markup=False)
        sys.exit(EXIT_ERROR)


@main.command("query")
@click.argument("index")
@click.argument("sql")
@click.option(
    "--format",
    "fmt",
    type=_FORMAT,
    default="text",
    show_default=True,
    help="Output as an aligned text table, a JSON array or CSV.",
)
@click.option(
    "--unsafe",
    is_flag=True,
    help="Let the SQL read and write other files, ATTACH databases and load "
    "extensions (DuckDB's defaults); without it, only the index views.",
)
def query_cmd(index: str, sql: str, fmt: str, unsafe: bool = False) -> None:
    """Run SQL (DuckDB) over INDEX: views matches, diagnosis, rank_fates, manifest.

    The SQL sees the index views and nothing else: other files
    (read_csv, COPY ... TO), ATTACH and extension installs are refused
    unless --unsafe is given.
    """
    import duckdb

    from .batch.query import format_table

    ix = _open_index_or_exit(index, unsafe)
    try:
        table = ix.sql(sql)
    except duckdb.Error as exc:
        _stderr_console().print(f"denpex: {exc}", style="red", markup=False)
        sys.exit(EXIT_ERROR)
    sys.stdout.write(format_table(table, fmt))


@main.command("report")
@click.argument("index")
@click.option(
    "--top-causes",
    "which",
    flag_value="top-causes",
    help="Initiating causes across jobs, most frequent first.",
)
@click.option(
    "--by-host",
    "which",
    flag_value="by-host",
    help="Hosts where failures began, with their causes.",
)
@click.option("--trend", "which", flag_value="trend", help="Initiating causes per ISO week.")
@click.option(
    "--format",
    "fmt",
    type=_FORMAT,
    default="text",
    show_default=True,
    help="Output as an aligned text table, a JSON array or CSV.",
)
def report_cmd(index: str, which: str | None, fmt: str) -> None:
    """A ready-made report over INDEX (default: --top-causes)."""
    from .batch.query import format_table

    ix = _open_index_or_exit(index)
    sys.stdout.write(format_table(ix.report(which or "top-causes"), fmt))


@main.group("signatures")
def signatures_group() -> None:
    """Browse, test and check the signature knowledge base."""


def _kb(signature_dirs: tuple[str, ...]) -> Any:
    from .kb.signatures import load_signatures

    return load_signatures(list(signature_dirs) or None)


@signatures_group.command("list")
@click.option("--framework", help="Only entries of this framework (pytorch, nccl, deepspeed, ...).")
@click.option(
    "--phase", help="Only entries of this phase (memory, communication, checkpoint, ...)."
)
@click.option(
    "--role", type=click.Choice(["cause", "symptom", "context"]), help="Only entries of this role."
)
@click.option(
    "--signatures",
    "signature_dirs",
    multiple=True,
    type=click.Path(exists=True),
    help="Extra signature directory or file (repeatable).",
)
def signatures_list(
    framework: str | None, phase: str | None, role: str | None, signature_dirs: tuple[str, ...]
) -> None:
    """List signatures: id, role, phase, framework and title."""
    n = 0
    for sig in _kb(signature_dirs):
        if (
            (framework and sig.framework != framework)
            or (phase and sig.phase != phase)
            or (role and sig.role != role)
        ):
            continue
        click.echo(f"{sig.id}\t{sig.role}\t{sig.phase}\t{sig.framework}\t{sig.title}")
        n += 1
    click.echo(f"{n} signature(s)", err=True)


@signatures_group.command("show")
@click.argument("signature_id")
@click.option(
    "--signatures",
    "signature_dirs",
    multiple=True,
    type=click.Path(exists=True),
    help="Extra signature directory or file (repeatable).",
)
def signatures_show(signature_id: str, signature_dirs: tuple[str, ...]) -> None:
    """Show one entry: patterns, root cause, fix, checklist, competing, verify, references."""
    from .kb.signatures import format_signature

    kb = _kb(signature_dirs)
    try:
        click.echo(format_signature(kb[signature_id]))
    except KeyError:
        import difflib

        close = [i for i in kb.ids if i.startswith(signature_id)][:5] or difflib.get_close_matches(
            signature_id, kb.ids, n=5
        )
        raise click.ClickException(
            f"no signature {signature_id!r}"
            + (f"; did you mean {', '.join(close)}?" if close else "")
        ) from None


@signatures_group.command("match")
@click.argument("line")
@click.option(
    "--signatures",
    "signature_dirs",
    multiple=True,
    type=click.Path(exists=True),
    help="Extra signature directory or file (repeatable).",
)
def signatures_match(line: str, signature_dirs: tuple[str, ...]) -> None:
    """Which entries match a pasted LINE, by which pattern, and the fields read from it.

    Exit status 0 when something matched, 1 otherwise.
    """
    from .engine.scanner import Scanner

    kb = _kb(signature_dirs)
    scanner = Scanner(kb)
    data = line.encode("utf-8", "surrogateescape")
    hits = scanner.scan_bytes(data).column("signature").to_pylist()
    for sig_id in dict.fromkeys(hits):
        sig = kb[sig_id]
        # which pattern: one small database per pattern of this entry
        which = [
            k
            for k, p in enumerate(sig.patterns)
            if Scanner(patterns={sig_id: [p]}).scan_bytes(data).num_rows
        ]
        click.echo(f"{sig_id} ({sig.role}, {sig.severity}): {sig.title}")
        for k in which:
            click.echo(f"  pattern {k}: {sig.patterns[k]}")
        fields = sig.extract_fields(line)
        if fields:
            click.echo("  fields: " + ", ".join(f"{k}={v}" for k, v in fields.items()))
    if not hits:
        click.echo("no signature matches this line", err=True)
    sys.exit(EXIT_MATCH if hits else EXIT_NONE)


@signatures_group.command("check")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
def signatures_check(paths: tuple[str, ...]) -> None:
    """Strictly check signature files or directories (default: the built-ins):
    schema, Hyperscan compile, examples, references between entries.
    Exit status 0 when clean, 1 on problems.
    """
    from .engine.kbcheck import check_signatures

    problems, notes, n = check_signatures(list(paths) or None)
    for p in problems:
        click.echo(p)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"{n} signatures checked, {len(problems)} problem(s)", err=True)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
