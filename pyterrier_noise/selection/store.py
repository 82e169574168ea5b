"""Storage of a judging session: the session file (:class:`SessionStore`: one locked SQLite
connection, its records and blobs, the replay of the records into a selector), fingerprints of runs
and qrels, their compact (pickle-free) blobs and the SQLite schema."""
from __future__ import annotations

import hashlib
import io
import json
import math
import numbers
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError, check_probability
from ..engine import AlignedRuns, JudgmentTable, are_run_paths
from ..io import list_run_files, read_qrels, read_runs, run_file_columns, run_name
from .durable import SessionError, SessionLockedError, backup, check_integrity, damaged_message, insert_blob

__all__ = ["SessionError", "SessionLockedError", "SessionStore", "NewSession", "new_session", "fingerprint_runs",
           "fingerprint_qrels"]



def _canonical_runs(runs: Mapping[str, pd.DataFrame]) -> dict[str, Any]:
    """Columns of all runs with canonical string tables (sorted uniques + codes)."""
    names = list(runs)
    sizes = np.array([len(runs[n]) for n in names], dtype=np.int64)
    qid = np.concatenate([runs[n]["qid"].to_numpy(dtype=object) for n in names])
    docno = np.concatenate([runs[n]["docno"].to_numpy(dtype=object) for n in names])
    qid_c, qid_u = pd.factorize(qid, sort=True)
    doc_c, doc_u = pd.factorize(docno, sort=True)
    return {"names": names, "sizes": sizes, "qid_u": list(qid_u), "qid_c": qid_c.astype(np.int64),
            "docno_u": list(doc_u), "docno_c": doc_c.astype(np.int64),
            "score": np.concatenate([runs[n]["score"].to_numpy(dtype=np.float64) for n in names]),
            "rank": np.concatenate([runs[n]["rank"].to_numpy(dtype=np.int64) for n in names])}


def run_paths(runs: Any) -> list[Path] | None:
    """The run files named by ``runs`` (a file, a directory or a list of them), or None when ``runs``
    are frames or a mapping (read those with :func:`~pyterrier_noise.io.read_runs`)."""
    if not are_run_paths(runs):
        return None
    items = [runs] if isinstance(runs, (str, os.PathLike)) else list(runs)
    files = [f for p in map(Path, items) for f in (list_run_files(p) if p.is_dir() else [p])]
    names = [run_name(f) for f in files]
    if len(set(names)) != len(names):
        raise InputError("two run files share a name (a run's name is its file name without .gz)")
    return files


def _sorted_codes(uniq: Any, codes: np.ndarray, arrow: bool = False) -> tuple[Any, np.ndarray]:
    """Distinct strings used by ``codes`` in sorted order, and the codes renumbered into them (what
    ``pandas.factorize(values, sort=True)`` gives, without a Python object per row); ``uniq`` is an
    object array or a pyarrow string array (``arrow``: the sorted strings are then an Arrow array,
    not a list).  Codes are int32 (a session stores them so)."""
    used = np.flatnonzero(np.bincount(codes, minlength=len(uniq)))
    if arrow and not isinstance(uniq, np.ndarray) and len(used) and not uniq.null_count:
        from .._arrow import sorted_strings
        strings, order = sorted_strings(uniq, used)
        new = np.full(len(uniq), -1, dtype=np.int32)
        new[used[order]] = np.arange(len(used), dtype=np.int32)
        return strings, new[codes]
    values = uniq.to_pylist() if not isinstance(uniq, np.ndarray) else uniq
    strings = np.asarray([str(values[i]) for i in used.tolist()], dtype=object)
    order = np.argsort(strings, kind="stable")
    new = np.full(len(uniq), -1, dtype=np.int32)
    new[used[order]] = np.arange(len(used), dtype=np.int32)
    return strings[order].tolist(), new[codes]


def release_arrow_memory() -> None:
    """Give back to the system what Arrow's allocator keeps after parsing the run files (about
    200 MB for the 143 TREC-COVID runs, all of it free), before the next phase allocates."""
    import pyarrow as pa
    pa.default_memory_pool().release_unused()


def read_run_columns(files: Sequence[Path]) -> tuple | None:
    """The flat columns of run files (:func:`~pyterrier_noise.io.run_file_columns`, docnos as an
    Arrow string array, the files read in threads), read once for both the stored copy of the runs
    and the selector's alignment; None when a file needs the validating reader (which names the
    offending line)."""
    cols = run_file_columns(list(files), n_threads=os.cpu_count() or 1, arrow_docnos=True)
    release_arrow_memory()
    return cols


def canonical_columns(names: Sequence[str], cols: tuple) -> dict[str, Any]:
    """:func:`_canonical_runs` of runs read into flat columns (:func:`read_run_columns`): strings
    stay codes, one Python object per distinct qid and docno, not per line."""
    run_idx, qcodes, quniq, dcodes, duniq, score, rank = cols
    qid_u, qid_c = _sorted_codes(quniq, qcodes)
    docno_u, docno_c = _sorted_codes(duniq, dcodes, arrow=True)
    return {"names": list(names), "sizes": np.bincount(run_idx, minlength=len(names)).astype(np.int64),
            "qid_u": qid_u, "qid_c": qid_c, "docno_u": docno_u, "docno_c": docno_c,
            "score": np.asarray(score, dtype=np.float64), "rank": np.asarray(rank, dtype=np.int64)}


