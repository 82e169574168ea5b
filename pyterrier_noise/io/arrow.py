"""The fast readers of TREC run and qrels files: ISA-L's gzip decoder and Arrow's CSV parser (both
release the GIL, so files are read in threads; no pandas) for plain single-delimiter files; anything
irregular is left to :mod:`.trec`'s validating reader, which names the line."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from .._arrow import int64_array, numbers
from .files import TREC_RUN_FIELDS, PathLike, _rank_offset, _rank_problem
from .reader import RunFileReader, _file_bytes

__all__ = ["read_arrow_run", "parse_arrow_run", "read_arrow_qrels", "run_file_columns", "RunFileReader"]

#: the largest block Arrow's CSV reader takes (a file larger than this is parsed in several)
_MAX_BLOCK = (1 << 31) - 1


def read_arrow_run(path: PathLike) -> pa.Table | None:
    """One TREC run file (plain or gzip) as an Arrow table of qid, docno, rank, score, or None when
    it is not a plain single-delimiter run with finite numbers (the caller then uses the validating
    pandas reader, which names the offending line).  Decompression (by the gzip magic bytes,
    whatever the file's name) and parsing release the GIL, so several files are read at once in
    threads.  The qid and docno columns are plain strings (:func:`run_file_columns` encodes them
    for all files at once)."""
    return parse_arrow_run(_file_bytes(path))


def parse_arrow_run(data: bytes | None) -> pa.Table | None:
    """:func:`read_arrow_run` of a run file's bytes, already inflated (None: not read)."""
    if data is None:
        return None
    delim = _delimiter(data, len(TREC_RUN_FIELDS))
    if delim is None:
        return None
    # one block for the whole file (one chunk per column, nothing to merge afterwards), and the
    # strings kept plain: encoded once for all files together (_columns_of_tables), which with
    # one block per file costs about half the CPU time of encoding them while parsing
    # (benchmarks/w1_process.py)
    convert = pcsv.ConvertOptions(include_columns=["qid", "docno", "rank", "score"],
                                  column_types={"qid": pa.string(), "docno": pa.string(),
                                                "rank": pa.float64(), "score": pa.float64()})
    t = _parse(data, delim, TREC_RUN_FIELDS, convert)
    if t is None:
        return None
    rank = numbers(t.column("rank"))
    if _rank_problem(rank).any() or not np.isfinite(numbers(t.column("score"))).all():
        return None   # the pandas reader names the line
    return t


def _delimiter(data: bytes, n_fields: int) -> str | None:
    """The one delimiter (tab or space) of a TREC file's lines, judged by its first line, or None
    for a file the validating reader must read (a NUL byte, mixed or repeated whitespace)."""
    if b"\0" in data:
        return None   # a NUL byte: the pandas reader names its line
    first = data[: data.find(b"\n")] if b"\n" in data else data
    if first.count(b"\t") == n_fields - 1 and b" " not in first.strip():
        # spaces elsewhere separate fields too (trec_eval splits at any whitespace): the validating
        # reader reads the file so and says so
        return "\t" if b" " not in data else None
    if first.count(b" ") == n_fields - 1 and b"\t" not in first and all(first.strip().split(b" ")):
        return " " if b"\t" not in data else None
    return None


def _parse(data: bytes, delim: str, names: list[str], convert: "pcsv.ConvertOptions") -> pa.Table | None:
    """Arrow's CSV parse of a whole file in one block (one chunk per column: nothing to merge
    afterwards), or None when a line does not fit (the validating reader names it)."""
    read = pcsv.ReadOptions(column_names=names, use_threads=False,
                            block_size=min(max(len(data) + 1, 1 << 20), _MAX_BLOCK))
    try:
        t = pcsv.read_csv(pa.py_buffer(data), read_options=read,
                          parse_options=pcsv.ParseOptions(delimiter=delim, quote_char=False), convert_options=convert)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if t.num_rows == 0 or any(t.column(c).null_count for c in t.column_names):
        return None
    return t.combine_chunks()   # one chunk already, unless the file is larger than one block


def read_arrow_qrels(path: PathLike) -> tuple[pa.StringArray, pa.StringArray, np.ndarray] | None:
    """A TREC qrels file (``qid iter docno label``, plain or gzip) as ``(qids, docnos, labels)``
    (two Arrow string arrays and a float64 array, in file order; for
    :meth:`~pyterrier_noise.engine.JudgmentTable.from_arrays`), read without pandas, or None
    whenever the validating reader (:func:`~pyterrier_noise.io.read_qrels`) has anything to say:
    an irregular line, a label that is not a whole number, a negative label, or a (qid, docno)
    judged twice.  What it returns is then exactly what ``read_qrels`` gives (labels as floats)."""
    data = _file_bytes(path)
    if data is None:
        return None
    delim = _delimiter(data, 4)
    if delim is None and b"\t" in data and b" " in data:
        return None   # tabs and spaces: the validating reader says how it splits the fields
    if delim is None and b"\0" not in data:
        # fields separated by runs of whitespace (TREC-COVID's qrels have two spaces before the
        # docno): one space each, as the validating reader's whitespace split sees them
        import re
        data = re.sub(rb"[ \t]+", b" ", data)
        delim = _delimiter(data, 4)
    if delim is None:
        return None
    convert = pcsv.ConvertOptions(include_columns=["qid", "docno", "label"],
                                  column_types={"qid": pa.string(), "docno": pa.string(), "label": pa.float64()})
    t = _parse(data, delim, ["qid", "iter", "docno", "label"], convert)
    if t is None:
        return None
    label = numbers(t.column("label"))
    if not np.isfinite(label).all() or (label < 0).any() or (label >= 2.0 ** 53).any() or \
            (label != np.floor(label)).any():
        return None
    qcodes, quniq = _codes([t], "qid")
    dcodes, duniq = _codes([t], "docno")
    key = np.sort(qcodes.astype(np.int64) * len(duniq) + dcodes)
    if (key[1:] == key[:-1]).any():
        return None   # judged twice: read_qrels keeps the last and says so
    return t.column("qid").chunk(0), t.column("docno").chunk(0), label.astype(np.float64)


def run_file_columns(paths: Sequence[PathLike], n_threads: int = 1, arrow_docnos: bool = False) -> tuple | None:
    """The runs of TREC run files as flat columns, read with Arrow's CSV parser, whose strings never
    become Python objects (dictionary-encoded instead), ``n_threads`` files at a time.

    Returns ``(run index, qid codes, qids, docno codes, docnos, score, rank)``: per line the index
    of its file in ``paths``, codes into the distinct qid and docno strings (object arrays; the
    docnos as a ``pyarrow.StringArray`` with ``arrow_docnos=True``), the score and the 0-based
    rank; or None where a file is not a plain single-delimiter TREC run with finite numbers (then
    read it with :func:`~pyterrier_noise.io.read_trec_run`, which names the offending line)."""
    return RunFileReader(paths, n_threads).columns(arrow_docnos)


def _columns_of_tables(paths: Sequence[PathLike], tables: list, arrow_docnos: bool) -> tuple | None:
    """:func:`run_file_columns` of the tables :func:`read_arrow_run` read from ``paths``."""
    if any(t is None for t in tables):
        return None
    # (read_arrow_run checked every file's numbers: finite scores, whole ranks)
    lengths = np.array([t.num_rows for t in tables], dtype=np.int64)
    score = np.concatenate([numbers(t.column("score")) for t in tables])
    run_idx = np.repeat(np.arange(len(tables), dtype=np.int64), lengths)
    (qcodes, quniq), (dcodes, duniq) = _all_codes(tables, ("qid", "docno"))
    quniq = np.asarray(quniq.to_pylist(), dtype=object)
    if not arrow_docnos:
        duniq = np.asarray(duniq.to_pylist(), dtype=object)
    # 1-based TREC ranks are shifted; a file whose ranks start at 0 (pt.io.write_results) is read
    # as 0-based, announced as read_trec_run announces it.  One check and one conversion per
    # file, straight into the output (no full-size temporaries).
    rank = np.empty(len(run_idx), dtype=np.int64)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        file_rank = numbers(tables[k].column("rank"))
        rank[a:b] = file_rank   # whole numbers below 2**53: exact in int64, as astype gives them
        offset = _rank_offset(paths[k], file_rank, quniq[qcodes[a:b]]) if (file_rank == 0).any() else 1
        if offset:
            rank[a:b] -= offset
    return run_idx, qcodes, quniq, dcodes, duniq, score, rank


def _codes(tables: list, name: str) -> tuple[np.ndarray, pa.Array]:
    """(code of every row, distinct strings in order of first appearance) of a string column over
    all the tables: one hash pass over every file's strings together (Arrow's
    ``dictionary_encode``), whose strings never become Python objects."""
    import pyarrow.compute as pc   # here: 0.03 s to import, after the files have started reading
    encoded = pc.dictionary_encode(pa.chunked_array([t.column(name).chunk(0) for t in tables]))
    chunks = encoded.chunks
    codes = np.concatenate([numbers(c.indices) for c in chunks])   # a writable copy, even of one chunk
    return codes, chunks[-1].dictionary   # the chunks' codes count into the last chunk's dictionary


#: rows of a string column below which it is encoded in one piece (the threads would not pay)
_SPLIT_ROWS = 1_000_000


def _all_codes(tables: list, names: Sequence[str]) -> list[tuple[np.ndarray, pa.Array]]:
    """:func:`_codes` of each named column, the same codes and dictionaries, computed on every core:
    Arrow's hash pass releases the GIL but runs on one thread, so each long column is encoded in two
    halves of the files at once, and the halves' dictionaries are joined in order of first
    appearance (the second half's codes renumbered through one lookup of its dictionary)."""
    import os
    rows = sum(t.num_rows for t in tables)
    if len(tables) < 2 or rows < _SPLIT_ROWS or (os.cpu_count() or 1) < 2:
        return [_codes(tables, name) for name in names]
    from concurrent.futures import ThreadPoolExecutor
    half = _half(tables)
    with ThreadPoolExecutor(2) as pool:
        jobs = [(pool.submit(_codes, tables[:half], name), pool.submit(_codes, tables[half:], name))
                for name in names]
        return [_joined(a.result(), b.result()) for a, b in jobs]


def _half(tables: list) -> int:
    """The number of tables in the first half, by rows."""
    cum = np.cumsum([t.num_rows for t in tables])
    return int(min(max(np.searchsorted(cum, cum[-1] / 2), 1), len(tables) - 1))


def _joined(first: tuple[np.ndarray, pa.Array], second: tuple[np.ndarray, pa.Array]) -> tuple[np.ndarray, pa.Array]:
    """The codes and dictionary of two consecutive parts encoded apart, as if encoded together:
    the second part's strings the first lacks come after the first's, in their order."""
    import pyarrow.compute as pc
    codes1, dict1 = first
    codes2, dict2 = second
    where = numbers(pc.index_in(dict2, value_set=dict1), null=-1).astype(np.int64)   # -1: not in the first
    new = np.flatnonzero(where < 0)
    where[new] = len(dict1) + np.arange(len(new))
    dictionary = pa.concat_arrays([dict1, dict2.take(int64_array(new))]) if len(new) else dict1
    return np.concatenate([codes1, where.astype(codes1.dtype)[codes2]]), dictionary
