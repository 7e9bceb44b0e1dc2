# Sourced by tests/sanitize/run.sh and tests/fuzz/run.sh (from the repo root).
#
# ensure_clang               install clang and its sanitizer runtime if missing
#                            (Debian packages); sets ASAN_RT
# build_instrumented DIR     copy the package to DIR/denpex_fast and build the
#                            extension there with ASan+UBSan (extra compiler
#                            flags from $DENPEX_CFLAGS), leaving every other
#                            build alone
# Both expect $PY (the venv's python).

ensure_clang() {
    if ! command -v clang >/dev/null; then
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang
    fi
    ASAN_RT=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
    if [ ! -f "$ASAN_RT" ]; then
        local major
        major=$(clang -dumpversion | cut -d. -f1)
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "libclang-rt-${major}-dev"
        ASAN_RT=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
    fi
    # cffi compiles through setuptools (Python >= 3.12 venvs come without it)
    "$PY" -c 'import setuptools' 2>/dev/null || "$PY" -m pip install -q setuptools
}

build_instrumented() {
    local dest=$1
    rm -rf "$dest"
    mkdir -p "$dest"
    cp -r denpex_fast "$dest/"
    rm -f "$dest"/denpex_fast/_denpex_scan*.so
    # the wheel ships signatures/ as denpex_fast.builtin_signatures (pyproject.toml)
    cp -r signatures "$dest/denpex_fast/builtin_signatures"
    DENPEX_SANITIZE=1 CC=clang LDSHARED="clang -shared" \
        "$PY" csrc/build_ffi.py "$dest/denpex_fast"
}