def canonical_runs(runs: Any) -> dict[str, Any]:
    """:func:`_canonical_runs` of anything :func:`~pyterrier_noise.io.read_runs` reads; run files
    go through Arrow's reader (see :func:`read_run_columns`)."""
    files = run_paths(runs)
    if files is not None:
        if not files:
            raise InputError("argument 'runs': no run files given")
        cols = read_run_columns(files)
        if cols is not None:
            return canonical_columns([run_name(f) for f in files], cols)
        runs = files
    return _canonical_runs(read_runs(runs))


#: configuration keys and their defaults for a new session
DEFAULTS: dict[str, Any] = {"method": "C", "p": 0.8, "power": 3.0, "residual_scope": "query",
                            "score_scope": "system", "batch_size": 1, "tie_break": "deterministic",
                            "seed": 0, "pool_runs": None, "per_topic_quota": None, "rel": 1.0, "max_rel": None,
                            "ties": "trec_eval"}


def normalise_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """Validate the session's configuration and give it one canonical, JSON-able form."""
    out = dict(cfg)
    if not isinstance(out["method"], str):
        raise InputError(f"argument 'method': expected 'pool', 'A', 'B' or 'C', got {out['method']!r}")
    out["p"] = check_probability("argument 'p'", out["p"])
    pw = out["power"]
    if isinstance(pw, (bool, np.bool_)) or not isinstance(pw, numbers.Real) or not math.isfinite(pw) or pw < 0:
        raise InputError(f"argument 'power': expected a number >= 0, got {pw!r}")
    out["power"] = float(pw)
    for key, minimum in (("batch_size", 1), ("seed", 0)):
        v = out[key]
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or v < minimum:
            raise InputError(f"argument {key!r}: expected an integer >= {minimum}, got {v!r}")
        out[key] = int(v)
    for key, allowed in (("tie_break", ("deterministic", "random")), ("residual_scope", ("query", "system")),
                         ("score_scope", ("query", "system"))):
        if out[key] not in allowed:
            raise InputError(f"argument {key!r}: expected one of {list(allowed)}, got {out[key]!r}")
    if out["pool_runs"] is not None:
        pr = out["pool_runs"]
        if isinstance(pr, (str, bytes)) or not isinstance(pr, Sequence):
            raise InputError(f"argument 'pool_runs': expected a list of run names, got {pr!r}")
        out["pool_runs"] = [str(x) for x in pr]
    if isinstance(out["rel"], (bool, np.bool_)) or not isinstance(out["rel"], numbers.Real) \
            or not math.isfinite(out["rel"]) or out["rel"] <= 0:
        raise InputError(f"argument 'rel': expected a number > 0 (label >= rel is relevant), got {out['rel']!r}")
    out["rel"] = float(out["rel"])
    mr = out["max_rel"]
    if mr is not None:
        if isinstance(mr, (bool, np.bool_)) or not isinstance(mr, numbers.Real) or not math.isfinite(mr) or mr <= 0:
            raise InputError(f"argument 'max_rel': expected a number > 0 (graded gain) or None, got {mr!r}")
        out["max_rel"] = float(mr)
    if out["ties"] not in ("trec_eval", "given"):
        raise InputError(f"argument 'ties': expected 'trec_eval' or 'given', got {out['ties']!r}")
    q = out["per_topic_quota"]
    if q is not None:
        if isinstance(q, Mapping):
            out["per_topic_quota"] = {str(k): int(v) for k, v in q.items()}
        elif isinstance(q, numbers.Integral) and not isinstance(q, bool):
            out["per_topic_quota"] = int(q)
        else:
            raise InputError(f"argument 'per_topic_quota': expected an integer or a mapping qid -> integer, got {q!r}")
    return out


def check_selector_settings(cfg: dict[str, Any], names: Sequence[str], topics: Sequence[str]) -> None:
    """What the default selector would refuse in a new session's settings, refused before the file is
    written (the selector itself is built on first use): the method, pool runs that are not runs,
    quota topics that are not topics of the runs."""
    methods = ("pool", "A", "B", "C")
    if cfg["method"] not in methods:
        raise InputError(f"argument 'method': expected one of {list(methods)}, got {cfg['method']!r}")
    if cfg["pool_runs"] is not None:
        unknown = [x for x in cfg["pool_runs"] if x not in set(names)]
        if unknown:
            raise InputError(f"argument 'pool_runs': {len(unknown)} name(s) are not runs, e.g. {unknown[0]!r} "
                             f"(runs: {list(names)[:5]}{' ...' if len(names) > 5 else ''})")
        if not cfg["pool_runs"]:
            raise InputError("argument 'pool_runs': expected at least one run name, got none")
    q = cfg["per_topic_quota"]
    if isinstance(q, Mapping):
        for qid, n in q.items():
            if qid not in set(topics):
                raise InputError(f"argument 'per_topic_quota': qid {qid!r} is not a topic of the runs")
            if n < 0:
                raise InputError(f"argument 'per_topic_quota': qid {qid!r}: expected an integer >= 0, got {n!r}")
    elif q is not None and q < 0:
        raise InputError(f"argument 'per_topic_quota': expected an integer >= 0 or {{qid: n}}, got {q!r}")


