"""cffi build script (out-of-line API mode) for ``denpex_fast._denpex_scan``.

The C API is declared once, in ``csrc/denpex_scan.h``; this script hands the
region between its CDEF markers to ``ffibuilder.cdef`` and compiles
``csrc/denpex_scan.c`` against libhs found through pkg-config.

Build switches (environment variables):

``DENPEX_SANITIZE=1``
    compile with AddressSanitizer + UndefinedBehaviorSanitizer (``-O1 -g``);
    run Python with the sanitizer runtime preloaded (see README).
``DENPEX_CFLAGS``
    extra compiler flags appended to the defaults.
"""

from __future__ import annotations

import os
import pathlib
import sys

from cffi import FFI, PkgConfigError

HERE = pathlib.Path(__file__).resolve().parent
HEADER = HERE / "denpex_scan.h"
SOURCES = [HERE / "denpex_scan.c", HERE / "denpex_template.c", HERE / "denpex_format.c"]

INSTALL_HINT = (
    "denpex_fast needs the Hyperscan/Vectorscan library (libhs) and pkg-config to build.\n"
    "  Debian/Ubuntu: sudo apt-get install -y pkg-config libhyperscan-dev\n"
    "                 (libvectorscan-dev on CPUs other than x86_64)\n"
    "  Fedora:        sudo dnf install -y pkgconf hyperscan-devel\n"
    "  macOS:         brew install pkg-config vectorscan\n"
    "If libhs is installed in a non-standard prefix, set PKG_CONFIG_PATH to its lib/pkgconfig."
)


def _cdef_text() -> str:
    text = HEADER.read_text()
    start = text.index("/* CDEF BEGIN */") + len("/* CDEF BEGIN */")
    end = text.index("/* CDEF END */")
    # libhs's compile flags come from hs.h itself (resolved when the module is built)
    flags = "".join(f"#define HS_FLAG_{name} ...\n" for name in HS_FLAGS)
    return text[start:end] + flags


#: the Hyperscan compile flags the scanner uses, read from hs_compile.h
HS_FLAGS = ("CASELESS", "DOTALL", "MULTILINE", "SINGLEMATCH", "ALLOWEMPTY", "UTF8")


def _compile_args() -> list[str]:
    args = ["-std=c11", "-Wall", "-Wextra", "-Wno-unused-parameter"]
    if os.environ.get("DENPEX_SANITIZE") == "1":
        args += [
            "-O1",
            "-g",
            "-DDX_USE_MALLOC",
            "-fno-omit-frame-pointer",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=undefined",
        ]
    else:
        args += ["-O3"]
    args += os.environ.get("DENPEX_CFLAGS", "").split()
    return args


def _link_args() -> list[str]:
    if os.environ.get("DENPEX_SANITIZE") == "1":
        return ["-fsanitize=address,undefined"]
    return []


def make_builder(absolute_paths: bool = False) -> FFI:
    """Return the configured FFI builder (relative source paths for setuptools)."""
    builder = FFI()
    builder.cdef(_cdef_text())
    sources = [s if absolute_paths else s.relative_to(HERE.parent) for s in SOURCES]
    try:
        builder.set_source_pkgconfig(
            "denpex_fast._denpex_scan",
            ["libhs"],
            '#include <hs.h>\n#include "denpex_scan.h"\n',
            sources=[str(s) for s in sources],
            include_dirs=[str(HERE)],
            extra_compile_args=_compile_args(),
            extra_link_args=_link_args(),
        )
    except PkgConfigError as exc:
        sys.stderr.write(f"\nerror: libhs not found by pkg-config ({exc}).\n{INSTALL_HINT}\n\n")
        raise SystemExit(1) from None
    return builder


ffibuilder = make_builder()

if __name__ == "__main__":
    # Development builds: `python csrc/build_ffi.py` puts the module into
    # denpex_fast/ so the source tree imports it directly.  Sanitizer and fuzz
    # builds pass a directory of their own (`python csrc/build_ffi.py DIR`) so
    # the normal build is left alone.
    if len(sys.argv) > 1:
        dest = pathlib.Path(sys.argv[1]).resolve()
        out = dest / "build-cffi"
    else:
        dest = HERE.parent / "denpex_fast"
        out = HERE.parent / "build" / "cffi"
    so = make_builder(absolute_paths=True).compile(tmpdir=str(out), verbose=False)
    target = dest / pathlib.Path(so).name
    pathlib.Path(so).replace(target)
    print("built", target)
