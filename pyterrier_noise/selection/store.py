"""Storage of a judging session: fingerprints of runs and qrels, their compact (pickle-free) blobs,
the SQLite schema and the session's errors."""
from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError
from ..io import read_qrels, read_runs

__all__ = ["SessionError", "SessionLockedError", "fingerprint_runs", "fingerprint_qrels"]


class SessionError(InputError):
    """A judging session cannot do what was asked (wrong file, other runs, a document not proposed...)."""


class SessionLockedError(SessionError):
    """Another process (or another open :class:`JudgingSession`) holds the session file."""



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


def _joined(strings: Sequence[str]) -> bytes:
    return "\x00".join(strings).encode("utf-8")


def fingerprint_runs(runs: Any) -> str:
    """SHA-256 of the runs' ``(run, qid, docno, rank, score)`` rows, sorted: independent of the order of
    the runs and of the rows, sensitive to any change in them.

    ``runs`` is anything :func:`pyterrier_noise.read_runs` reads.  Sorting is done on integer codes
    of the sorted unique strings (``pandas.factorize``), so it stays fast for TREC-size run sets.
    """
    return _fingerprint_canonical(_canonical_runs(read_runs(runs)))


def _fingerprint_canonical(c: dict[str, Any]) -> str:
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
    h.update(_joined(c["docno_u"]) + b"\x01")
    for arr in (run_c[order], c["qid_c"][order], c["docno_c"][order], c["rank"][order]):
        h.update(arr.astype("<i8").tobytes())
    h.update(c["score"][order].astype("<f8").tobytes())
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


def _u8(strings: Sequence[str]) -> np.ndarray:
    data = _joined(strings)
    if data.count(b"\x00") != max(len(strings) - 1, 0):
        raise SessionError("a qid, docno or run name contains a NUL character, which a session file cannot store")
    return np.frombuffer(data, dtype=np.uint8)


def _strings(u8: np.ndarray, n: int) -> np.ndarray:
    if n == 0:
        return np.array([], dtype=object)
    out = np.array(bytes(u8).decode("utf-8").split("\x00"), dtype=object)
    if len(out) != n:
        raise SessionError("the session file is damaged: a string table has the wrong length")
    return out


def _pack_runs(c: dict[str, Any]) -> bytes:
    """The runs (canonical columns, :func:`_canonical_runs`) as a compressed ``.npz`` blob, without pickle."""
    buf = io.BytesIO()
    np.savez_compressed(buf, names=_u8(c["names"]), n_names=len(c["names"]), sizes=c["sizes"],
                        qid_u=_u8(c["qid_u"]), n_qid=len(c["qid_u"]), qid_c=c["qid_c"].astype(np.int32),
                        docno_u=_u8(c["docno_u"]), n_docno=len(c["docno_u"]), docno_c=c["docno_c"].astype(np.int32),
                        score=c["score"], rank=c["rank"])
    return buf.getvalue()


def _unpack_runs(blob: bytes) -> dict[str, pd.DataFrame]:
    z = np.load(io.BytesIO(blob), allow_pickle=False)
    names = _strings(z["names"], int(z["n_names"]))
    qid = _strings(z["qid_u"], int(z["n_qid"]))[z["qid_c"]]
    docno = _strings(z["docno_u"], int(z["n_docno"]))[z["docno_c"]]
    bounds = np.concatenate([[0], np.cumsum(z["sizes"])])
    score, rank = z["score"], z["rank"]
    return {str(n): pd.DataFrame({"qid": qid[a:b], "docno": docno[a:b], "score": score[a:b], "rank": rank[a:b]})
            for n, a, b in zip(names, bounds[:-1], bounds[1:])}


def _pack_qrels(q: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, qid=_u8(q["qid"].tolist()), docno=_u8(q["docno"].tolist()), n=len(q),
                        label=q["label"].to_numpy(dtype=np.float64))
    return buf.getvalue()


def _unpack_qrels(blob: bytes) -> pd.DataFrame:
    z = np.load(io.BytesIO(blob), allow_pickle=False)
    n = int(z["n"])
    return pd.DataFrame({"qid": _strings(z["qid"], n), "docno": _strings(z["docno"], n), "label": z["label"]})



_FORMAT = "pyterrier-noise judging session 1"


_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE blobs(name TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE served(id INTEGER PRIMARY KEY, qid TEXT NOT NULL, docno TEXT NOT NULL, weight REAL,
                    time TEXT NOT NULL, UNIQUE(qid, docno));
CREATE TABLE events(seq INTEGER PRIMARY KEY, action TEXT NOT NULL CHECK(action IN ('judge', 'bypass')),
                    qid TEXT NOT NULL, docno TEXT NOT NULL, label REAL, weight REAL, time TEXT NOT NULL,
                    UNIQUE(qid, docno));
"""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


