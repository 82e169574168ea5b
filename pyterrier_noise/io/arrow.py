"""The fast reader of TREC run files: Arrow's CSV parser (multi-threadable, strings dictionary-encoded)
for plain single-delimiter runs; anything irregular is left to :mod:`.trec`'s validating reader."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from .files import TREC_RUN_FIELDS, PathLike, _rank_offset, _rank_problem

__all__ = ["read_arrow_run", "run_file_columns", "RunFileReader"]


def read_arrow_run(path: PathLike) -> pa.Table | None:
    """One TREC run file (plain or gzip) as an Arrow table of qid, docno, rank, score, or None when
    it is not a plain single-delimiter run with finite numbers (the caller then uses the validating
    pandas reader, which names the offending line).  Decompression (Arrow's, by the gzip magic
    bytes, whatever the file's name) and parsing release the GIL, so several files are read at
    once in threads."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None   # the pandas reader says what is wrong with the path
    if data[:2] == b"\x1f\x8b":
        try:
            with pa.input_stream(pa.py_buffer(data), compression="gzip") as stream:
                data = stream.read()
        except (OSError, EOFError, pa.ArrowException):
            return None
    if b"\0" in data:
        return None   # a NUL byte: the pandas reader names its line
    first = data[: data.find(b"\n")] if b"\n" in data else data
    if first.count(b"\t") == 5 and b" " not in first.strip():
        delim = "\t"
    elif first.count(b" ") == 5 and b"\t" not in first and all(first.strip().split(b" ")):
        delim = " "
    else:
        return None
    words = pa.dictionary(pa.int32(), pa.string())   # encoded while parsing, in this thread
    convert = pcsv.ConvertOptions(include_columns=["qid", "docno", "rank", "score"],
                                  column_types={"qid": words, "docno": words,
                                                "rank": pa.float64(), "score": pa.float64()})
    try:
        t = pcsv.read_csv(pa.py_buffer(data), read_options=pcsv.ReadOptions(column_names=TREC_RUN_FIELDS, use_threads=False),
                          parse_options=pcsv.ParseOptions(delimiter=delim, quote_char=False), convert_options=convert)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if t.num_rows == 0 or any(t.column(c).null_count for c in ("qid", "docno", "rank", "score")):
        return None
    rank = t.column("rank").to_numpy()
    if _rank_problem(rank).any() or not np.isfinite(t.column("score").to_numpy()).all():
        return None   # the pandas reader names the line
    # one chunk with one dictionary per column, made here (in the reading thread): the parser's
    # blocks each have their own dictionary, and merging those of every file afterwards, in the
    # caller's thread, costs several times more (benchmarks/w1_process.py)
    return t.unify_dictionaries().combine_chunks()


def run_file_columns(paths: Sequence[PathLike], n_threads: int = 1, arrow_docnos: bool = False) -> tuple | None:
    """The runs of TREC run files as flat columns, read with Arrow's CSV parser, whose strings never
    become Python objects (dictionary-encoded instead), ``n_threads`` files at a time.

    Returns ``(run index, qid codes, qids, docno codes, docnos, score, rank)``: per line the index
    of its file in ``paths``, codes into the distinct qid and docno strings (object arrays; the
    docnos as a ``pyarrow.StringArray`` with ``arrow_docnos=True``), the score and the 0-based
    rank; or None where a file is not a plain single-delimiter TREC run with finite numbers (then
    read it with :func:`~pyterrier_noise.io.read_trec_run`, which names the offending line)."""
    return RunFileReader(paths, n_threads).columns(arrow_docnos)


class RunFileReader:
    """Run files being read: ``RunFileReader(paths, n_threads)`` starts reading them with
    :func:`read_arrow_run` at once, ``n_threads`` files at a time in threads (decompression and
    Arrow's parser release the GIL), so that a caller can do other work (imports, the qrels)
    meanwhile; :meth:`columns` waits for them and returns what :func:`run_file_columns` returns.

    :meth:`~pyterrier_noise.engine.AlignedRuns.build` and :func:`~pyterrier_noise.measures.evaluate`
    take one in place of the paths (the files' run names are their names without ``.gz``).  An
    alignment takes the columns over and frees them as it goes, unless ``keep_columns`` is set
    (``evaluate`` sets it while other alignments of the same runs follow); a reader used again
    afterwards reads its files again.

    Example::

        from pathlib import Path
        from pyterrier_noise.io import RunFileReader, list_run_files
        reading = RunFileReader(list_run_files(Path("../shared/data/trec-covid-round1/runs"))[:2], 2)
        run_idx, qcodes, qids, dcodes, docnos, score, rank = reading.columns()
    """

    def __init__(self, paths: Sequence[PathLike], n_threads: int = 1):
        self.paths = [Path(p) for p in paths]
        self.keep_columns = False
        self._cache: dict = {}
        self._pool = None
        if n_threads > 1 and len(self.paths) > 1:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(min(n_threads, len(self.paths)))
            self._pending = [self._pool.submit(read_arrow_run, p) for p in self.paths]
        else:
            self._pending = None

    def _tables(self) -> list:
        if self._pending is None:
            return [read_arrow_run(p) for p in self.paths]
        try:
            return [f.result() for f in self._pending]
        finally:
            self.close()
            self._pending = None   # the futures would hold the tables

    def close(self) -> None:
        """Stop reading (files not yet started are not read) and free the threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def columns(self, arrow_docnos: bool = False, keep: bool = True) -> tuple | None:
        """The columns of :func:`run_file_columns` (computed once; later calls return them again,
        the docnos converted to the form asked for, unless ``keep=False`` handed them over).  The
        parsed tables are freed once their columns are made."""
        if not self._cache:
            self._cache[arrow_docnos] = _columns_of_tables(self.paths, self._tables(), arrow_docnos)
        if arrow_docnos not in self._cache:
            cols = self._cache[not arrow_docnos]
            if cols is not None:
                duniq = pa.array(cols[4], type=pa.string()) if arrow_docnos else \
                    np.asarray(cols[4].to_pylist(), dtype=object)
                cols = (*cols[:4], duniq, *cols[5:])
            self._cache[arrow_docnos] = cols
        cols = self._cache[arrow_docnos]
        if not keep:
            self._cache.clear()
        return cols

    def forget(self) -> None:
        """Drop the tables and columns read (their memory), once no more alignments need them."""
        self.close()
        self._cache.clear()
        self._pending = None


def _columns_of_tables(paths: Sequence[PathLike], tables: list, arrow_docnos: bool) -> tuple | None:
    """:func:`run_file_columns` of the tables :func:`read_arrow_run` read from ``paths``."""
    if any(t is None for t in tables):
        return None
    # (read_arrow_run checked every file's numbers: finite scores, whole ranks)
    lengths = np.array([t.num_rows for t in tables], dtype=np.int64)
    tb = pa.concat_tables(tables)
    score = tb.column("score").to_numpy()
    run_idx = np.repeat(np.arange(len(tables), dtype=np.int64), lengths)
    qcodes, quniq = _unified_codes(tb.column("qid"))
    quniq = np.asarray(quniq.to_pylist(), dtype=object)
    dcodes, duniq = _unified_codes(tb.column("docno"))
    if not arrow_docnos:
        duniq = np.asarray(duniq.to_pylist(), dtype=object)
    # 1-based TREC ranks are shifted; a file whose ranks start at 0 (pt.io.write_results) is read
    # as 0-based, announced as read_trec_run announces it.  One check and one conversion per
    # file, straight into the output (no full-size temporaries).
    rank = np.empty(len(run_idx), dtype=np.int64)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        file_rank = tables[k].column("rank").to_numpy()
        rank[a:b] = file_rank   # whole numbers below 2**53: exact in int64, as astype gives them
        offset = _rank_offset(paths[k], file_rank, quniq[qcodes[a:b]]) if (file_rank == 0).any() else 1
        if offset:
            rank[a:b] -= offset
    return run_idx, qcodes, quniq, dcodes, duniq, score, rank


def _unified_codes(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """(code of every row, distinct strings) of a dictionary-encoded Arrow column whose chunks
    (one or more per file) each have their own dictionary.  The chunks' dictionaries are encoded
    together in one hash pass (about twice as fast as ``unify_dictionaries`` over 100+ chunks);
    the distinct strings come in order of first appearance, as ``unify_dictionaries`` gives them."""
    chunks = column.chunks
    if len(chunks) == 1:
        return chunks[0].indices.to_numpy(zero_copy_only=False), chunks[0].dictionary
    import pyarrow.compute as pc   # here: 0.03 s to import, after the files have started reading
    encoded = pc.dictionary_encode(pa.concat_arrays([c.dictionary for c in chunks]))
    new_code = encoded.indices.to_numpy(zero_copy_only=False)
    codes = np.empty(len(column), dtype=new_code.dtype)
    start = row = 0
    for c in chunks:   # one gather per chunk (one per file), into the output, not per line
        np.take(new_code[start:start + len(c.dictionary)], c.indices.to_numpy(zero_copy_only=False),
                out=codes[row:row + len(c)])
        start += len(c.dictionary)
        row += len(c)
    return codes, encoded.dictionary
