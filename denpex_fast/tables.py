"""pandas interop for the tables denpex returns.

``pyarrow.Table.to_pandas()`` turns an integer column with nulls into
``float64``: ``rank`` 3 becomes ``3.0`` and an unknown rank ``NaN``.
:func:`to_pandas` keeps integers integral with pandas' nullable dtypes
(``Int32``, ``UInt64``, ..., unknown values are ``<NA>``) and booleans as
``boolean``::

    >>> import denpex_fast as dx
    >>> df = dx.to_pandas(dx.scan("job/", attribute=True))
    >>> df.dtypes["rank"]
    Int32Dtype()

It works for every table: the match table, ``Diagnosis.rank_fates``, an
index's ``diagnosis()`` or a query result.  To convert yourself, pass
``types_mapper=dx.pandas_types_mapper`` to ``Table.to_pandas``.
Dictionary columns (``file``, ``signature``, ``host``) become ``category``,
timestamps ``datetime64[us, UTC]``, as pyarrow does by default.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

__all__ = ["pandas_types_mapper", "to_pandas"]

_NULLABLE = {
    pa.int8(): "Int8",
    pa.int16(): "Int16",
    pa.int32(): "Int32",
    pa.int64(): "Int64",
    pa.uint8(): "UInt8",
    pa.uint16(): "UInt16",
    pa.uint32(): "UInt32",
    pa.uint64(): "UInt64",
    pa.bool_(): "boolean",
}


def _pandas() -> Any:
    try:
        import pandas
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "to_pandas needs pandas: pip install pandas", name="pandas"
        ) from None
    return pandas


def pandas_types_mapper(arrow_type: pa.DataType) -> Any:
    """``types_mapper`` for ``pyarrow.Table.to_pandas``: integers and booleans
    to pandas' nullable dtypes, every other type left to pyarrow (None)."""
    name = _NULLABLE.get(arrow_type)
    return None if name is None else _pandas().api.types.pandas_dtype(name)


def to_pandas(table: pa.Table | pa.RecordBatch, **kwargs: Any) -> Any:
    """``table.to_pandas(**kwargs)`` with :func:`pandas_types_mapper`:
    ``rank`` stays an integer (``Int32``, ``<NA>`` where unknown)."""
    _pandas()
    kwargs.setdefault("types_mapper", pandas_types_mapper)
    return table.to_pandas(**kwargs)
