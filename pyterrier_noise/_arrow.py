"""Numbers between Arrow and numpy without pandas.

``pyarrow.Array.to_numpy`` imports pandas (slow to import) even for a plain float column; the command
line's evaluation path never needs pandas otherwise, so it views the arrays' buffers directly."""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def numbers(array: "pa.Array | pa.ChunkedArray", null: float | None = None) -> np.ndarray:
    """The values of a numeric Arrow array (or single-chunk column), as a read-only numpy view of
    its data buffer (zero copy); an array with nulls is refused unless ``null`` is given, which
    then stands in for them (in a copy: ``fill_null`` would import pandas)."""
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks != 1:
            array = array.combine_chunks()
        else:
            array = array.chunk(0)
    dtype = np.dtype(array.type.to_pandas_dtype())   # a numpy type: no pandas import
    values = np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)
    if array.null_count:
        if null is None:
            raise ValueError("numbers(): the array has nulls")
        bits = np.unpackbits(np.frombuffer(array.buffers()[0], dtype=np.uint8), bitorder="little")
        values = np.where(bits[array.offset:array.offset + len(array)].astype(bool), values, null).astype(dtype)
    return values


def int64_array(values: np.ndarray) -> "pa.Int64Array":
    """Integers as an Arrow int64 array (e.g. for ``take``), built from their buffer
    (``pyarrow.array`` of a numpy array would import pandas)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def joined_strings(strings: "pa.StringArray | pa.ChunkedArray") -> np.ndarray:
    """The UTF-8 bytes of a string array's values with a NUL byte between two (``uint8``: what
    ``"\\x00".join(values).encode()`` gives), made from its offsets and values buffers, without a
    Python string a value; the array has at least one value and no nulls."""
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks()
    n = len(strings)
    off_t = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    offsets = np.frombuffer(strings.buffers()[1], dtype=off_t, count=n + 1,
                            offset=strings.offset * np.dtype(off_t).itemsize).astype(np.int64)
    data = np.frombuffer(strings.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
    out = np.zeros(len(data) + n - 1, dtype=np.uint8)   # the values, a NUL between two
    text = np.ones(len(out), dtype=bool)
    text[offsets[1:-1] - offsets[0] + np.arange(n - 1)] = False   # where value i >= 1 starts, less one
    out[text] = data
    return out


def sorted_strings(strings: "pa.StringArray | pa.ChunkedArray", index: np.ndarray) -> tuple["pa.Array", np.ndarray]:
    """The values of a string array at ``index`` (distinct values, no nulls), sorted, and their order
    (positions in ``index``): Arrow sorts strings by their UTF-8 bytes, which is the order of their
    code points, Python's order of ``str``; no Python string a value."""
    import pyarrow.compute as pc
    picked = strings.take(int64_array(index))
    if isinstance(picked, pa.ChunkedArray):
        picked = picked.combine_chunks()
    order = numbers(pc.array_sort_indices(picked)).astype(np.int64)
    return picked.take(int64_array(order)), order


#: called after Arrow's pool gives its memory back: the command line's process tuning adds glibc's
#: ``malloc_trim`` (``cli/_process.py``), which returns the free pages inside the heap that its
#: raised trim threshold would otherwise keep
RELEASE_HOOKS: list = []


def release_unused() -> None:
    """Give the memory Arrow's pool (and, in a command, the C library's malloc) keeps for reuse
    back to the system: after a large reading (run files parsed in threads) it holds several times
    what is still in use, and that would stay in the process's peak for the rest of a command."""
    pa.default_memory_pool().release_unused()
    for hook in RELEASE_HOOKS:
        hook()
