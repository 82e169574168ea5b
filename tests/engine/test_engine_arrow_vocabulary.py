"""The evaluation fast path: the Arrow docno vocabulary, the scipy-free product of one label
version, and lazy scipy imports.  Every check compares with the path it replaces."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from pyterrier_noise.engine import AlignedRuns, JudgmentTable, MeasureSpec
from pyterrier_noise.engine.keys import doc_vocabulary
from pyterrier_noise.io import run_file_columns


def _vocab(duniq, jdoc):
    """(code of each run docno, code of each judged docno, vocabulary in code order); the codes
    of the judged-only docnos are reached through the judged codes (their slots may differ)."""
    rank_of, jcode, docnos = doc_vocabulary(duniq, np.asarray(jdoc, dtype=object))
    return rank_of[:len(duniq)], jcode, docnos()


@pytest.mark.parametrize("runs_docs,judged", [
    (["d3", "d1", "d10", "d2"], ["d2", "d9", "d1", "d0"]),
    # non-ASCII: Arrow orders UTF-8 bytes, numpy code points; the two orders agree
    (["é", "e", "z", "\u00ff", "\u0100", "\U0001F600", "a b"], ["\uffff", "e", "\U0001F600", "Z"]),
    (["x"], []),
])
def test_arrow_vocabulary_equals_the_object_one(runs_docs, judged):
    # the object path (numpy str sort, pandas index lookups) is the reference
    a = _vocab(pa.array(runs_docs), judged)
    o = _vocab(np.asarray(runs_docs, dtype=object), judged)
    for x, y in zip(a, o):
        assert np.array_equal(x, y)
    assert list(o[2]) == sorted(set(runs_docs) | set(judged))   # code order is docno order


def test_arrow_vocabulary_with_non_string_judged_docnos_falls_back():
    a = _vocab(pa.array(["1", "3"]), [2, "1"])
    o = _vocab(np.asarray(["1", "3"], dtype=object), [2, "1"])
    for x, y in zip(a, o):
        assert np.array_equal(x, y)


def test_unified_codes_over_many_files(tmp_path):
    # several files (several dictionaries): codes point at the same strings as the lines say
    lines = {"a": "1 Q0 x 1 3 t\n1 Q0 y 2 2 t\n2 Q0 z 1 1 t\n",
             "b": "1 Q0 z 1 3 t\n2 Q0 x 1 2 t\n",
             "c": "3 Q0 w 1 3 t\n1 Q0 y 1 2 t\n"}
    paths = []
    for name, text in lines.items():
        (tmp_path / name).write_text(text)
        paths.append(tmp_path / name)
    for arrow_docnos in (False, True):
        _, qc, qu, dc, du, _, _ = run_file_columns(paths, arrow_docnos=arrow_docnos)
        du = np.asarray(du.to_pylist() if arrow_docnos else du, dtype=object)
        want = [ln.split() for t in lines.values() for ln in t.splitlines()]
        assert list(qu[qc]) == [w[0] for w in want]
        assert list(du[dc]) == [w[2] for w in want]
        assert len(set(du)) == len(du)


def _small_case(seed: int = 0):
    rng = np.random.default_rng(seed)
    docs = [f"d{i}" for i in range(40)]
    qrels = pd.DataFrame({"qid": np.repeat(["1", "2", "3"], 20),
                          "docno": np.concatenate([rng.choice(docs, 20, replace=False) for _ in range(3)]),
                          "label": rng.integers(0, 3, 60)})
    runs = {}
    for r in range(3):
        rows = [(q, d, float(rng.integers(0, 5))) for q in ("1", "2", "3")
                for d in rng.choice(docs, 15, replace=False)]
        f = pd.DataFrame(rows, columns=["qid", "docno", "score"])
        f["rank"] = f.groupby("qid").cumcount()
        runs[f"r{r}"] = f
    return qrels, runs


@pytest.mark.parametrize("ties", ["trec_eval", "expected"])
def test_one_version_product_equals_scipy_bit_for_bit(ties):
    from pyterrier_noise.engine import position_weights
    # the weighted bincount adds in the CSR product's order: identical floats, not merely close
    qrels, runs = _small_case()
    aligned = AlignedRuns.build(runs, JudgmentTable.from_qrels(qrels), ties=ties)
    L = aligned.label_matrix()
    for spec in (MeasureSpec("RBP", p=0.8), MeasureSpec("P", cutoff=10), MeasureSpec("DCG")):
        w = aligned.effective_weights(spec, position_weights)
        ours = aligned.weighted_sum(w, np.where(np.isnan(L), 0.0, L))
        ref = aligned._sparse(w) @ np.where(np.isnan(L), 0.0, L)
        assert ours.shape == ref.shape and np.array_equal(ours, ref)
    # several versions go through scipy and agree with one version at a time
    L3 = np.column_stack([L[:, 0], np.roll(L[:, 0], 1), np.where(np.isnan(L[:, 0]), 1.0, np.nan)])
    v3 = aligned.evaluate([MeasureSpec("RBP", p=0.8, component="residual")], L3)
    for r in range(3):
        v1 = aligned.evaluate([MeasureSpec("RBP", p=0.8, component="residual")], L3[:, r])
        assert np.array_equal(list(v3.values())[0][:, :, r], list(v1.values())[0][:, :, 0])


def test_engine_and_measures_import_without_scipy_sparse():
    # scipy.sparse (about 0.1 s) is imported only for several label versions at once
    code = ("import sys, pyterrier_noise.engine.align, pyterrier_noise.engine.kernels; "
            "print('scipy.sparse' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("ties,depth", [("trec_eval", 40), ("expected", 40), ("trec_eval", 6000)])
def test_files_order_tied_rows_by_docno_as_trec_eval(tmp_path, ties, depth):
    # run files keep their docnos' codes (first appearance; at depth 6000 a file's 18,000 lines
    # are encoded in pieces with dictionaries of their own, a docno in several) and sort only
    # tied rows by docno: the positions are trec_eval's order (score descending, then docno
    # descending), checked against Python's sort of the lines, and the same as the frames'
    # ordered vocabulary gives.  At depth 40 a file is out of topic order: one dictionary for all
    rng = np.random.default_rng(3)
    docs = [f"d{i}" for i in rng.permutation(max(300, depth * 4 // 3))] + ["D7", "d", "é1", "d10a"]
    qrels = pd.DataFrame({"qid": np.repeat(["1", "2", "10"], 30),
                          "docno": np.concatenate([rng.choice(docs, 30, replace=False) for _ in range(3)]),
                          "label": rng.integers(0, 3, 90)})
    lines, frames = {}, {}
    for r in range(3):
        rows = [(q, d, float(rng.integers(0, 6))) for q in ("10", "1", "2")
                for d in rng.choice(docs, depth, replace=False)]
        if r == 1 and depth < 1000:   # one file out of score and topic order: one dictionary
            rows = [rows[i] for i in rng.permutation(len(rows))]
        (tmp_path / f"r{r}").write_text("".join(f"{q} Q0 {d} {k + 1} {s} r\n" for k, (q, d, s) in enumerate(rows)))
        f = pd.DataFrame(rows, columns=["qid", "docno", "score"])
        f["rank"] = np.arange(len(f))
        frames[f"r{r}"] = f
        lines[f"r{r}"] = rows
    table = JudgmentTable.from_qrels(qrels)
    a = AlignedRuns.build([tmp_path / f"r{r}" for r in range(3)], table, ties=ties, keep_docnos=True)
    b = AlignedRuns.build(frames, table, ties=ties, keep_docnos=True)
    want = []
    for r in range(3):
        for t in table.topics:
            got = [(s, d) for q, d, s in lines[f"r{r}"] if q == t]
            want += [d for s, d in sorted(got, reverse=True)]
    assert list(a.docno) == want == list(b.docno)
    assert np.array_equal(a.jidx, b.jidx) and np.array_equal(a.group_start, b.group_start)
    specs = [MeasureSpec("AP"), MeasureSpec("RR"), MeasureSpec("P", cutoff=5)]
    va, vb = a.evaluate(specs), b.evaluate(specs)
    assert all(np.array_equal(va[s], vb[s]) for s in specs)


def test_grown_table_keeps_arrow_docnos_equal_to_the_frames_table(tmp_path):
    # a table grown by every retrieved document (the selector's) keeps its docnos as Arrow when the
    # runs were read with Arrow; row for row they are those of the same alignment built from frames
    from pathlib import Path

    from pyterrier_noise.io import list_run_files, read_runs
    from pyterrier_noise.synthetic import default_collection
    root = Path(default_collection().write_trec(tmp_path / "coll"))
    files = list_run_files(root / "runs")
    table = JudgmentTable.from_qrels(root / "qrels.txt")
    args = dict(topics="runs", include_unjudged=True, on_topic_mismatch="ignore")
    arrow = AlignedRuns.build(files, table, **args).table
    frames = AlignedRuns.build(read_runs(files), table, **args).table
    assert arrow.docno_arrow is not None and frames.docno_arrow is None
    assert len(arrow) == len(frames) > len(table)
    assert np.array_equal(arrow.topic_index, frames.topic_index)
    whole = frames.docno
    rows = np.array([0, len(whole) - 1, 3, 3, 1])
    mask = np.arange(len(whole)) % 7 == 2
    for t in (arrow, frames):
        assert t.docnos_of(5) == whole[5] and isinstance(t.docnos_of(np.int64(5)), str)
        assert list(t.docnos_of(rows)) == list(whole[rows])
        assert list(t.docnos_of(mask)) == list(whole[mask])
        assert len(t.docnos_of(np.zeros(0, dtype=np.int64))) == 0
    assert list(arrow.docno) == list(whole)   # the object array, made when asked for
