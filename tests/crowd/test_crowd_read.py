"""Reading pairwise judgments: pyterrier_noise.crowd.read (Yang 2019 Sec. 5.1.2; seed note 004b Sec. 3)."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from crowd_helpers import rows

from pyterrier_noise import InputError
from pyterrier_noise.io import CoercionWarning
from pyterrier_noise.crowd import COLUMNS, read_pairwise, simulate_crowd


def test_read_roundtrip_through_csv(tmp_path, coll):
    j = simulate_crowd(coll.qrels[coll.qrels.qid.isin(["1", "2"])], missing=0.1, seed=3)
    path = tmp_path / "crowd.csv"
    j.to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        back = read_pairwise(path)
    # the only coercion: 'selected' whose preference answer is missing cannot be read
    unreadable = int(((j.absolute == "selected") & j.preferred.isna()).sum())
    assert unreadable > 0
    assert [str(w.message) for w in rec if issubclass(w.category, CoercionWarning)] == [
        f"{path}: {unreadable} 'absolute' answer(s) 'selected' have no 'preferred' answer to say which "
        f"document was selected; made missing"]
    assert list(back.columns) == COLUMNS
    for c in ("qid", "worker", "group", "left", "right", "preferred", "gold"):
        assert back[c].fillna("NA").tolist() == j[c].fillna("NA").tolist(), c
    expect_abs = j.absolute.where(~((j.absolute == "selected") & j.preferred.isna()))
    assert back.absolute.fillna("NA").tolist() == expect_abs.fillna("NA").tolist()
    np.testing.assert_array_equal(back.ratio_left.to_numpy(), j.ratio_left.to_numpy())
    np.testing.assert_array_equal(back.ratio_right.to_numpy(), j.ratio_right.to_numpy())


def test_read_aliases_spellings_and_extra_columns():
    f = pd.DataFrame({
        "Topic": [401, 401, 401, 401], "_worker_id": ["a", "a", "b", "b"], "doc_left": ["d1", "d2", "d1", "d3"],
        "doc_right": ["d2", "d3", "d3", "d2"], "Q1": ["L", "d3", "right", "Left"],
        "Q2": ["Option1", "option3", "2", "both"], "q3_left": [5, 1, 0, 4], "q3_right": [2, 3, 9, 1],
        "note": ["x", "y", "z", "w"]})
    with pytest.warns(CoercionWarning) as rec:
        j = read_pairwise(f)
    msgs = [str(w.message) for w in rec]
    assert any("column 'preferred': 3 value(s)" in m for m in msgs)     # L, d3 (a docno), Left
    assert any("column 'absolute': 3 value(s)" in m for m in msgs)      # Option1, option3, 2
    assert j.qid.tolist() == ["401"] * 4 and j.worker.tolist() == ["a", "a", "b", "b"]
    assert j.preferred.tolist() == ["left", "right", "right", "left"]
    assert j.absolute.tolist() == ["both", "none", "selected", "both"]
    assert j.ratio_left.tolist() == [5.0, 1.0, 0.0, 4.0]
    assert j.group.tolist() == [""] * 4          # no group column: one group per (worker, topic)
    assert j.note.tolist() == ["x", "y", "z", "w"]
    assert j.gold.isna().all()


def test_read_tsv_and_missing_answer_columns(tmp_path):
    path = tmp_path / "j.tsv"
    path.write_text("qid\tworker\tleft\tright\tpreferred\n1\tw\ta\tb\tleft\n1\tw\tb\tc\t\n")
    j = read_pairwise(path)
    assert j.preferred.tolist()[0] == "left" and pd.isna(j.preferred.iloc[1])
    assert j.absolute.isna().all() and j.ratio_left.isna().all()


@pytest.mark.parametrize("content, message", [
    ("qid,worker,left,preferred\n1,w,a,left\n", "missing column(s) ['right']"),
    ("qid,worker,left,right,preferred\n1,w,a,b,left\n1,w,c,c,left\n", "line 3 (data row 1), column 'right'"),
    ("qid,worker,left,right,preferred\n1,w,a,b,left\n1,w,a,b,maybe\n", "line 3 (data row 1), column 'preferred'"),
    ("qid,worker,left,right,absolute\n1,w,a,b,sometimes\n", "line 2 (data row 0), column 'absolute'"),
    ("qid,worker,left,right,ratio_left,ratio_right\n1,w,a,b,-1,2\n", "column 'ratio_left': ratio answers must be >= 0"),
    ("qid,worker,left,right,ratio_left,ratio_right\n1,w,a,b,x,2\n", "column 'ratio_left': expected a non-negative"),
    ("qid,worker,left,right,ratio_left\n1,w,a,b,2\n", "needs its partner 'ratio_right'"),
    ("qid,worker,left,right\n1,w,a,b\n", "no answer column"),
    ("qid,worker,left,right,preferred\n1,,a,b,left\n", "line 2 (data row 0), column 'worker': expected an identifier"),
    ("topic,qid,worker,left,right,preferred\n1,1,w,a,b,left\n", "both name the 'qid' column"),
])
def test_read_errors_name_line_and_column(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(InputError, match=None) as err:
        read_pairwise(path)
    assert message in str(err.value)


def test_read_frame_errors_name_row():
    f = rows(("a", "b", "left"), ("a", "b", "up"))
    with pytest.raises(InputError, match=r"row 1, column 'preferred'"):
        read_pairwise(f)


def test_read_coercions_are_counted():
    f = rows(("a", "b", np.nan, "selected", 1, np.nan), ("a", "c", "left", "selected", np.nan, 2),
             ("b", "c", "right", "both", 3, 4))
    with pytest.warns(CoercionWarning) as rec:
        j = read_pairwise(f)
    msgs = " | ".join(str(w.message) for w in rec)
    assert "1 'absolute' answer(s) 'selected' have no 'preferred'" in msgs
    assert "2 row(s) give a ratio number for only one of the two documents" in msgs
    assert pd.isna(j.absolute.iloc[0]) and j.absolute.iloc[1] == "selected"
    assert j.ratio_left.isna().tolist() == [True, True, False]


def test_public_names():
    import pyterrier_noise as pn
    import pyterrier_noise.crowd as crowd
    for name in crowd.__all__:
        assert getattr(crowd, name) is not None
    for name in ("read_pairwise", "aggregate", "METHODS", "workers_path", "SystemAgreement"):
        assert getattr(pn.crowd, name) is getattr(crowd, name)
    assert callable(crowd.aggregate)          # the function, not its module (crowd/aggregation.py)
