#!/usr/bin/env bash
# The tests that drive the C code, under AddressSanitizer + UndefinedBehaviorSanitizer.
#
# Needs the venv made by .ci/run ($DENPEX_CI_VENV, default .ci-venv) for the
# test dependencies.  The instrumented extension is built by clang into a
# private copy of the package ($DENPEX_SANITIZE_DIR/pkg/denpex_fast, default
# build/sanitize), which goes first on PYTHONPATH: the installed build and the
# source tree's in-place build are never touched.  Exits non-zero on a test
# failure or on any sanitizer report (including one from a child process).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
VENV="${DENPEX_CI_VENV:-$ROOT/.ci-venv}"
SAN="${DENPEX_SANITIZE_DIR:-$ROOT/build/sanitize}"
PY="$VENV/bin/python"
if [ ! -x "$PY" ]; then
    echo "sanitize: no venv at $VENV; run .ci/run first or set DENPEX_CI_VENV" >&2
    exit 2
fi
# shellcheck source=tests/sanitize/toolchain.sh
. tests/sanitize/toolchain.sh
ensure_clang
build_instrumented "$SAN/pkg"
rm -rf "$SAN/reports" "$SAN/canary"
mkdir -p "$SAN/reports" "$SAN/canary"

export PYTHONPATH="$SAN/pkg"
export LD_PRELOAD="$ASAN_RT"
# detect_leaks=0: CPython itself "leaks" at exit.  log_path: reports land in
# files that are checked below, so a report from a subprocess fails the run too
# (the combined runtime writes ASan and UBSan reports to one file per process).
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$SAN/reports/report"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$SAN/reports/report"
# ASan then sees Python's own allocations (bytes objects handed to C).
export PYTHONMALLOC=malloc

# Run from a directory without denpex_fast/ in it: `python -c` children put
# their working directory first on sys.path.
cd "$SAN"
"$PY" - <<'EOF'
import os, denpex_fast._denpex_scan as m
want = os.path.join(os.environ["PYTHONPATH"], "denpex_fast")
assert os.path.dirname(m.__file__) == want, f"imported {m.__file__}, not the sanitized build"
assert "libclang_rt.asan" in open("/proc/self/maps").read(), "ASan runtime not loaded"
print("sanitize: using", m.__file__)
EOF
# Canary: a deliberate over-read through the C API must be reported, or the
# build is not instrumented and a clean run below would mean nothing.
if ASAN_OPTIONS="detect_leaks=0:log_path=$SAN/canary/report" \
    UBSAN_OPTIONS="log_path=$SAN/canary/report" "$PY" -c '
from denpex_fast._native import ffi, lib
lib.dx_count_newlines(ffi.new("char[]", 40), 100)' 2>/dev/null \
    || ! grep -qs heap-buffer-overflow "$SAN"/canary/report.*; then
    echo "sanitize: the canary over-read was not reported; the build is not instrumented" >&2
    exit 1
fi

# Left out: tests/test_scanner_memory.py measures RSS, which ASan's shadow
# memory and free() quarantine change by design.
TESTS=(test_scanner_cases.py test_scanner_property.py test_scanner_hostile.py
       test_database_cache.py test_cli.py test_baseline.py test_fuzz_regressions.py
       test_scan_output.py)
start=$SECONDS
status=0
"$VENV/bin/pytest" -c "$ROOT/pyproject.toml" --rootdir "$ROOT" -p no:cacheprovider -q \
    "${TESTS[@]/#/$ROOT/tests/}" || status=$?
echo "sanitize: pytest exit $status after $((SECONDS - start)) s"

if compgen -G "$SAN/reports/*" >/dev/null; then
    echo "sanitize: sanitizer reports:" >&2
    for f in "$SAN"/reports/*; do
        echo "==== $f" >&2
        cat "$f" >&2
    done
    [ "$status" -ne 0 ] || status=1
fi
exit "$status"
