"""``select`` as a whole process: judgment selection without pandas (a ``JudgmentTable`` as the
oracle, the RBP ranges as arrays), the reader that inflates run files before numpy and pyarrow are
imported, the dictionary encoding on two cores and the grouping of positions by row (per topic, in
two threads).  Every check compares the new path with the one it replaces (frames, one-piece
encoding, numpy's stable argsort)."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from collection_helpers import random_collection
from pyterrier_noise._arrow import numbers
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.engine import AlignedRuns, JudgmentTable
from pyterrier_noise.io import read_arrow_qrels, write_trec_qrels, write_trec_run
from pyterrier_noise.io import reader as io_reader
from pyterrier_noise.selection import JudgmentSelector
from pyterrier_noise.selection.contributions import positions_by_row


def _files(tmp_path, seed: int):
    runs, qrels = random_collection(seed, n_runs=6, n_topics=5, n_docs=50, depth=15)
    paths = []
    for name, run in runs.items():
        path = tmp_path / f"{name}.txt"
        write_trec_run(run, path)
        paths.append(path)
    qpath = tmp_path / "qrels.txt"
    write_trec_qrels(qrels, qpath)
    return paths, qrels, qpath


def _qrels_frame(qrels: pd.DataFrame) -> pd.DataFrame:
    return qrels[["qid", "docno", "label"]].reset_index(drop=True)


@pytest.mark.parametrize("topics", [["4", "2", "9", "1"], ["3"], [], "own"])
def test_with_topics_is_the_table_from_frame_makes(topics):
    # "own": the table's own topics in its own order (the runs answer the qrels' topics)
    _, qrels = random_collection(3, n_runs=2, n_topics=5, n_docs=30, depth=10)
    q = _qrels_frame(qrels)
    for table in (JudgmentTable.from_frame(q),
                  JudgmentTable.from_arrays(pa.array(q.qid.astype(str).tolist()),
                                            pa.array(q.docno.astype(str).tolist()), q.label.to_numpy())):
        topics = list(table.topics) if topics == "own" else topics
        got, want = table.with_topics(topics), JudgmentTable.from_frame(q, topics)
        assert got.topics == want.topics == [str(t) for t in topics]
        assert np.array_equal(got.topic_index, want.topic_index)
        assert np.array_equal(got.topic_start, want.topic_start)
        assert np.array_equal(got.labels, want.labels)
        assert list(got.docno) == list(want.docno)
        # (an empty frame made from arrays holds object columns, one from a frame its dtypes)
        assert got.frame.equals(want.frame) if len(want) else list(got.frame.columns) == list(want.frame.columns)


def test_selection_with_a_table_oracle_is_the_selection_with_frames(tmp_path):
    paths, qrels, qpath = _files(tmp_path, seed=5)
    table = JudgmentTable.from_arrays(*read_arrow_qrels(qpath))
    a = JudgmentSelector(paths, method="C")
    b = JudgmentSelector(paths, method="C")
    a.judge(_qrels_frame(qrels), 40)
    b.judge(table, 40)
    assert a.history.equals(b.history)
    # the ranges as arrays are the frame's columns, run by run and topic by topic
    frame = a.bounds(0.5)
    arrays = b.bounds_arrays(0.5)
    for col in ("base", "residual", "upper", "projected"):
        assert arrays[col].shape == (len(b.run_names), len(b.topics))
        np.testing.assert_array_equal(arrays[col].ravel(), frame[col].to_numpy())
    assert list(frame["name"].iloc[::len(b.topics)]) == b.run_names
    assert list(frame["qid"].iloc[:len(b.topics)]) == b.topics


def test_selection_from_files_and_a_table_imports_no_pandas(tmp_path):
    paths, _, qpath = _files(tmp_path, seed=6)
    code = ("import sys, warnings; warnings.simplefilter('ignore'); "
            "from pyterrier_noise.io.reader import RunFileReader; "
            "assert not [m for m in ('numpy', 'pyarrow', 'pandas') if m in sys.modules]; "
            f"reading = RunFileReader({[str(p) for p in paths]!r}, 2); "
            "from pyterrier_noise.engine import AlignedRuns, JudgmentTable; from pyterrier_noise.io import read_arrow_qrels; "
            "from pyterrier_noise.selection import JudgmentSelector; "
            f"table = JudgmentTable.from_arrays(*read_arrow_qrels({str(qpath)!r})); "
            "sel = JudgmentSelector(reading, method='C'); sel.judge(table, 30); "
            "r = sel.bounds_arrays()['residual'].mean(axis=1); "
            "print(sel.n_judged, len(r), sorted(m for m in ('pandas', 'scipy', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["30", "6", "[]"]


@pytest.mark.parametrize("split", [0, 10 ** 9])
def test_codes_in_two_halves_are_the_codes_of_one_pass(monkeypatch, split):
    # strings only in the second half, only in the first, in both, and repeated: the joined codes
    # and dictionary are those of one dictionary_encode over every file (order of first appearance)
    monkeypatch.setattr(io_reader, "_SPLIT_ROWS", split)
    words = [["a", "b", "a"], ["c", "b"], ["d", "a", "e"], ["e", "f", "c", "g"], ["b"]]
    tables = [pa.table({"docno": pa.array(w, type=pa.string())}) for w in words]
    codes, dictionary = io_reader._all_codes(tables, ["docno"])[0]
    flat = [x for w in words for x in w]
    want = list(dict.fromkeys(flat))
    assert dictionary.to_pylist() == want
    assert [want[c] for c in codes] == flat
    one_pass = io_reader._codes(tables, "docno")
    assert np.array_equal(codes, one_pass[0]) and codes.dtype == one_pass[0].dtype
    # handed over (the list emptied, so that each column is freed once encoded): the same codes
    handed = list(tables)
    (qcodes, _), (again, again_dictionary) = io_reader._all_codes(
        [t.append_column("qid", pa.array(["q"] * t.num_rows)) for t in handed], ["qid", "docno"],
        grouped=["qid"], hand_over=True)
    assert np.array_equal(again, codes) and again_dictionary.equals(dictionary) and not qcodes.any()
    handed_list = list(tables)
    io_reader._all_codes(handed_list, ["docno"], hand_over=True)
    halves = split == 0 and (os.cpu_count() or 1) >= 2   # (otherwise encoded whole, the list kept)
    assert (handed_list == []) == halves


def _grouping_brute_force(aligned):
    """The by-row grouping as numpy's stable argsort of the rows of every position (brute force)."""
    order = np.argsort(aligned.jidx, kind="stable")
    seg = np.repeat(np.arange(aligned.n_segments), aligned.seg_len)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(aligned.jidx, minlength=len(aligned.table)))])
    return ptr, seg[order], aligned.pos[order]


