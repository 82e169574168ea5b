"""Run files being read: their bytes (inflated by ISA-L's gzip decoder) and
:class:`RunFileReader`, which reads them in threads from the moment it is made.

Only the standard library at import (and ``isal`` when a file is inflated): a command makes its
reader before numpy and pyarrow are imported, so that the files are inflated while they are
(:mod:`.arrow` parses them)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from .files import PathLike

__all__ = ["RunFileReader"]


def _file_bytes(path: PathLike) -> bytes | None:
    """A TREC file's bytes, decompressed when they start with gzip's magic bytes (whatever the
    file's name), or None when it cannot be read or inflated (the validating reader says why)."""
    from .._validation import InputError
    from .files import read_text_file
    try:
        data = read_text_file(path)   # a device or a binary file: refused by the validating reader
    except InputError:
        return None
    return _gunzip(data) if data[:2] == b"\x1f\x8b" else data


def _gunzip(data: bytes) -> bytes | None:
    """The decompressed bytes of gzip data (every member of a multi-member file, as ``gzip``
    reads them), or None when it cannot be decompressed (the validating reader says why).

    Intel's ISA-L (the ``isal`` package, as in xopen and cutadapt) inflates about twice as fast
    as zlib, which Arrow's gzip codec uses, and releases the GIL like it: on TREC-COVID round 1
    decompression is about 0.3 s of CPU instead of 0.6 s (benchmarks/w1_process.py).  Without
    ``isal``, Arrow's codec (zlib) decompresses."""
    try:
        from isal import isal_zlib
    except ImportError:   # pragma: no cover - isal is a dependency; a platform without its wheel
        import pyarrow as pa
        try:
            with pa.input_stream(pa.py_buffer(data), compression="gzip") as stream:
                return stream.read()
        except (OSError, EOFError, pa.ArrowException):
            return None
    parts = []
    try:
        while data:
            member = isal_zlib.decompressobj(31)   # 31: a gzip header and trailer
            parts.append(member.decompress(data))
            if not member.eof:
                return None   # truncated
            data = member.unused_data.lstrip(b"\0")   # the next member (zero padding skipped, as gzip does)
    except isal_zlib.error:
        return None
    return b"".join(parts)


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
        self._pending = None
        if n_threads > 1 and len(self.paths) > 1:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(min(n_threads, len(self.paths)))
            # the files are inflated while pyarrow and numpy are imported (0.1-0.2 s on one core,
            # the other idle otherwise); then each inflated file is parsed, and the files not yet
            # started are read, inflated and parsed one task each, in turn
            inflating = [self._pool.submit(_file_bytes, p) for p in self.paths]
            from .arrow import parse_arrow_run, read_arrow_run
            self._pending = [self._pool.submit(read_arrow_run, p) if f.cancel() else
                             self._pool.submit(_parse_inflated, parse_arrow_run, f)
                             for p, f in zip(self.paths, inflating)]

    def __len__(self) -> int:
        """The number of run files (runs) being read."""
        return len(self.paths)

    def _tables(self) -> list:
        if self._pending is None:
            from .arrow import read_arrow_run
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
        from .arrow import _columns_of_tables
        if not self._cache:
            self._cache[arrow_docnos] = _columns_of_tables(self.paths, self._tables(), arrow_docnos)
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



def _parse_inflated(parse: Callable[[bytes | None], Any], inflating: Any) -> Any:
    """``parse`` of a file's bytes once the future inflating them has them."""
    return parse(inflating.result())
