#!/usr/bin/env bash
# Bounded coverage-guided fuzzing of the native scanner (atheris + libFuzzer,
# ASan + UBSan), one run per harness: fuzz_scan.py, fuzz_compile.py.
#
# Needs the venv made by .ci/run ($DENPEX_CI_VENV, default .ci-venv); installs
# atheris into it.  The instrumented extension is built into a private copy of
# the package under $DENPEX_FUZZ_DIR (default build/fuzz), which also keeps the
# growing corpora between runs and any crashing input (artifacts/).
# $DENPEX_FUZZ_SECONDS (default 60) bounds each harness.  Exits non-zero when a
# harness finds a failing input.  See tests/fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
VENV="${DENPEX_CI_VENV:-$ROOT/.ci-venv}"
FUZZ="${DENPEX_FUZZ_DIR:-$ROOT/build/fuzz}"
SECONDS_EACH="${DENPEX_FUZZ_SECONDS:-60}"
PY="$VENV/bin/python"
if [ ! -x "$PY" ]; then
    echo "fuzz: no venv at $VENV; run .ci/run first or set DENPEX_CI_VENV" >&2
    exit 2
fi
# shellcheck source=tests/sanitize/toolchain.sh
. tests/sanitize/toolchain.sh
ensure_clang
# 3.0.0: the version whose bundled sanitizer runtime was checked against clang 14
"$PY" -c 'import atheris' 2>/dev/null || "$PY" -m pip install -q 'atheris==3.0.0'
DENPEX_CFLAGS="${DENPEX_CFLAGS:-} -fsanitize=fuzzer-no-link" build_instrumented "$FUZZ/pkg"
mkdir -p "$FUZZ/artifacts" "$FUZZ/tmp"

export PYTHONPATH="$FUZZ/pkg"
# atheris's runtime carries ASan and libFuzzer together
LD_PRELOAD="$("$PY" -c 'import atheris; print(atheris.path())')/asan_with_fuzzer.so"
export LD_PRELOAD
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export TMPDIR="$FUZZ/tmp"  # fuzz_scan's scratch files

status=0
for name in scan compile; do
    mkdir -p "$FUZZ/corpus-$name"
    case $name in
        scan) max_len=4096 ;;
        compile) max_len=512 ;;
    esac
    echo "fuzz: $name for ${SECONDS_EACH}s"
    # new inputs go to the first corpus directory; the checked-in seeds (and
    # past crashers) are only read
    rc=0
    (cd "$FUZZ" && "$PY" "$ROOT/tests/fuzz/fuzz_$name.py" -max_total_time="$SECONDS_EACH" \
        -max_len="$max_len" -rss_limit_mb=4096 -timeout=60 -print_final_stats=1 \
        -artifact_prefix="$FUZZ/artifacts/$name-" \
        "$FUZZ/corpus-$name" "$ROOT/tests/fuzz/corpus/$name") >"$FUZZ/$name.log" 2>&1 || rc=$?
    grep -E '^(stat::number_of_executed_units|stat::average_exec_per_sec|Done )' "$FUZZ/$name.log" || true
    if [ "$rc" -ne 0 ]; then
        status=1
        echo "fuzz: $name FAILED (exit $rc); last lines of $FUZZ/$name.log:" >&2
        grep -v '^    #[0-9]' "$FUZZ/$name.log" | tail -40 >&2
    fi
done
rm -rf "$FUZZ/tmp"
exit "$status"