@pytest.mark.parametrize("n_docs, big", [(6, False), (40, True), (70_000, True)])
def test_rows_grouped_per_topic_equal_the_stable_argsort(n_docs, big):
    # runs that miss topics (empty segments), a topic no run retrieves (no rows), one run only on a
    # topic, and (70,000 documents) a topic of more than 2^16 rows, whose keys are 32-bit; big: over
    # 100,000 positions, so that half the topics are grouped in a second thread
    rng = np.random.default_rng(n_docs)
    frames = {}
    for r in range(5):
        rows = []
        for q in ("q1", "q2", "q3", "q4"):
            if (r, q) in ((1, "q2"), (3, "q2"), (2, "q4")) or q == "q3" or (q == "q4" and r != 2 and r != 4):
                continue
            n = n_docs if big and q == "q1" else min(n_docs, 6)
            docs = rng.choice(n_docs + 10, size=n, replace=False) if n < n_docs + 10 else np.arange(n)
            rows.append(pd.DataFrame({"qid": q, "docno": [f"d{d}" for d in docs], "score": -np.arange(n, dtype=float),
                                      "rank": np.arange(n)}))
        frames[f"run{r}"] = pd.concat(rows, ignore_index=True)
    if big:   # more positions: copies of run0 under other names
        for k in range(2 if n_docs == 40 else 0):
            frames[f"copy{k}"] = frames["run0"]
    qrels = pd.DataFrame({"qid": ["q1", "q3"], "docno": ["d1", "d2"], "label": [1, 0]})
    aligned = AlignedRuns.build(frames, qrels, include_unjudged=True, topics=["q1", "q2", "q3", "q4"],
                                on_topic_mismatch="ignore")
    got = positions_by_row(aligned)
    want = _grouping_brute_force(aligned)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)


def test_rows_grouped_on_trec_covid_equal_the_stable_argsort(covid):
    from pyterrier_noise.selection.contributions import aligned_for
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CoercionWarning)     # one run's 0-based ranks
        qrels = JudgmentTable.from_arrays(*read_arrow_qrels(covid / "qrels-rnd1.txt"))
        aligned = aligned_for(covid / "runs", qrels)
    assert aligned.n_topics == 30 and len(aligned.jidx) > 100_000   # the threaded path
    for g, w in zip(positions_by_row(aligned), _grouping_brute_force(aligned)):
        assert np.array_equal(g, w)


def test_numbers_stand_a_value_in_for_nulls():
    arr = pa.array([3, None, 5, None, 7, 8, None, 1, 2, None], type=pa.int32())
    for a in (arr, arr.slice(3), arr.slice(1, 4)):
        want = [-1 if v is None else v for v in a.to_pylist()]
        assert numbers(a, null=-1).tolist() == want
    with pytest.raises(ValueError, match="nulls"):
        numbers(arr)
    assert numbers(pa.array([1.5, 2.5]), null=0).tolist() == [1.5, 2.5]
