"""Numbers between Arrow and numpy without pandas.

``pyarrow.Array.to_numpy`` imports pandas (0.2-0.3 s) even for a plain float column; the command
line's evaluation path never needs pandas otherwise, so it views the arrays' buffers directly."""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def numbers(array: "pa.Array | pa.ChunkedArray") -> np.ndarray:
    """The values of a numeric Arrow array (or single-chunk column) without nulls, as a read-only
    numpy view of its data buffer (zero copy)."""
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks != 1:
            array = array.combine_chunks()
        else:
            array = array.chunk(0)
    if array.null_count:
        raise ValueError("numbers(): the array has nulls")
    dtype = np.dtype(array.type.to_pandas_dtype())   # a numpy type: no pandas import
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)


def int64_array(values: np.ndarray) -> "pa.Int64Array":
    """Integers as an Arrow int64 array (e.g. for ``take``), built from their buffer
    (``pyarrow.array`` of a numpy array would import pandas)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])