def _joined(strings: Any) -> Any:
    """The strings' UTF-8 bytes, a NUL between two; an Arrow string array's are made from its buffers
    (:func:`~pyterrier_noise._arrow.joined_strings`: a uint8 array, no Python string a value)."""
    if not hasattr(strings, "null_count"):
        return "\x00".join(strings).encode("utf-8")
    if len(strings) == 0 or strings.null_count:
        return _joined(strings.to_pylist())
    from .._arrow import joined_strings
    return joined_strings(strings)


def fingerprint_runs(runs: Any) -> str:
    """SHA-256 of the runs' ``(run, qid, docno, rank, score)`` rows, sorted: independent of the order of
    the runs and of the rows, sensitive to any change in them.

    ``runs`` is anything :func:`pyterrier_noise.read_runs` reads; run files are parsed by Arrow
    (no Python object per line).  Sorting is done on integer codes of the sorted unique strings, so
    it stays fast and lean for TREC-size run sets.
    """
    return fingerprint_canonical(canonical_runs(runs))


def fingerprint_canonical(c: dict[str, Any]) -> str:
    names = np.array(c["names"], dtype=object)
    order_names = np.argsort(names, kind="stable")
    name_rank = np.empty(len(order_names), dtype=np.int64)
    name_rank[order_names] = np.arange(len(order_names))
    run_c = np.repeat(name_rank, c["sizes"])
    # one integer key for (run, qid, docno): at most runs x topics x documents, far below 2**63
    key = (run_c * len(c["qid_u"]) + c["qid_c"]) * len(c["docno_u"]) + c["docno_c"]
    order = np.argsort(key, kind="stable")
    if (np.diff(key[order]) == 0).any():  # a document twice in a ranking: rank and score break the tie
        order = np.lexsort((c["score"], c["rank"], key))
    h = hashlib.sha256(b"pyterrier-noise runs v1\x00")
    h.update(_joined([str(x) for x in names[order_names]]) + b"\x01")
    h.update(_joined(c["qid_u"]) + b"\x01")
    h.update(memoryview(_joined(c["docno_u"])))   # (an Arrow array from canonical_columns)
    h.update(b"\x01")
    # one column at a time, hashed through the buffer protocol: no copy beyond the reordered column
    for col, dtype in ((run_c, "<i8"), (c["qid_c"], "<i8"), (c["docno_c"], "<i8"), (c["rank"], "<i8"),
                       (c["score"], "<f8")):
        h.update(memoryview(np.ascontiguousarray(col[order], dtype=dtype)))
    return h.hexdigest()


def fingerprint_qrels(qrels: Any) -> str:
    """SHA-256 of the ``(qid, docno, label)`` rows of qrels, sorted (row order does not matter)."""
    q = read_qrels(qrels)
    order = np.lexsort((q["label"].to_numpy(), q["docno"].to_numpy(dtype=str), q["qid"].to_numpy(dtype=str)))
    q = q.iloc[order]
    h = hashlib.sha256(b"pyterrier-noise qrels v1\x00")
    h.update(_joined(q["qid"].tolist()) + b"\x01")
    h.update(_joined(q["docno"].tolist()) + b"\x01")
    h.update(q["label"].to_numpy(dtype="<f8").tobytes())
    return h.hexdigest()


def _u8(strings: Any) -> np.ndarray:
    data = np.frombuffer(_joined(strings), dtype=np.uint8)
    if np.count_nonzero(data == 0) != max(len(strings) - 1, 0):
        raise SessionError("a qid, docno or run name contains a NUL character, which a session file cannot store")
    return data


def _strings(u8: np.ndarray, n: int) -> np.ndarray:
    if n == 0:
        return np.array([], dtype=object)
    out = np.array(bytes(u8).decode("utf-8").split("\x00"), dtype=object)
    if len(out) != n:
        raise SessionError("the session file is damaged: a string table has the wrong length")
    return out


def _npz(compress: bool = True, **arrays: Any) -> bytes:
    """``numpy.savez_compressed`` of the arrays (an ``.npz`` that ``numpy.load`` reads, no pickle),
    at zlib's fastest level: a few times faster on the runs of a TREC track (3.5 million lines: about
    2 s instead of 7) for a blob about a tenth larger; ``compress=False``: ``numpy.savez`` (stored,
    read without decompressing: what is read at every reopening).  A value may be a function giving
    the array, called as its member is written (a blob's temporaries are not all held at once)."""
    import zipfile
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", compression=method, compresslevel=1 if compress else None,
                         allowZip64=True) as zf:
        for name, value in arrays.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(value() if callable(value) else value), allow_pickle=False)
    return buf.getvalue()


