"""Judging sessions from run files, lean and quick to resume: the runs are read with Arrow
(same fingerprint and stored runs as the frames path), the selector's alignment is stored, older files
without it still open (and get it), and the replay of a long session equals record() one by one."""
from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from pyterrier_noise.io import write_trec_run
from pyterrier_noise.selection import JudgingSession, JudgmentSelector, QrelsOracle, fingerprint_runs


pytestmark = pytest.mark.collection(n_topics=6, n_systems=7, n_docs_per_topic=80, depth=25, pool_depth=5, seed=11)


@pytest.fixture(scope="module")
def run_dir(coll, tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    for name, run in coll.runs.items():
        write_trec_run(run, d / f"{name}.gz")
    return d


def _steps(s: JudgingSession) -> list:
    return s.history[["action", "qid", "docno", "label", "weight"]].values.tolist()


def _blob_names(path) -> set:
    with closing(sqlite3.connect(str(path))) as c:
        return {r[0] for r in c.execute("SELECT name FROM blobs")}


def test_files_and_frames_give_the_same_session(tmp_path, coll, run_dir):
    # the Arrow path's fingerprint and stored rows equal the pandas path's (the same runs, read twice)
    assert fingerprint_runs(run_dir) == fingerprint_runs(coll.runs)
    oracle = QrelsOracle(coll.true_qrels)
    with JudgingSession(tmp_path / "files.sqlite", runs=run_dir, method="C") as a:
        a.run(oracle, budget=40)
        files_steps = _steps(a)
    with JudgingSession(tmp_path / "frames.sqlite", runs=coll.runs, method="C") as b:
        b.run(oracle, budget=40)
        assert _steps(b) == files_steps
        assert a.fingerprint == b.fingerprint
    with closing(sqlite3.connect(str(tmp_path / "files.sqlite"))) as c1, \
            closing(sqlite3.connect(str(tmp_path / "frames.sqlite"))) as c2:
        q = "SELECT data FROM blobs WHERE name=?"
        assert c1.execute(q, ("runs",)).fetchone() == c2.execute(q, ("runs",)).fetchone()
        assert c1.execute(q, ("aligned",)).fetchone() == c2.execute(q, ("aligned",)).fetchone()
    # a resumed session continues exactly as an uninterrupted one (from files, given again: same fingerprint)
    with JudgingSession(tmp_path / "files.sqlite", runs=run_dir) as r:
        r.run(oracle, budget=70)
        resumed = _steps(r)
    with JudgingSession(tmp_path / "once.sqlite", runs=run_dir, method="C") as once:
        once.run(oracle, budget=70)
        assert _steps(once) == resumed


def test_a_file_without_the_stored_alignment_opens_and_gets_it(tmp_path, coll):
    oracle = QrelsOracle(coll.true_qrels)
    path = tmp_path / "old.sqlite"
    with JudgingSession(path, runs=coll.runs, method="C", batch_size=3) as s:
        s.run(oracle, budget=20)
        s.next()   # served, not judged: the rest of a batch waits in the file
    with closing(sqlite3.connect(str(path), isolation_level=None)) as c:   # as written before alignments were stored
        c.execute("DELETE FROM blobs WHERE name='aligned'")
        c.execute("DELETE FROM meta WHERE key='aligned_blob_sha256'")
    assert "aligned" not in _blob_names(path)
    with JudgingSession(path) as s:
        s.run(oracle, budget=45)
        old_steps = _steps(s)
    assert "aligned" in _blob_names(path)
    with JudgingSession(tmp_path / "new.sqlite", runs=coll.runs, method="C", batch_size=3) as n:
        n.run(oracle, budget=20)
        n.next()
    with JudgingSession(tmp_path / "new.sqlite") as n:
        n.run(oracle, budget=45)
        assert _steps(n) == old_steps


def test_replay_equals_recording_one_by_one(coll):
    sel = JudgmentSelector(coll.runs, method="C")
    sel.judge(coll.true_qrels, 60)
    h = sel.history
    one = JudgmentSelector(coll.runs, method="C")
    for q, d, y in zip(h["qid"], h["docno"], h["label"]):
        one.record(q, d, y)
    fast = JudgmentSelector(coll.runs, method="C")
    fast.replay(["judge"] * len(h), list(h["qid"]), list(h["docno"]), list(h["label"]), list(h["weight"]))
    assert fast.history.equals(sel.history)
    assert fast.propose(5) == one.propose(5) == sel.propose(5)
    assert (fast.labels() == one.labels()).sum() == (one.labels() == one.labels()).sum()   # NaN aside, equal


def test_quota_from_a_function_of_the_topics(tmp_path, coll):
    seen = []

    def quota(topics):
        seen.append(topics)
        return {topics[0]: 0}

    with JudgingSession(tmp_path / "q.sqlite", runs=coll.runs, per_topic_quota=quota) as s:
        assert seen == [sorted({str(q) for r in coll.runs.values() for q in r["qid"]})]
        assert s.config["per_topic_quota"] == {seen[0][0]: 0}
        s.run(QrelsOracle(coll.true_qrels), budget=30)
        assert seen[0][0] not in set(s.history["qid"])
    with JudgingSession(tmp_path / "q.sqlite", per_topic_quota=quota) as s:   # ignored when reopening
        assert len(seen) == 1 and s.n_judged == 30


def test_the_stored_alignment_round_trips(coll):
    # the blob keeps the positions grouped by table row; unpacking scatters them back into segment
    # order: the same arrays as the alignment that was stored, and the same contributions
    import numpy as np
    from pyterrier_noise.selection.contributions import aligned_for, cached_contributions
    from pyterrier_noise.selection.store import pack_aligned, unpack_aligned
    a = aligned_for(coll.runs, coll.true_qrels.iloc[::3])
    b = unpack_aligned(pack_aligned(a))
    for name in ("seg_len", "seg_start", "pos", "jidx", "group_start", "group_end"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.run_names == b.run_names and a.topics == b.topics and a.ties == b.ties
    import pandas as pd
    pd.testing.assert_frame_equal(a.table.frame, b.table.frame, check_dtype=False)   # str vs object columns
    mask = np.ones(a.n_runs, dtype=bool)
    ca, cb = cached_contributions(a, 0.8, mask), cached_contributions(b, 0.8, mask)
    for name in ("all_ptr", "all_seg", "all_run", "all_c", "all_pos", "candidate"):
        assert np.array_equal(getattr(ca, name), getattr(cb, name)), name


@pytest.mark.parametrize("bad, match", [({"method": "D"}, "method"), ({"pool_runs": ["nope"]}, "'pool_runs'"),
                                        ({"per_topic_quota": {"no-such-topic": 1}}, "not a topic of the runs")])
def test_settings_the_selector_refuses_are_refused_before_the_file_is_written(tmp_path, coll, bad, match):
    # the selector of a new session is built on first use, after the file is written: what it would
    # refuse must be refused first, leaving no file behind
    from pyterrier_noise import InputError
    with pytest.raises(InputError, match=match):
        JudgingSession(tmp_path / "s.sqlite", runs=coll.runs, **bad)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InputError, match=match):   # the selector itself says the same
        JudgmentSelector(coll.runs, **bad)


@pytest.mark.parametrize("ties", ["trec_eval", "given", "expected", "optimistic"])
@pytest.mark.parametrize("include_unjudged, topics", [(False, None), (True, "runs")])
def test_aligning_columns_equals_aligning_the_files(run_dir, coll, ties, include_unjudged, topics):
    # AlignedRuns.from_columns over the columns run_file_columns reads = AlignedRuns.build over the
    # same files (the session reads its runs once and aligns those columns)
    import numpy as np
    import pandas as pd
    from pyterrier_noise.engine import AlignedRuns
    from pyterrier_noise.io import list_run_files, run_file_columns, run_name
    files = list_run_files(run_dir)
    qrels = coll.true_qrels.iloc[::2]
    args = dict(ties=ties, topics=topics, include_unjudged=include_unjudged, on_topic_mismatch="ignore")
    got = AlignedRuns.from_columns([run_name(f) for f in files], run_file_columns(files), qrels, **args)
    want = AlignedRuns.build(files, qrels, **args)
    for name in ("seg_len", "seg_start", "pos", "jidx", "group_start", "group_end"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    pd.testing.assert_frame_equal(got.table.frame, want.table.frame)
    assert got.run_names == want.run_names and got.topics == want.topics


def test_sparse_rows_against_numpy():
    # brute force: the numpy CSR's product, row gather and append equal the dense matrix's
    # (the grouping by row: tests/processes/test_select_process.py)
    import numpy as np
    from pyterrier_noise.selection.contributions import _Rows
    rng = np.random.default_rng(7)
    dense = rng.random((9, 7)) * (rng.random((9, 7)) < 0.5)
    dense[3] = 0.0   # an empty row
    nz = [np.flatnonzero(r) for r in dense]
    ptr = np.concatenate([[0], np.cumsum([len(x) for x in nz])])
    m = _Rows(ptr, np.concatenate(nz).astype(np.int32), dense[dense != 0], dense.shape)
    x = rng.random(7)
    np.testing.assert_allclose(m @ x, dense @ x, rtol=1e-14)
    rows = np.array([5, 0, 3, 5])
    sub = m.take_rows(rows)
    np.testing.assert_allclose(sub @ x, dense[rows] @ x, rtol=1e-14)
    np.testing.assert_allclose(sub.head(2) @ x, dense[rows[:2]] @ x, rtol=1e-14)
    both = m.take_rows(np.array([1, 2])).append(sub)
    np.testing.assert_allclose(both @ x, dense[[1, 2, 5, 0, 3, 5]] @ x, rtol=1e-14)


def test_docnos_stored_from_arrow_are_the_bytes_of_the_python_strings():
    # the stored alignment's docnos are made from the Arrow array's buffers (no Python string a
    # row): the same bytes as joining the strings, for empty, non-ASCII, sliced, chunked and large
    # string arrays; a NUL inside a docno is refused either way
    import numpy as np
    import pyarrow as pa
    from pyterrier_noise.selection.store import SessionError, _u8
    values = ["d1", "", "dé2", "x" * 40, "", "z"]
    cases = [pa.array(values), pa.array(values).slice(1, 4), pa.array(values).slice(5),
             pa.chunked_array([pa.array(values[:2]), pa.array(values[2:])]), pa.array(values, type=pa.large_string())]
    for arr in cases:
        want = _u8(arr.to_pylist())
        got = _u8(arr)
        assert got.dtype == np.uint8 and bytes(got) == bytes(want), arr
    with pytest.raises(SessionError, match="NUL"):
        _u8(pa.array(["a", "b\x00c"]))


def test_non_ascii_docnos_sort_the_same_from_files_and_frames(tmp_path):
    # the stored runs' docno vocabulary is sorted by Arrow (UTF-8 bytes) from files and by Python
    # (code points) from frames: the two orders agree, so the fingerprint and the stored runs do
    import pandas as pd
    docnos = ["Z", "a", "\u00e4", "\u65e5\u672c", "\U0001F600x", "ab", "a-b", "\u00e91", "d10", "d9", "\u00e9", "\uff21"]

    def run(order):
        q1 = [docnos[i] for i in order]
        return pd.DataFrame({"qid": ["q1"] * len(q1) + ["q2"] * 3, "docno": q1 + ["\u00e4", "Z", "b"],
                             "score": [float(-i) for i in range(len(q1))] + [0.0, -1.0, -2.0],
                             "rank": list(range(len(q1))) + [0, 1, 2]})
    runs = {"r1": run(range(len(docnos))), "r2": run(range(len(docnos) - 1, 2, -1))}
    d = tmp_path / "runs"
    d.mkdir()
    for name, frame in runs.items():
        write_trec_run(frame, d / name)
    assert fingerprint_runs(d) == fingerprint_runs(runs)
    with JudgingSession(tmp_path / "files.sqlite", runs=d, method="C"), \
            JudgingSession(tmp_path / "frames.sqlite", runs=runs, method="C"):
        pass
    with closing(sqlite3.connect(str(tmp_path / "files.sqlite"))) as c1, \
            closing(sqlite3.connect(str(tmp_path / "frames.sqlite"))) as c2:
        q = "SELECT data FROM blobs WHERE name='runs'"
        assert c1.execute(q).fetchone() == c2.execute(q).fetchone()


def test_blobs_written_in_pieces_are_the_blobs(tmp_path, run_dir, monkeypatch):
    # a large blob is written through SQLite's incremental blob I/O in pieces (no copy of the whole
    # blob): with pieces of 1 KiB the stored blobs equal those bound whole, and match their checksums
    import hashlib
    from pyterrier_noise.selection import durable
    if not hasattr(sqlite3.Connection, "blobopen"):
        pytest.skip("Python before 3.11 has no incremental blob I/O: blobs are bound whole")
    with JudgingSession(tmp_path / "whole.sqlite", runs=run_dir, method="C"):
        pass
    monkeypatch.setattr(durable, "BLOB_CHUNK", 1024)
    with JudgingSession(tmp_path / "pieces.sqlite", runs=run_dir, method="C"):
        pass
    q = "SELECT name, data FROM blobs ORDER BY name"
    with closing(sqlite3.connect(str(tmp_path / "whole.sqlite"))) as c1, \
            closing(sqlite3.connect(str(tmp_path / "pieces.sqlite"))) as c2:
        whole, pieces = c1.execute(q).fetchall(), c2.execute(q).fetchall()
        meta = dict(c2.execute("SELECT key, value FROM meta").fetchall())
    assert [n for n, _ in pieces] == ["aligned", "runs"]
    assert all(len(b) > 1024 * 3 for _, b in pieces)   # several pieces each
    assert pieces == whole
    assert hashlib.sha256(dict(pieces)["runs"]).hexdigest() == meta["runs_blob_sha256"]
    assert hashlib.sha256(dict(pieces)["aligned"]).hexdigest() == meta["aligned_blob_sha256"]
