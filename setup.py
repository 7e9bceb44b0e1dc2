"""Build glue only: the cffi extension. Metadata lives in pyproject.toml."""

from setuptools import setup

setup(
    cffi_modules=["csrc/build_ffi.py:ffibuilder"],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