def pack_runs(c: dict[str, Any]) -> bytes:
    """The runs (canonical columns, :func:`_canonical_runs`) as a compressed ``.npz`` blob, without pickle."""
    return _npz(names=_u8(c["names"]), n_names=len(c["names"]), sizes=c["sizes"],
                qid_u=_u8(c["qid_u"]), n_qid=len(c["qid_u"]), qid_c=c["qid_c"].astype(np.int32, copy=False),
                docno_u=_u8(c["docno_u"]), n_docno=len(c["docno_u"]),
                docno_c=c["docno_c"].astype(np.int32, copy=False), score=c["score"], rank=c["rank"])


def unpack_runs(blob: bytes) -> dict[str, pd.DataFrame]:
    z = np.load(io.BytesIO(blob), allow_pickle=False)
    names = _strings(z["names"], int(z["n_names"]))
    qid = _strings(z["qid_u"], int(z["n_qid"]))[z["qid_c"]]
    docno = _strings(z["docno_u"], int(z["n_docno"]))[z["docno_c"]]
    bounds = np.concatenate([[0], np.cumsum(z["sizes"])])
    score, rank = z["score"], z["rank"]
    return {str(n): pd.DataFrame({"qid": qid[a:b], "docno": docno[a:b], "score": score[a:b], "rank": rank[a:b]})
            for n, a, b in zip(names, bounds[:-1], bounds[1:])}


def unpack_run_columns(blob: bytes) -> tuple[list[str], tuple]:
    """The stored runs as ``(names, columns)``, the columns in the form
    :func:`~pyterrier_noise.io.run_file_columns` gives (what the alignment reads), without a frame:
    codes into the sorted distinct qids and docnos, score and rank."""
    z = np.load(io.BytesIO(blob), allow_pickle=False)
    names = [str(x) for x in _strings(z["names"], int(z["n_names"]))]
    sizes = z["sizes"]
    run_idx = np.repeat(np.arange(len(names), dtype=np.int64), sizes)
    cols = (run_idx, z["qid_c"], _strings(z["qid_u"], int(z["n_qid"])), z["docno_c"],
            _strings(z["docno_u"], int(z["n_docno"])), z["score"], z["rank"].astype(np.int64, copy=False))
    return names, cols


def pack_qrels(q: pd.DataFrame) -> bytes:
    return _npz(qid=_u8(q["qid"].tolist()), docno=_u8(q["docno"].tolist()), n=len(q),
                label=q["label"].to_numpy(dtype=np.float64))


def unpack_qrels(blob: bytes) -> pd.DataFrame:
    z = np.load(io.BytesIO(blob), allow_pickle=False)
    n = int(z["n"])
    return pd.DataFrame({"qid": _strings(z["qid"], n), "docno": _strings(z["docno"], n), "label": z["label"]})



FORMAT = "pyterrier-noise judging session 1"

#: tag of the aligned-runs blob (``blobs.name = 'aligned'``): the selector's alignment, stored so
#: that a session reopens without parsing or aligning the runs again.  Sessions written before it
#: have no such blob and are aligned from their stored runs (then the blob is added).
_ALIGNED_FORMAT = "pyterrier-noise aligned runs 1"


