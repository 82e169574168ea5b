"""The reader of TREC run and qrels files: a file's bytes (refused early when not text, inflated by
ISA-L's gzip decoder) and, for plain single-delimiter files, Arrow's CSV parse of them into columns
(no pandas); anything irregular is left to :mod:`.trec`'s validating reader, which names the line.

:class:`RunFileReader` reads run files in threads from the moment it is made (decompression and
Arrow's parser release the GIL); :func:`run_file_columns` gives the columns of run files,
:func:`read_arrow_run` one file's table and :func:`read_arrow_qrels` a qrels file's arrays.

Only the standard library at import (numpy and pyarrow when a file is parsed, ``isal`` when one is
inflated): a command makes its reader before numpy and pyarrow are imported, so that the files are
inflated while they are.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from .._validation import InputError, announce
from .files import TREC_RUN_FIELDS, PathLike

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

__all__ = ["read_text_file", "file_bytes", "read_arrow_run", "parse_arrow_run", "read_arrow_qrels",
           "run_file_columns", "unified_docnos", "RunFileReader"]

#: how much of a file is looked at before it is read whole: a text file of lines has a line break
#: and no NUL byte in its first MiB
HEAD_BYTES = 1 << 20
#: of a gzip file, the first 16 KiB inflated are looked at (a small part of a run file, so that
#: looking costs little next to inflating it whole)
GZIP_HEAD_BYTES = 1 << 14

#: ranks at or beyond this are not exact integers in float64 (the parser reads them as floats)
_RANK_LIMIT = 2.0 ** 53

#: the block Arrow's CSV reader parses at a time: its buffers for one block of a 240 MB run file
#: (MS MARCO dev, depth 1,000) in place of the whole file's, 350 MiB less at the peak of reading
#: and less CPU time (docs/engine.md, "Memory")
_BLOCK = 1 << 24

#: rows of a string column below which it is encoded in one piece (the threads would not pay)
_SPLIT_ROWS = 1_000_000

#: lines a piece of the docno column encoded with a dictionary of its own holds (about: pieces end
#: where a ranking does); a hash table of this size stays in the processor's cache
_LOCAL_ROWS = 1 << 14


# --------------------------------------------------------------------------------------------
# a file's bytes

def _head_problem(head: bytes, full: bool, limit: int = HEAD_BYTES) -> str | None:
    """Why the first bytes of a file (inflated when gzip) are not those of a text file of lines."""
    nul = head.find(b"\0")
    if nul >= 0:
        line = head.count(b"\n", 0, nul) + 1
        col = nul - head.rfind(b"\n", 0, nul)
        return (f"line {line}: a NUL byte at character {col}: a binary file, not a text file of lines "
                "(TREC files are text; a field cannot hold NUL)")
    if full and b"\n" not in head and b"\r" not in head:
        size = f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit >> 10} KiB (inflated)"
        return f"no line break in its first {size}: not a text file of lines"
    return None


def read_text_file(path: PathLike) -> bytes:
    """The bytes of a text input file (a run, qrels or table; gzip left compressed), refused with an
    :class:`InputError` before it is read whole when it is not a regular file (a device such as
    ``/dev/zero``, a FIFO), or when its first MiB (for gzip, its first 16 KiB inflated) holds a NUL
    byte or no line break: a mistaken argument never fills the memory."""
    import stat
    import zlib
    path = Path(path)
    try:
        mode = os.stat(path).st_mode   # before opening: opening a FIFO would wait for a writer
        if stat.S_ISDIR(mode):
            raise IsADirectoryError
        if not stat.S_ISREG(mode):
            kind = "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
                "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"
            raise InputError(f"{path}: is {kind}, not a file to read (expected a text file)")
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
            text, full, limit = head, len(head) == HEAD_BYTES, HEAD_BYTES
            if head[:2] == b"\x1f\x8b":
                limit = GZIP_HEAD_BYTES
                try:
                    text = zlib.decompressobj(31).decompress(head, limit)
                    full = len(text) == limit
                except zlib.error:
                    text = b""   # the reader says what is wrong with the gzip data
            problem = _head_problem(text, full, limit)
            if problem:
                raise InputError(f"{path} {problem}" if problem.startswith("line") else f"{path}: {problem}")
            if len(head) < HEAD_BYTES:
                return head
            f.seek(0)
            return f.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def file_bytes(path: PathLike) -> bytes:
    """A TREC file's bytes (:func:`read_text_file`), inflated when they start with gzip's magic bytes
    (whatever the file's name; every member of a multi-member file, as ``gzip`` reads them); an
    :class:`InputError` when the file cannot be read or inflated.

    Intel's ISA-L (the ``isal`` package, as in xopen and cutadapt) inflates faster than zlib and
    releases the GIL like it, so files are inflated in threads.  Without ``isal``, the standard
    library's ``gzip`` inflates."""
    data = read_text_file(path)   # a device or a binary file: refused before it is read whole
    if data[:2] != b"\x1f\x8b":
        return data
    why = _gunzip_problem(data)
    if isinstance(why, str):
        raise InputError(f"{path}: looks like gzip but cannot be decompressed ({why})")
    return why


def _gunzip_problem(data: bytes) -> bytes | str:
    """The inflated bytes of gzip data, or why they cannot be inflated."""
    try:
        from isal import isal_zlib
    except ImportError:   # pragma: no cover - isal is a dependency; a platform without its wheel
        import gzip
        import zlib
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            return str(exc)
    parts = []
    try:
        while data:
            member = isal_zlib.decompressobj(31)   # 31: a gzip header and trailer
            parts.append(member.decompress(data))
            if not member.eof:
                return "the data ends before the end of the gzip stream"
            data = member.unused_data.lstrip(b"\0")   # the next member (zero padding skipped, as gzip does)
    except isal_zlib.error as exc:
        return str(exc)
    return b"".join(parts)


def _bytes_or_none(path: PathLike) -> bytes | None:
    """:func:`file_bytes`, or None where it would raise: the validating reader then says why."""
    try:
        return file_bytes(path)
    except InputError:
        return None


# --------------------------------------------------------------------------------------------
# ranks (shared with the validating reader)

def rank_problem(rank: np.ndarray) -> np.ndarray:
    """Rows whose rank is not a whole number in [0, 2**53)."""
    import numpy as np
    return (rank < 0) | (rank >= _RANK_LIMIT) | (rank != np.floor(rank))


def zero_based(rank: np.ndarray, qid) -> np.ndarray:
    """The rankings (qids, in order of first appearance) whose ranks start at 0."""
    import numpy as np
    zero = rank == 0
    if not zero.any():
        return np.zeros(0, dtype=object)
    q = np.asarray(qid)[zero]
    _, first = np.unique(q.astype(str), return_index=True)
    return q[np.sort(first)]


def announce_zero_based(files: list[tuple[PathLike, np.ndarray]]) -> None:
    """One warning for every file whose ranks start at 0 (``(path, rankings starting at 0)`` each)."""
    if not files:
        return
    path, starts = files[0]
    total = sum(len(s) for _, s in files)
    q = str(starts[0])
    where = (f"{path}: ranks start at 0 in {total} ranking(s) (e.g. qid {q!r})" if len(files) == 1 else
             f"ranks start at 0 in {len(files)} run files ({total} rankings; e.g. {path}, qid {q!r})")
    announce(f"{where}: read as 0-based ranks, as pt.io.write_results writes them (TREC files are 1-based)")


# --------------------------------------------------------------------------------------------
# Arrow's parse of a file's bytes

def read_arrow_run(path: PathLike) -> pa.Table | None:
    """One TREC run file (plain or gzip) as an Arrow table of qid, docno, rank, score, or None when
    it is not a plain single-delimiter run with finite numbers (the caller then uses the validating
    pandas reader, which names the offending line).  Decompression (by the gzip magic bytes,
    whatever the file's name) and parsing release the GIL, so several files are read at once in
    threads.  The qid and docno columns are plain strings (:func:`run_file_columns` encodes them
    for all files at once)."""
    return parse_arrow_run(_bytes_or_none(path))


def parse_arrow_run(data: bytes | None) -> pa.Table | None:
    """:func:`read_arrow_run` of a run file's bytes, already inflated (None: not read)."""
    if data is None:
        return None
    delim = _delimiter(data, len(TREC_RUN_FIELDS))
    if delim is None:
        return None
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from .._arrow import numbers
    # the strings kept plain: encoded once for all files together (_columns_of_tables), which
    # costs less than encoding them while parsing
    convert = pcsv.ConvertOptions(include_columns=["qid", "docno", "rank", "score"],
                                  column_types={"qid": pa.string(), "docno": pa.string(),
                                                "rank": pa.float64(), "score": pa.float64()})
    t = _parse(data, delim, TREC_RUN_FIELDS, convert)
    if t is None:
        return None
    rank = numbers(t.column("rank"))
    if rank_problem(rank).any() or not np.isfinite(numbers(t.column("score"))).all():
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


def _parse(data: bytes, delim: str, names: list[str], convert: pcsv.ConvertOptions) -> pa.Table | None:
    """Arrow's CSV parse of a whole file in blocks of :data:`_BLOCK` bytes (a chunk of every column
    each: the parser's own buffers are one block's, not the file's), or None when a line does not
    fit (the validating reader names it)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    read = pcsv.ReadOptions(column_names=names, use_threads=False, block_size=_BLOCK)
    try:
        t = pcsv.read_csv(pa.py_buffer(data), read_options=read,
                          parse_options=pcsv.ParseOptions(delimiter=delim, quote_char=False), convert_options=convert)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if t.num_rows == 0 or any(t.column(c).null_count for c in t.column_names):
        return None
    return t   # the columns in chunks: merging them would copy them at the peak of reading


def read_arrow_qrels(path: PathLike) -> tuple[pa.StringArray, pa.StringArray, np.ndarray] | None:
    """A TREC qrels file (``qid iter docno label``, plain or gzip) as ``(qids, docnos, labels)``
    (two Arrow string arrays and a float64 array, in file order; for
    :meth:`~pyterrier_noise.engine.JudgmentTable.from_arrays`), read without pandas, or None
    whenever the validating reader (:func:`~pyterrier_noise.io.read_qrels`) has anything to say:
    an irregular line, a label that is not a whole number, a negative label, or a (qid, docno)
    judged twice.  What it returns is then exactly what ``read_qrels`` gives (labels as floats)."""
    data = _bytes_or_none(path)
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
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from .._arrow import numbers
    convert = pcsv.ConvertOptions(include_columns=["qid", "docno", "label"],
                                  column_types={"qid": pa.string(), "docno": pa.string(), "label": pa.float64()})
    t = _parse(data, delim, ["qid", "iter", "docno", "label"], convert)
    if t is None:
        return None
    label = numbers(t.column("label"))
    if not np.isfinite(label).all() or (label < 0).any() or (label >= 2.0 ** 53).any() or \
            (label != np.floor(label)).any():
        return None
    qcodes, quniq = _codes([t], "qid", grouped=True)
    dcodes, duniq = _codes([t], "docno")
    key = qcodes.astype(np.int64) * len(duniq) + dcodes
    key_range = len(quniq) * len(duniq)
    if key_range <= max(4 * len(key), 1 << 20):   # few keys in all: counted in a dense table, not sorted
        twice = len(key) > 0 and np.bincount(key, minlength=key_range).max() > 1
    else:
        key.sort()
        twice = (key[1:] == key[:-1]).any()
    if twice:
        return None   # judged twice: read_qrels keeps the last and says so
    return t.column("qid").combine_chunks(), t.column("docno").combine_chunks(), label.astype(np.float64)


# --------------------------------------------------------------------------------------------
# the columns of many run files

def run_file_columns(paths: Sequence[PathLike], n_threads: int = 1, arrow_docnos: bool = False) -> tuple | None:
    """The runs of TREC run files as flat columns, read with Arrow's CSV parser, whose strings never
    become Python objects (dictionary-encoded instead), ``n_threads`` files at a time.

    Returns ``(run index, qid codes, qids, docno codes, docnos, score, rank)``: per line the index
    of its file in ``paths``, codes into the distinct qid and docno strings (object arrays; the
    docnos as a ``pyarrow.StringArray`` with ``arrow_docnos=True``), the score and the 0-based
    rank; or None where a file is not a plain single-delimiter TREC run with finite numbers (then
    read it with :func:`~pyterrier_noise.io.read_trec_run`, which names the offending line)."""
    return RunFileReader(paths, n_threads).columns(arrow_docnos)


def _columns_of_tables(paths: Sequence[PathLike], tables: list, arrow_docnos: bool,
                       local_docnos: bool = False) -> tuple | None:
    """:func:`run_file_columns` of the tables :func:`read_arrow_run` read from ``paths``
    (``local_docnos``: as :meth:`RunFileReader.columns` says)."""
    if any(t is None for t in tables):
        return None
    import numpy as np

    from .._arrow import numbers, release_unused
    # (read_arrow_run checked every file's numbers: finite scores, whole ranks)
    lengths = np.array([t.num_rows for t in tables], dtype=np.int64)
    score = np.concatenate([numbers(c) for t in tables for c in t.column("score").chunks])
    # run numbers and ranks as int32 where they fit (always, for TREC files): 8 bytes a line fewer
    # between reading and aligning
    run_idx = np.repeat(np.arange(len(tables), dtype=np.int32 if len(tables) < 2 ** 31 else np.int64), lengths)
    # 1-based TREC ranks are shifted; a file whose ranks start at 0 (pt.io.write_results) is read
    # as 0-based, announced as read_trec_run announces it.  One check and one conversion per
    # file, straight into the output (no full-size temporaries).  The numbers are taken before the
    # strings are encoded, and the tables' number columns freed: they are not held beside the
    # encoding's hash tables (a file with a rank 0 is judged once the qids are known)
    wide = any(t.num_rows and numbers(t.column("rank")).max() >= 2 ** 31 for t in tables)
    rank = np.empty(len(run_idx), dtype=np.int64 if wide else np.int32)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    has_zero = []
    for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        file_rank = numbers(tables[k].column("rank"))
        rank[a:b] = file_rank   # whole numbers below 2**53 (2**31 for int32): exact, as astype gives them
        if (file_rank == 0).any():
            has_zero.append(k)
        else:
            rank[a:b] -= 1
    file_rank = None
    tables[:] = [t.select(["qid", "docno"]) for t in tables]
    if not local_docnos:   # (one vocabulary: a grown table's alignment, whose arrays are the largest)
        release_unused()   # what parsing left in Arrow's pool and the C library's heap, and the numbers
    if local_docnos:
        qcodes, quniq = _codes(tables, "qid", grouped=True)
        dcodes, duniq = _local_codes(tables, run_idx, qcodes)
    else:
        (qcodes, quniq), (dcodes, duniq) = _all_codes(tables, ("qid", "docno"), grouped=("qid",), hand_over=True)
    quniq = np.asarray(quniq.to_pylist(), dtype=object)
    if not arrow_docnos:
        duniq = np.asarray(duniq.to_pylist(), dtype=object)
    zero_files = []
    for k in has_zero:
        a, b = bounds[k], bounds[k + 1]
        starts = zero_based(rank[a:b], quniq[qcodes[a:b]])
        if len(starts):
            zero_files.append((paths[k], starts))
        else:
            rank[a:b] -= 1
    announce_zero_based(zero_files)   # one warning for all the files, not one per file
    return run_idx, qcodes, quniq, dcodes, duniq, score, rank


def _local_codes(tables: list, run_idx: np.ndarray, qcodes: np.ndarray) -> tuple[np.ndarray, pa.ChunkedArray]:
    """Codes of the docno column over pieces of about :data:`_LOCAL_ROWS` lines cut where a ranking
    ends, each piece with its own dictionary (a chunk of the returned chunked array; a code counts
    into them all, one after the other): small hash tables, several times cheaper than one over
    millions of docnos.  A docno has one code within a ranking, and may have several across
    rankings.  When a ranking's lines are not consecutive in its file, one dictionary for all
    (:func:`_codes`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .._arrow import numbers
    n = len(qcodes)
    change = np.flatnonzero((qcodes[1:] != qcodes[:-1]) | (run_idx[1:] != run_idx[:-1])) + 1
    starts = np.concatenate([[0], change])
    n_pairs = len(np.unique(run_idx[starts].astype(np.int64) * (int(qcodes.max()) + 1) + qcodes[starts])) if n else 0
    if n_pairs != len(starts):   # a ranking in several places: one dictionary
        codes, dictionary = _codes(tables, "docno")
        return codes, pa.chunked_array([dictionary])
    edges = np.append(starts, n)
    cuts = edges[np.searchsorted(edges, np.arange(_LOCAL_ROWS, n, _LOCAL_ROWS))]   # the next ranking's start
    bounds = np.unique(np.concatenate([[0], cuts, [n]]).astype(np.int64))
    column = pa.chunked_array([c for t in tables for c in t.column("docno").chunks])
    codes = np.empty(n, dtype=np.int32 if n < 2 ** 31 else np.int64)
    dictionaries, offset = [], 0
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        piece = pc.dictionary_encode(column.slice(a, b - a).combine_chunks())
        np.add(numbers(piece.indices), offset, out=codes[a:b], casting="unsafe")
        dictionaries.append(piece.dictionary)
        offset += len(piece.dictionary)
    return codes, pa.chunked_array(dictionaries, type=pa.string())


def _codes(tables: list, name: str, grouped: bool = False) -> tuple[np.ndarray, pa.Array]:
    """(code of every row, distinct strings in order of first appearance) of a string column over
    all the tables: one hash pass over every file's strings together (Arrow's
    ``dictionary_encode``), whose strings never become Python objects.

    ``grouped``: the column is expected in runs of equal consecutive values (the qids of a run
    file, which holds each ranking's lines together): only the first value of each run is hashed
    (:func:`_run_codes`), the same codes and dictionary; a column that is not so is hashed whole."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc   # here, after the files have started reading

    from .._arrow import numbers
    column = [c for t in tables for c in t.column(name).chunks]
    if grouped:
        done = _run_codes(column)
        if done is not None:
            return done
    encoded = pc.dictionary_encode(pa.chunked_array(column, type=pa.string()))
    chunks = encoded.chunks
    codes = np.concatenate([numbers(c.indices) for c in chunks])   # a writable copy, even of one chunk
    return codes, chunks[-1].dictionary   # the chunks' codes count into the last chunk's dictionary


def _run_codes(chunks: list) -> tuple[np.ndarray, pa.Array] | None:
    """:func:`_codes` of a string column given as Arrow chunks, through its runs of equal
    consecutive values: the first value of each run is hashed (a run file of 100,000 topics: half
    a million values, not five million) and its code repeated over the run.  The dictionary is in
    order of first appearance either way.  None when the runs are not at most half the rows (the
    column is not grouped: hashing every value costs less)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .._arrow import int64_array, numbers
    rows = sum(len(c) for c in chunks)
    starts, firsts = [], []
    for c in chunks:
        if len(c) == 0:
            continue
        # a run starts at a chunk's first row and wherever a value differs from the one before it
        change = numbers(pc.indices_nonzero(pc.not_equal(c.slice(1), c.slice(0, len(c) - 1)))).astype(np.int64)
        first = np.empty(len(change) + 1, dtype=np.int64)
        first[0] = 0
        np.add(change, 1, out=first[1:])
        starts.append(first)
        firsts.append(c.take(int64_array(first)))
        if 2 * sum(len(x) for x in starts) > rows:
            return None
    if not starts:
        return None
    lengths = np.concatenate([np.diff(np.append(first, len(c))) for first, c in
                              zip(starts, [c for c in chunks if len(c)])])
    encoded = pc.dictionary_encode(pa.chunked_array(firsts, type=pa.string()))
    run_codes = np.concatenate([numbers(c.indices) for c in encoded.chunks])
    return np.repeat(run_codes, lengths), encoded.chunks[-1].dictionary


def _all_codes(tables: list, names: Sequence[str], grouped: Sequence[str] = (),
               hand_over: bool = False) -> list[tuple[np.ndarray, pa.Array]]:
    """:func:`_codes` of each named column, the same codes and dictionaries, computed on every core:
    Arrow's hash pass releases the GIL but runs on one thread, so each long column is encoded in two
    halves of the files at once, and the halves' dictionaries are joined in order of first
    appearance (the second half's codes renumbered through one lookup of its dictionary).  The
    ``grouped`` columns (:func:`_codes`), whose runs are few, are encoded whole by this thread
    meanwhile.  ``hand_over``: the list ``tables`` is emptied (the caller needs them no more)."""
    rows = sum(t.num_rows for t in tables)
    if len(tables) < 2 or rows < _SPLIT_ROWS or (os.cpu_count() or 1) < 2:
        return [_codes(tables, name, name in grouped) for name in names]
    from concurrent.futures import ThreadPoolExecutor
    half = _half(tables)
    # each column apart; with hand_over, the caller's list of tables is emptied, so that a column's
    # strings are freed once it is encoded
    apart = {name: [t.select([name]) for t in tables] for name in names}
    if hand_over:
        tables.clear()
    with ThreadPoolExecutor(2) as pool:
        jobs = {name: (pool.submit(_codes, apart[name][:half], name), pool.submit(_codes, apart.pop(name)[half:], name))
                for name in list(names) if name not in grouped}
        here = {name: _codes(apart.pop(name), name, True) for name in names if name in grouped}
        return [here[name] if name in here else _joined(jobs[name][0].result(), jobs[name][1].result())
                for name in names]


def _half(tables: list) -> int:
    """The number of tables in the first half, by rows."""
    import numpy as np
    cum = np.cumsum([t.num_rows for t in tables])
    return int(min(max(np.searchsorted(cum, cum[-1] / 2), 1), len(tables) - 1))


def _joined(first: tuple[np.ndarray, pa.Array], second: tuple[np.ndarray, pa.Array]) -> tuple[np.ndarray, pa.Array]:
    """The codes and dictionary of two consecutive parts encoded apart, as if encoded together:
    the second part's strings the first lacks come after the first's, in their order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from .._arrow import int64_array, numbers
    codes1, dict1 = first
    codes2, dict2 = second
    where = numbers(pc.index_in(dict2, value_set=dict1), null=-1).astype(np.int64)   # -1: not in the first
    new = np.flatnonzero(where < 0)
    where[new] = len(dict1) + np.arange(len(new))
    dictionary = pa.concat_arrays([dict1, dict2.take(int64_array(new))]) if len(new) else dict1
    return np.concatenate([codes1, where.astype(codes1.dtype)[codes2]]), dictionary


def unified_docnos(columns: tuple | None) -> tuple | None:
    """Columns of :func:`run_file_columns` whose docnos are one dictionary, of columns whose docnos
    are separate dictionaries (``RunFileReader.columns(local_docnos=True)``; others as they are)."""
    if columns is None or not hasattr(columns[4], "num_chunks"):
        return columns
    import numpy as np
    import pyarrow.compute as pc

    from .._arrow import numbers
    encoded = pc.dictionary_encode(columns[4])
    remap = np.concatenate([numbers(c.indices) for c in encoded.chunks])
    return (*columns[:3], remap[columns[3]], encoded.chunks[-1].dictionary, *columns[5:])


class RunFileReader:
    """Run files being read: ``RunFileReader(paths, n_threads)`` starts reading them with
    :func:`~pyterrier_noise.io.read_arrow_run` at once, ``n_threads`` files at a time in threads (decompression and
    Arrow's parser release the GIL), so that a caller can do other work (imports, the qrels)
    meanwhile; :meth:`columns` waits for them and returns what :func:`~pyterrier_noise.io.run_file_columns` returns.

    :meth:`~pyterrier_noise.engine.AlignedRuns.build` and :func:`~pyterrier_noise.measures.evaluate`
    take one in place of the paths (the files' run names are their names without ``.gz``).  An
    alignment takes the columns over and frees them as it goes, unless ``keep_columns`` is set
    (``evaluate`` sets it while other alignments of the same runs follow); a reader used again
    afterwards reads its files again.

    ``cache``: a directory where the parsed files are kept for the next reading of the same files
    (:mod:`pyterrier_noise.io.cache`; None: the ``PYTERRIER_NOISE_CACHE`` environment variable if
    set, else none).

    Example::

        from pathlib import Path
        from pyterrier_noise.io import RunFileReader, list_run_files
        reading = RunFileReader(list_run_files(Path("../shared/data/trec-covid-round1/runs"))[:2], 2)
        run_idx, qcodes, qids, dcodes, docnos, score, rank = reading.columns()
    """

    def __init__(self, paths: Sequence[PathLike], n_threads: int = 1, cache: Any = None):
        self.paths = [Path(p) for p in paths]
        self.keep_columns = False
        self._cache: dict = {}
        self._pool = None
        self._pending = None
        from .cache import cache_directory   # parsed runs kept on disk (io.cache), off unless asked for
        self._read = _cached_reader(cache_directory(cache))
        if n_threads > 1 and len(self.paths) > 1:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(min(n_threads, len(self.paths)))
            if self._read is not read_arrow_run:
                _import_parser()
                self._pending = [self._pool.submit(self._read, p) for p in self.paths]
                return
            # the files are inflated while pyarrow and numpy are imported (by this thread, the
            # parser's modules: one core would be idle otherwise); then each inflated file is
            # parsed, and the files not yet started are read, inflated and parsed one task each
            inflating = [self._pool.submit(_bytes_or_none, p) for p in self.paths]
            _import_parser()
            self._pending = [self._pool.submit(read_arrow_run, p) if f.cancel() else
                             self._pool.submit(_parse_inflated, f)
                             for p, f in zip(self.paths, inflating)]

    def __len__(self) -> int:
        """The number of run files (runs) being read."""
        return len(self.paths)

    def _tables(self) -> list:
        if self._pending is None:
            return [self._read(p) for p in self.paths]
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

    def columns(self, arrow_docnos: bool = False, keep: bool = True, local_docnos: bool = False) -> tuple | None:
        """The columns of :func:`run_file_columns` (computed once; later calls return them again,
        the docnos converted to the form asked for, unless ``keep=False`` handed them over).  The
        parsed tables are freed once their columns are made.

        ``local_docnos`` (with ``arrow_docnos``, when nothing was asked before): the docnos are a
        ``pyarrow.ChunkedArray`` of separate dictionaries, one per piece of consecutive rankings,
        so that a docno has one code within a ranking and may have several across rankings
        (:func:`_local_codes`; what the aligned engine needs, several times cheaper to make)."""
        if not self._cache:
            local = local_docnos and arrow_docnos
            self._cache[arrow_docnos] = _columns_of_tables(self.paths, self._tables(), arrow_docnos, local)
        if not local_docnos:   # columns made with separate dictionaries: one for all now
            self._cache = {k: unified_docnos(v) for k, v in self._cache.items()}
        if arrow_docnos not in self._cache:
            cols = self._cache[not arrow_docnos]
            if cols is not None:
                import numpy as np
                import pyarrow as pa
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


def _cached_reader(directory: Path | None) -> Any:
    """:func:`read_arrow_run`, through the cache in ``directory`` when there is one."""
    if directory is None:
        return read_arrow_run
    from functools import partial

    from .cache import cached_run_table
    return partial(cached_run_table, parse=read_arrow_run, directory=directory)


def _import_parser() -> None:
    """Import what parsing a file needs (numpy, pyarrow and its CSV reader), in the calling thread."""
    import numpy  # noqa: F401
    import pyarrow  # noqa: F401
    import pyarrow.csv  # noqa: F401

    from .._arrow import numbers  # noqa: F401


def _parse_inflated(inflating: Any) -> Any:
    """:func:`parse_arrow_run` of a file's bytes once the future inflating them has them."""
    return parse_arrow_run(inflating.result())