def pack_aligned(a: AlignedRuns) -> bytes:
    """The selector's alignment (``ties`` "trec_eval" or "given": one position per document, so the
    positions of a segment are 0, 1, 2, ...) as an uncompressed ``.npz`` blob without pickle: segment
    lengths, the positions grouped by table row (segment and rank of each: what the selector's
    contributions are built from, so reopening needs no sort), and the table's docnos, topics and
    labels."""
    from .contributions import positions_by_row
    seg_start = a.seg_start[:-1].astype(a.pos.dtype, copy=False)
    if not (a.group_start is a.pos or np.array_equal(a.group_start, a.pos)) or \
            not (a.group_end - a.pos == 1).all() or \
            not np.array_equal(a.pos, np.arange(len(a.pos), dtype=a.pos.dtype) - np.repeat(seg_start, a.seg_len)):
        raise SessionError("internal: the selector's alignment has tie groups; it cannot be stored")
    ptr, segs, pos = positions_by_row(a)
    t = a.table
    return _npz(compress=False, format=_u8([_ALIGNED_FORMAT]), names=_u8(a.run_names), n_names=len(a.run_names),
                ties=_u8([a.ties]), topics=_u8(t.topics), n_topics=len(t.topics),
                docno=lambda: _u8(t.frame["docno"].tolist() if t.docno_arrow is None else t.docno_arrow),
                n_rows=len(t), topic_index=lambda: t.topic_index.astype(np.int32, copy=False),
                labels=lambda: t.labels.astype(np.float64, copy=False), seg_len=a.seg_len.astype(np.int64),
                row_len=lambda: np.diff(ptr).astype(np.int32, copy=False),
                row_run=lambda: _narrow(segs // len(t.topics)), row_pos=lambda: _narrow(pos))


def _narrow(x: np.ndarray) -> np.ndarray:
    """Non-negative integers as int16 where they fit (run numbers, ranks), else int32: half the bytes
    to store and to decompress."""
    top = int(x.max(initial=0))
    return x.astype(np.int16 if top < 2 ** 15 else np.int32 if top < 2 ** 31 else np.int64)


def unpack_aligned(blob: bytes) -> AlignedRuns:
    """The :class:`~pyterrier_noise.engine.AlignedRuns` of :func:`pack_aligned`, as built: the
    positions in segment order are put back by one scatter (no sort), and the rows' grouping is
    left in the alignment's cache for the selector."""
    z = np.load(io.BytesIO(blob), allow_pickle=False)
    if bytes(z["format"]).decode("utf-8") != _ALIGNED_FORMAT:
        raise SessionError(f"the stored alignment has format {bytes(z['format'])!r}, expected {_ALIGNED_FORMAT!r}")
    topics = [str(x) for x in _strings(z["topics"], int(z["n_topics"]))]
    tix = z["topic_index"].astype(np.int64)
    labels = z["labels"]
    # object columns: the selector reads them as object arrays, which an Arrow-backed str column
    # would have to convert (row by row) first
    frame = pd.DataFrame({"qid": pd.Series(np.asarray(topics, dtype=object)[tix], dtype=object),
                          "docno": pd.Series(_strings(z["docno"], int(z["n_rows"])), dtype=object), "label": labels})
    start = np.searchsorted(tix, np.arange(len(topics) + 1))
    table = JudgmentTable(frame, topics, tix, start, labels)
    seg_len = z["seg_len"]
    seg_start = np.zeros(len(seg_len) + 1, dtype=np.int64)
    np.cumsum(seg_len, out=seg_start[1:])
    n_pos = int(seg_start[-1])
    row_len, run, rpos = z["row_len"], z["row_run"], z["row_pos"]   # each read (decompressed) once
    if len(row_len) != len(table) or int(row_len.sum()) != n_pos or len(run) != n_pos or len(rpos) != n_pos:
        raise SessionError("the stored alignment is inconsistent (its lengths do not add up)")
    ptr = np.zeros(len(row_len) + 1, dtype=np.int64)
    np.cumsum(row_len, out=ptr[1:])
    it = np.int32 if len(seg_len) < 2 ** 31 and n_pos < 2 ** 31 else np.int64
    segs = run.astype(it)   # segment = run x topics + the row's topic
    segs *= len(topics)
    segs += np.repeat(tix.astype(it), row_len)
    rpos = rpos.astype(it)
    pos = np.arange(n_pos, dtype=np.int32 if n_pos < 2 ** 31 else np.int64)
    pos -= np.repeat(seg_start[:-1].astype(pos.dtype), seg_len)
    jidx = np.empty(n_pos, dtype=np.int64)
    jidx[seg_start[segs] + rpos] = np.repeat(np.arange(len(table), dtype=np.int64), row_len)
    names = [str(x) for x in _strings(z["names"], int(z["n_names"]))]
    a = AlignedRuns(names, table, bytes(z["ties"]).decode("utf-8"), seg_len, seg_start, pos, jidx, pos, pos + 1, None)
    a.cached("selection-by-row", lambda: (ptr, segs, rpos))
    return a


SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE blobs(name TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE served(id INTEGER PRIMARY KEY, qid TEXT NOT NULL, docno TEXT NOT NULL, weight REAL,
                    time TEXT NOT NULL, UNIQUE(qid, docno));
CREATE TABLE events(seq INTEGER PRIMARY KEY, action TEXT NOT NULL CHECK(action IN ('judge', 'bypass')),
                    qid TEXT NOT NULL, docno TEXT NOT NULL, label REAL, weight REAL, time TEXT NOT NULL,
                    UNIQUE(qid, docno));
"""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")




class SessionStore:
    """The session file, open: one SQLite connection (WAL journal, ``synchronous=FULL``, exclusive
    lock held until :meth:`close`) with the records of a judging session.

    The file holds ``meta`` (format, settings, fingerprints, notes), ``blobs`` (the runs, their
    alignment, the initial qrels), ``served`` (every document served, in order) and ``events``
    (every judgment and bypass, in order).  Every write is one transaction (:meth:`write`): a
    process killed at any moment leaves every committed step in the file.
    """

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = conn

    @classmethod
    def open(cls, path: Path, timeout: float) -> "SessionStore":
        """Open ``path`` and take its lock (waiting up to ``timeout`` seconds for another holder),
        then check the file's integrity."""
        store = cls(path, _connect(path, timeout))
        try:
            check_integrity(store.connection, path)
        except BaseException:
            store.close()
            raise
        return store

    @staticmethod
    def initialise(conn: sqlite3.Connection, meta: Mapping[str, str], blobs: Mapping[str, bytes]) -> None:
        """Write a new session's schema, ``meta`` and ``blobs`` into an empty file, in one transaction."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            for stmt in SCHEMA.strip().split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", sorted(meta.items()))
            for name, data in blobs.items():
                insert_blob(conn, "blobs", name, data)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection (closed store: a :class:`SessionError`)."""
        if self._conn is None:
            raise SessionError(f"{self.path}: the session is closed; open it again with JudgingSession(path)")
        return self._conn

    @property
    def closed(self) -> bool:
        return self._conn is None

    def close(self) -> None:
        """Close the connection and release the lock (every step is already committed)."""
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    @contextmanager
    def reproducible_steps(self) -> Iterator[None]:
        """Steps answered by an oracle whose answers are reproducible (qrels, a seeded noise model
        over them: an oracle with an identity, which the session stores and checks on resume) are
        committed without waiting for the disk (``synchronous=NORMAL``; in WAL mode every commit is
        still atomic and in the file as soon as it returns, so a process that is killed loses
        nothing), then synced once at the end by a checkpoint (and ``synchronous=FULL`` again).
        Only an operating-system crash or a power cut in between can lose the last of those steps,
        and rerunning the same command re-derives them exactly: the selector is deterministic and
        the oracle gives the same answers.  A person's judgments keep one sync per step."""
        c = self.connection
        c.execute("PRAGMA synchronous=NORMAL")
        try:
            yield
        finally:
            if self._conn is not None:
                c.execute("PRAGMA synchronous=FULL")
                c.execute("PRAGMA wal_checkpoint(PASSIVE)")   # syncs the journal, then the file

    def write(self, fn: Callable[[sqlite3.Connection], Any]) -> None:
        """Run ``fn(connection)`` in one transaction; a failure rolls it back and is a
        :class:`SessionError` (a KeyboardInterrupt or SystemExit is rolled back and passed on)."""
        c = self.connection
        try:
            c.execute("BEGIN IMMEDIATE")
            fn(c)
            c.execute("COMMIT")
        except BaseException as exc:
            try:
                if c.in_transaction:
                    c.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if not isinstance(exc, Exception):   # KeyboardInterrupt, SystemExit: rolled back, then passed on
                raise
            raise SessionError(f"{self.path}: could not save the step ({exc}); every earlier step is saved -- "
                               f"open the session again to continue") from exc

    # -- reading ----------------------------------------------------------------------------------

    def has_tables(self) -> bool:
        return self.connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0

    def read_meta(self) -> dict[str, str] | None:
        """The ``meta`` table, or None when the file has none (checked: the session format)."""
        conn = self.connection
        has = conn.execute("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()[0]
        if not has:
            return None
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != FORMAT:
            raise SessionError(f"{self.path}: not a pyterrier-noise judging session (format {meta.get('format')!r}, "
                               f"expected {FORMAT!r})")
        return meta

    def meta_value(self, key: str) -> str | None:
        row = self.connection.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def set_meta(self, key: str, value: str, replace: bool = True) -> None:
        """Write one ``meta`` entry in its own transaction."""
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        self.write(lambda c: c.execute(f"{verb} INTO meta(key, value) VALUES (?, ?)", (key, value)))

    def blob(self, name: str) -> bytes:
        """A stored blob (``runs``, ``aligned``, ``initial_qrels``); missing or unreadable: the file
        is damaged."""
        try:
            row = self.connection.execute("SELECT data FROM blobs WHERE name=?", (name,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise SessionError(damaged_message(self.path, str(exc))) from None
        if row is None:
            raise SessionError(damaged_message(self.path, f"no {name!r} stored"))
        return row[0]

    def stored_alignment(self, sha256: str | None) -> AlignedRuns | None:
        """The stored alignment (checked against ``sha256``), or None when the file has none."""
        row = (self.connection.execute("SELECT data FROM blobs WHERE name='aligned'").fetchone()
               if sha256 else None)
        if row is None:
            return None
        if hashlib.sha256(row[0]).hexdigest() != sha256:
            raise SessionError(damaged_message(self.path, "the stored alignment does not match its checksum"))
        return unpack_aligned(row[0])

    def add_alignment(self, blob: bytes) -> str:
        """Store an alignment (a session written before alignments were stored); returns its SHA-256."""
        sha = hashlib.sha256(blob).hexdigest()
        self.write(lambda c: (c.execute("INSERT OR REPLACE INTO blobs(name, data) VALUES ('aligned', ?)", (blob,)),
                              c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('aligned_blob_sha256', ?)",
                                        (sha,))))
        return sha

    def events(self) -> list[tuple]:
        """Every committed step in order: ``(seq, action, qid, docno, label, weight, time)``."""
        return self.connection.execute(
            "SELECT seq, action, qid, docno, label, weight, time FROM events ORDER BY seq").fetchall()

    def judgments(self) -> list[tuple]:
        """The judgments in order: ``(qid, docno, label)``."""
        return self.connection.execute(
            "SELECT qid, docno, label FROM events WHERE action='judge' ORDER BY seq").fetchall()

    def check_reopen(self, meta: Mapping[str, str], runs: Any, initial_qrels: Any, given: Mapping[str, Any],
                     verify_blobs: bool = True) -> tuple[dict[str, Any], list[str], pd.DataFrame | None]:
        """The stored settings, run names and initial qrels of the session ``meta`` describes, after
        checking that what the caller gives (settings, runs, initial qrels) is what is stored and,
        with ``verify_blobs``, that the stored runs and alignment match their checksums: damage is
        reported before any judging."""
        cfg = {**DEFAULTS, **json.loads(meta["config"])}
        stored_names = json.loads(meta["run_names"])
        for key, value in given.items():
            if key == "per_topic_quota" and callable(value):   # a function of the topics: used at creation only
                continue
            norm = normalise_config({**cfg, key: value})[key]
            if norm != cfg[key]:
                raise SessionError(f"{self.path}: the session was created with {key}={cfg[key]!r}, not {value!r}; "
                                   f"a session keeps its settings (leave {key} out, or start a new session file)")
        if runs is not None:
            given_c = canonical_runs(runs)
            fp = fingerprint_canonical(given_c)
            given_names = list(given_c["names"])
            del given_c
            if fp != meta["runs_fingerprint"]:
                extra = sorted(set(given_names) - set(stored_names))
                lost = sorted(set(stored_names) - set(given_names))
                detail = (f" (runs not in the session: {extra[:5]}; session runs not given: {lost[:5]})"
                          if extra or lost else " (same run names, different rankings)")
                raise SessionError(f"{self.path}: these runs are not the runs the session was created with{detail}; "
                                   f"runs fingerprint {fp[:12]}... != stored {meta['runs_fingerprint'][:12]}... "
                                   f"Reopen with the same runs, or without runs to use the stored copy")
        for name, key in (("runs", "runs_blob_sha256"), ("alignment", "aligned_blob_sha256")):
            want = meta.get(key) if verify_blobs else None
            if want is not None and hashlib.sha256(self.blob(key.split("_")[0])).hexdigest() != want:
                raise SessionError(damaged_message(self.path, f"the stored {name} do{'es' * (name != 'runs')} "
                                                              f"not match {'its' if name != 'runs' else 'their'} checksum"))
        init = None
        if meta["initial_qrels_fingerprint"]:
            init = unpack_qrels(self.blob("initial_qrels"))
        if initial_qrels is not None:
            fp = fingerprint_qrels(initial_qrels)
            if fp != meta["initial_qrels_fingerprint"]:
                raise SessionError(f"{self.path}: these initial qrels are not the ones the session was created with "
                                   f"(leave initial_qrels out to use the stored copy)")
        return cfg, stored_names, init

    def served(self) -> list[tuple]:
        """Every document served, in order: ``(qid, docno, weight)``."""
        return self.connection.execute("SELECT qid, docno, weight FROM served ORDER BY id").fetchall()

    # -- writing ----------------------------------------------------------------------------------

    def serve(self, docs: Sequence[tuple[str, str, float]]) -> None:
        """Record documents served to the judge, in one transaction."""
        now = now_iso()
        self.write(lambda c: c.executemany("INSERT INTO served(qid, docno, weight, time) VALUES (?, ?, ?, ?)",
                                           [(q, d, w, now) for q, d, w in docs]))

    def commit_step(self, seq: int, action: str, qid: str, docno: str, label: float, weight: float,
                    notes: Sequence[tuple[str, str]] = ()) -> None:
        """Record step ``seq`` (``"judge"`` or ``"bypass"``) and its ``meta`` notes, in one transaction."""
        self.write(lambda c: (c.execute(
            "INSERT INTO events(seq, action, qid, docno, label, weight, time) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (seq, action, qid, docno, None if action == "bypass" else label, weight, now_iso())),
            c.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(notes))))

    # -- replay and copies ------------------------------------------------------------------------

    def replay(self, selector: Any) -> None:
        """Apply every committed step, in order, to ``selector`` (a fresh one over the stored runs):
        it then holds exactly the state the session had.  A selector with ``replay`` (the
        JudgmentSelector) takes all the steps at once, others one ``record`` / ``bypass`` each."""
        rows = self.connection.execute("SELECT action, qid, docno, label, weight FROM events ORDER BY seq").fetchall()
        if hasattr(selector, "replay"):   # JudgmentSelector: all rows looked up at once
            if rows:
                selector.replay(*map(list, zip(*rows)))
            return
        for action, qid, docno, label, _ in rows:
            if action == "judge":
                selector.record(qid, docno, label)
            else:
                selector.bypass(qid, docno)

    def backup(self, dest: Path) -> Path:
        """Copy the open file, every committed step included, to ``dest`` (SQLite's backup API)."""
        return backup(self.connection, self.path, Path(dest))


@dataclass
class NewSession:
    """What a new session file will hold: its settings, run names, runs fingerprint and initial
    qrels, the ``meta`` entries and the blobs (``runs``, ``aligned`` when the runs were aligned,
    ``initial_qrels``), and the alignment itself."""

    config: dict[str, Any]
    run_names: list[str]
    fingerprint: str
    initial_qrels: pd.DataFrame | None
    meta: dict[str, str]
    blobs: dict[str, bytes]
    aligned: AlignedRuns | None


def new_session(runs: Any, initial_qrels: Any, given: Mapping[str, Any],
                align: Callable[..., AlignedRuns] | None, package_version: str) -> NewSession:
    """The records of a new session over ``runs``, checked (bad settings fail before anything is
    written).  ``given``: the settings given (the rest are :data:`DEFAULTS`; ``per_topic_quota``
    may be a function of the runs' sorted qids).  ``align(runs, initial_qrels, ties=...)``: the
    selector's alignment, stored with the runs (None: not stored)."""
    quota_fn = given.get("per_topic_quota")
    if callable(quota_fn):   # evaluated below, on the runs' topics
        given = {k: v for k, v in given.items() if k != "per_topic_quota"}
    cfg = normalise_config({**DEFAULTS, **given})
    files = run_paths(runs)
    if files is not None and not files:
        raise InputError("argument 'runs': no run files given")
    # run files are parsed once, by Arrow's reader (no frame, no Python object per line); the
    # same columns give the stored copy, its fingerprint and the selector's alignment
    cols = read_run_columns(files) if files is not None else None
    if cols is not None:
        canonical = canonical_columns([run_name(f) for f in files], cols)
    else:
        canonical = canonical_runs(runs if files is None else files)
    if not canonical["names"]:
        raise InputError("argument 'runs': no runs given")
    if callable(quota_fn):
        cfg = normalise_config({**cfg, "per_topic_quota": quota_fn(list(canonical["qid_u"]))})
    fp = fingerprint_canonical(canonical)
    blob = pack_runs(canonical)
    names = list(canonical["names"])
    del canonical
    init = read_qrels(initial_qrels) if initial_qrels is not None else None
    meta = {"format": FORMAT, "config": json.dumps(cfg, sort_keys=True), "run_names": json.dumps(names),
            "runs_fingerprint": fp, "created": now_iso(), "package_version": package_version,
            "initial_qrels_fingerprint": fingerprint_qrels(init) if init is not None else "",
            "creation_token": secrets.token_hex(16), "runs_blob_sha256": hashlib.sha256(blob).hexdigest()}
    blobs = {"runs": blob}
    aligned = None
    if align is not None:
        aligned = align((names, cols) if cols is not None else files if files is not None else unpack_runs(blob),
                        init, ties=cfg["ties"])
        del cols   # the rows are in the blob and the alignment: the columns go before the selector is built
        blobs["aligned"] = pack_aligned(aligned)
        meta["aligned_blob_sha256"] = hashlib.sha256(blobs["aligned"]).hexdigest()
        # what the selector would refuse is refused here
        check_selector_settings(cfg, names, aligned.topics)
    if init is not None:
        blobs["initial_qrels"] = pack_qrels(init)
    return NewSession(cfg, names, fp, init, meta, blobs, aligned)


def _connect(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection to ``path`` holding its lock (EXCLUSIVE locking mode: the first write lock is
    kept until close, so one process -- one session object -- holds the file; the operating system
    drops it if the process dies), WAL journal, ``synchronous=FULL``."""
    try:
        conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None)
    except sqlite3.Error as exc:
        raise SessionError(f"{path}: cannot open the session file ({exc})") from None
    try:
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        foreign = _foreign_format(conn, "meta")   # before any PRAGMA that writes: another file stays as it was
        if foreign is not None:
            raise SessionError(f"{path}: not a pyterrier-noise judging session ({foreign}, expected format "
                               f"{FORMAT!r}); the file was not changed")
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise SessionError(f"{path}: SQLite refused the WAL journal (journal_mode={mode})")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("BEGIN IMMEDIATE")  # take the lock now, not at the first judgment
        conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        conn.close()
        if "locked" in str(exc) or "busy" in str(exc):
            raise SessionLockedError(
                f"{path}: the session is open in another process or another JudgingSession (SQLite "
                f"lock); close it first -- two judges writing one session would diverge") from None
        raise SessionError(f"{path}: cannot use the session file ({exc})") from None
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise SessionError(f"{path}: not a judging session file ({exc})") from None
    except BaseException:
        conn.close()
        raise
    return conn


def foreign_format(conn: sqlite3.Connection, table: str, expected: str) -> str | None:
    """Why the SQLite file of ``conn`` is not one of ours (its tables without ``table``, or a ``format``
    in ``table`` other than ``expected``), or None (ours, or an empty file).  Reads only: called before
    any PRAGMA or statement that writes, so that a foreign file is refused untouched."""
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    if not tables:
        return None
    if table not in tables:
        shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
        return f"its tables are {shown}"
    try:
        row = conn.execute(f"SELECT value FROM {table} WHERE key='format'").fetchone()
    except sqlite3.OperationalError:
        return f"its table {table!r} has no key and value columns"
    return None if row is not None and row[0] == expected else f"format {None if row is None else row[0]!r}"


def _foreign_format(conn: sqlite3.Connection, table: str) -> str | None:
    return foreign_format(conn, table, FORMAT)
