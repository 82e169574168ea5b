"""Oracles and durable judging sessions (Moffat, Webber & Zobel 2007; seed002 Sec. 2.7, Sec. 4 features 5-6, A6).

The session is tested with a small adaptive stand-in selector (``FakeSelector``, same interface as
``pyterrier_noise.selection.JudgmentSelector``) and, when that module exists, with the real one.
"""
from __future__ import annotations

import io
import math
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from pyterrier_noise import InputError
from pyterrier_noise.io import read_qrels
from pyterrier_noise.judges import PerturbationWarning
from pyterrier_noise.selection import (CallableOracle, JudgingSession, NoisyOracle, QrelsOracle, QuitJudging,
                                     SessionError, SessionLockedError, TerminalOracle, fingerprint_qrels,
                                     fingerprint_runs, read_docs_file, read_topics_file)

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent


class FakeSelector:
    """Adaptive stand-in for JudgmentSelector: w(q, d) = sum_s (1-p) p^rank_s(d) * (1 + R_q), where R_q
    counts the relevant documents judged in topic q so far (so the order depends on the labels, like
    Method C); ties by (qid, docno)."""

    def __init__(self, runs, p=0.8, method="C", initial_qrels=None, **settings):
        self.runs = runs
        self.settings = dict(p=p, method=method, initial_qrels=initial_qrels, **settings)
        allr = pd.concat(list(runs.values()), ignore_index=True)
        allr["c"] = (1 - p) * p ** allr["rank"].to_numpy(dtype=float)
        cand = allr.groupby(["qid", "docno"], sort=True)["c"].sum().reset_index()
        self.qid = cand["qid"].to_numpy(dtype=object)
        self.docno = cand["docno"].to_numpy(dtype=object)
        self.c = cand["c"].to_numpy()
        self.index = {k: i for i, k in enumerate(zip(self.qid, self.docno))}
        self.done = np.zeros(len(cand), dtype=bool)
        self.boost = {q: 0 for q in self.qid}
        self.n_judged = 0
        self.history = []
        if initial_qrels is not None:
            for q, d, lab in initial_qrels[["qid", "docno", "label"]].itertuples(index=False):
                if (q, d) in self.index:
                    self.done[self.index[(q, d)]] = True
                    self.boost[q] += lab >= 1

    def propose(self, n=1):
        w = self.c * (1 + np.array([self.boost[q] for q in self.qid]))
        idx = [i for i in np.flatnonzero(~self.done)]
        idx.sort(key=lambda i: (-w[i], self.qid[i], self.docno[i]))
        return [(self.qid[i], self.docno[i], float(w[i])) for i in idx[:n]]

    def _take(self, q, d):
        i = self.index[(q, d)]
        if self.done[i]:
            raise ValueError(f"{q} {d} handled twice")
        self.done[i] = True

    def record(self, qid, docno, label):
        self._take(qid, docno)
        self.boost[qid] += label >= 1
        self.n_judged += 1
        self.history.append(("judge", qid, docno, label))

    def bypass(self, qid, docno):
        self._take(qid, docno)
        self.history.append(("bypass", qid, docno, math.nan))

    def judged_qrels(self):
        return pd.DataFrame([h[1:] for h in self.history if h[0] == "judge"], columns=["qid", "docno", "label"])

    def bounds(self, p=None):
        return pd.DataFrame({"n_judged": [self.n_judged], "p": [p]})

    def system_bounds(self, p=None):
        return self.bounds(p)


def _child_prelude(fake: bool | None = None, patch_default: bool = True) -> str:
    """Code that gives a child process the selector a test uses: FakeSelector (its source, so the child
    does not import this test module) when ``fake`` -- by default when the real selector is missing."""
    if fake is None:
        fake = not _has_real_selector()
    if not fake:
        return "FakeSelector = None\n"
    import inspect
    code = "import math\nimport numpy as np\nimport pandas as pd\n" + inspect.getsource(FakeSelector)
    if patch_default:
        code += ("import pyterrier_noise.selection.session as _m\n"
                 "_m._default_factory = lambda runs, **kw: FakeSelector(runs, **kw)\n")
    return code


def _real_factory():
    return None  # the session's default factory (the real JudgmentSelector)


@pytest.fixture(params=["fake", "real"])
def factory(request):
    return FakeSelector if request.param == "fake" else _real_factory()


pytestmark = pytest.mark.collection(n_topics=5, n_systems=6, n_docs_per_topic=60, depth=20, pool_depth=5, seed=3)


def steps(session):
    h = session.history
    return list(zip(h["action"], h["qid"], h["docno"], h["label"].fillna(-1), h["weight"]))


# ---------------------------------------------------------------------------------------------
# oracles

def test_qrels_oracle_missing_policies(coll):
    q = coll.qrels
    qid, docno, label = q.iloc[3]
    nonrel = QrelsOracle(q)
    assert nonrel.judge(qid, docno) == label
    assert nonrel.judge("1", "no-such-doc") == 0.0
    assert (nonrel.n_asked, nonrel.n_missing) == (2, 1)
    bypass = QrelsOracle(q, missing="bypass")
    assert bypass.judge("1", "no-such-doc") is None
    assert bypass(qid, docno, weight=0.3) == label  # context is ignored
    # every judged pair is answered with its label
    assert [nonrel.judge(a, b) for a, b in zip(q["qid"], q["docno"])] == q["label"].tolist()
    with pytest.raises(InputError, match="missing"):
        QrelsOracle(q, missing="skip")


def test_noisy_flips_extremes_and_passthrough(coll):
    q = coll.true_qrels
    base = QrelsOracle(q, missing="bypass")
    keys = list(zip(q["qid"], q["docno"]))
    truth = np.array([base.judge(a, b) for a, b in keys])
    same = NoisyOracle(base, tpr=1.0, fpr=0.0, seed=1)
    assert np.array_equal([same.judge(a, b) for a, b in keys], truth)
    with pytest.warns(PerturbationWarning, match=r"tpr=0 <= fpr=1: this judge is no better than chance"):
        inverted = NoisyOracle(base, tpr=0.0, fpr=1.0, seed=1)
    got = np.array([inverted.judge(a, b) for a, b in keys])
    assert np.array_equal(got, np.where(truth >= 1, 0.0, 1.0))
    assert inverted.judge("1", "not-judged") is None  # bypass passes through


def test_noisy_oracle_deterministic_per_key_and_order_free():
    truth = {("q%d" % (i % 7), "d%d" % i): float(i % 3 == 0) for i in range(600)}
    base = CallableOracle(lambda q, d: truth[(q, d)])
    keys = list(truth)
    a = NoisyOracle(base, tpr=0.7, fpr=0.2, seed=5, documents=keys)
    first = [a.judge(*k) for k in keys]
    again = [a.judge(*k) for k in keys]
    b = NoisyOracle(base, tpr=0.7, fpr=0.2, seed=5, documents=keys)
    backwards = [b.judge(*k) for k in reversed(keys)][::-1]
    assert first == again == backwards
    # a fresh oracle whose first question is any one key (each draws its whole table: a spread of 40 keys)
    for i in range(0, len(keys), 15):
        assert NoisyOracle(base, tpr=0.7, fpr=0.2, seed=5, documents=keys).judge(*keys[i]) == first[i]
    o = NoisyOracle(base, tpr=0.7, fpr=0.2, seed=6, documents=keys)
    other = [o.judge(*k) for k in keys]
    assert other != first


def test_noisy_flip_rates_match_tpr_fpr():
    n = 4000
    rel = {("q", f"r{i}"): 1.0 for i in range(n)}
    non = {("q", f"n{i}"): 0.0 for i in range(n)}
    truth = {**rel, **non}
    o = NoisyOracle(CallableOracle(lambda q, d: truth[(q, d)]), tpr=0.93, fpr=0.07, seed=0, documents=list(truth))
    kept = sum(o.judge(*k) == 1.0 for k in rel)
    on = sum(o.judge(*k) == 1.0 for k in non)
    assert stats.binomtest(kept, n, 0.93).pvalue > 1e-4
    assert stats.binomtest(on, n, 0.07).pvalue > 1e-4
    # graded: a flipped-on document gets on_label, a flipped-off one off_label
    with pytest.warns(PerturbationWarning, match=r"tpr=0 <= fpr=0: this judge is no better than chance"):
        g = NoisyOracle(CallableOracle(lambda q, d: 2.0), tpr=0.0, fpr=0.0, seed=0, documents=[("q", "x")])
    assert g.judge("q", "x") == 0.0
    with pytest.warns(PerturbationWarning, match=r"tpr=1 <= fpr=1: this judge is no better than chance"):
        g = NoisyOracle(CallableOracle(lambda q, d: 0.0), tpr=1.0, fpr=1.0, on_label=2, seed=0, documents=[("q", "x")])
    assert g.judge("q", "x") == 2.0


def test_noisy_confusion_matrix():
    labels = [0, 1, 2]
    perm = np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0]], dtype=float)
    truth = {("q", f"d{i}"): float(i % 3) for i in range(30)}
    base = CallableOracle(lambda q, d: truth[(q, d)])
    o = NoisyOracle(base, confusion=perm, labels=labels, seed=2, documents=list(truth))
    assert [o.judge(*k) for k in truth] == [float((int(v) + 2) % 3) for v in truth.values()]
    # sampled distribution of one row against the row (chi-square goodness of fit)
    m = np.array([[0.7, 0.2, 0.1], [0.3, 0.5, 0.2], [0.05, 0.15, 0.8]])
    frame = pd.DataFrame(m, index=labels, columns=labels)
    many = {("q", f"x{i}"): 1.0 for i in range(3000)}
    o = NoisyOracle(CallableOracle(lambda q, d: many[(q, d)]), confusion=frame, seed=9, documents=list(many))
    counts = pd.Series([o.judge(*k) for k in many]).value_counts().reindex([0.0, 1.0, 2.0], fill_value=0)
    assert stats.chisquare(counts.to_numpy(), m[1] * 3000).pvalue > 1e-4
    with pytest.raises(InputError, match="not one of the confusion matrix labels"):
        NoisyOracle(CallableOracle(lambda q, d: 5.0), confusion=m, seed=0, documents=[("q", "d")]).judge("q", "d")


@pytest.mark.parametrize("kwargs, match", [
    ({"tpr": 0.9}, "both 'tpr' and 'fpr'"),
    ({"tpr": 1.2, "fpr": 0.1}, r"tpr must be a probability in \[0, 1\], got 1.2"),
    ({"tpr": 0.9, "fpr": 0.1, "confusion": np.eye(2)}, "not both"),
    ({"confusion": [[0.5, 0.4], [0, 1]]}, "row 0 sums to"),
    ({"confusion": [[1.5, -0.5], [0, 1]]}, "row 0, column 1"),
    ({"confusion": np.eye(3), "labels": [0, 1]}, "3 labels|2 labels"),
    ({"confusion": np.ones((2, 3)) / 3}, "square"),
    ({"tpr": 0.9, "fpr": 0.1, "seed": -1}, "seed"),
])
def test_noisy_oracle_validation(kwargs, match):
    with pytest.raises(InputError, match=match):
        NoisyOracle(CallableOracle(lambda q, d: 1.0), **kwargs)


def test_noisy_oracle_accepts_perturbation_models():
    class Flips:  # any object with the rates works
        tpr, fpr = 0.0, 1.0
    with pytest.warns(PerturbationWarning, match=r"tpr=0 <= fpr=1: this judge is no better than chance"):
        o = NoisyOracle(CallableOracle(lambda q, d: 1.0), Flips(), documents=[("q", "d")])
    with pytest.warns(PerturbationWarning, match=r"the qrels hold no non-relevant judgment: fpr=1 cannot act"):
        assert (o.tpr, o.fpr) == (0.0, 1.0) and o.judge("q", "d") == 0.0
    pm = pytest.importorskip("pyterrier_noise.judges")
    truth = {("q%d" % (i % 4), "d%d" % i): float(i % 3) for i in range(300)}
    base = CallableOracle(lambda q, d: truth[(q, d)])
    via_model = NoisyOracle(base, pm.RandomFlips(tpr=0.8, fpr=0.2, on_label=2, seed=7), documents=list(truth))
    direct = NoisyOracle(base, tpr=0.8, fpr=0.2, on_label=2, seed=7, documents=list(truth))
    assert (via_model.seed, via_model.on_label) == (7, 2.0)
    assert [via_model.judge(*k) for k in truth] == [direct.judge(*k) for k in truth]
    m = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.0, 0.2, 0.8]])
    via_model = NoisyOracle(base, pm.ConfusionJudge(m, labels=[0, 1, 2], seed=3), documents=list(truth))
    direct = NoisyOracle(base, confusion=m, labels=[0, 1, 2], seed=3, documents=list(truth))
    assert [via_model.judge(*k) for k in truth] == [direct.judge(*k) for k in truth]
    with pytest.raises(InputError, match="fixed seed"):
        NoisyOracle(base, pm.RandomFlips(tpr=0.8, fpr=0.2, seed=None))


def _noisy_labels_by_table(oracle, model, seed):
    """What the judges' model draws over the oracle's table: {(qid, docno): label}."""
    table = oracle.table
    lab = model.sample_labels(table, 1, seed=seed)[:, 0]
    f = table.frame
    return dict(zip(zip(f["qid"], f["docno"]), lab.tolist()))


@pytest.mark.parametrize("kind", ["flips", "confusion", "removal"])
def test_noisy_oracle_gives_the_judges_sample_labels_in_any_order(coll, kind):
    """One random scheme: NoisyOracle answers exactly model.sample_labels(table, 1, seed) -- the
    judges' stream over the oracle's table -- whichever order the documents are asked in."""
    judges = pytest.importorskip("pyterrier_noise.judges")
    from pyterrier_noise.engine import JudgmentTable
    q = coll.true_qrels
    model = {"flips": lambda: judges.RandomFlips(tpr=0.7, fpr=0.2, seed=11),
             "confusion": lambda: judges.ConfusionJudge(np.array([[0.8, 0.2], [0.3, 0.7]]), labels=[0, 1], seed=11),
             "removal": lambda: judges.RandomRemoval(0.3, seed=11)}[kind]()
    if kind == "confusion":
        q = q.assign(label=(q["label"] >= 1).astype(float))
    keys = list(zip(q["qid"], q["docno"]))
    want = model.sample_labels(JudgmentTable.from_qrels(q), 1, seed=11)[:, 0]
    f = JudgmentTable.from_qrels(q).frame
    expected = dict(zip(zip(f["qid"], f["docno"]), [None if y != y else y for y in want.tolist()]))
    forward = NoisyOracle(QrelsOracle(q), model)
    got_forward = {k: forward.judge(*k) for k in keys}
    rng = np.random.default_rng(0)
    backward = NoisyOracle(QrelsOracle(q), model)
    got_shuffled = {keys[i]: backward.judge(*keys[i]) for i in rng.permutation(len(keys))}
    assert got_forward == got_shuffled == expected
    assert sum(got_forward[k] != lab for k, lab in zip(keys, q["label"])) > 0   # the model did something


def test_noisy_oracle_in_a_session_draws_over_qrels_and_candidates(tmp_path, coll):
    """With missing="nonrel" the table is the qrels extended by every retrieved document (label 0),
    and the session's labels are the judges' sample over that table, also after a resume."""
    judges = pytest.importorskip("pyterrier_noise.judges")
    model = judges.RandomFlips(tpr=0.8, fpr=0.1, seed=4)
    oracle = NoisyOracle(QrelsOracle(coll.true_qrels), model)
    with JudgingSession(tmp_path / "a.sqlite", coll.runs, method="C", p=0.8) as s:
        s.run(oracle, budget=15)
    retrieved = pd.concat([r[["qid", "docno"]] for r in coll.runs.values()]).drop_duplicates()
    assert len(oracle.table) == len(pd.concat([coll.true_qrels[["qid", "docno"]], retrieved]).drop_duplicates())
    expected = _noisy_labels_by_table(oracle, model, 4)
    again = NoisyOracle(QrelsOracle(coll.true_qrels), judges.RandomFlips(tpr=0.8, fpr=0.1, seed=4))
    with JudgingSession(tmp_path / "b.sqlite", coll.runs, method="C", p=0.8) as s:
        s.run(again, budget=7)
    with JudgingSession(tmp_path / "b.sqlite") as s:
        s.run(again, budget=15)
        h = s.history
    assert all(expected[(q, d)] == y for q, d, y in zip(h["qid"], h["docno"], h["label"]))
    with JudgingSession(tmp_path / "a.sqlite") as s:
        assert s.history[["qid", "docno", "label"]].equals(h[["qid", "docno", "label"]])
    with pytest.raises(InputError, match="change its draws"):
        again.bind([("no-such-topic", "d1")])
    with pytest.raises(InputError, match="not in its table"), pytest.warns(PerturbationWarning, match=r"the qrels hold no non-relevant judgment: fpr=0.1 cannot act"):
        NoisyOracle(CallableOracle(lambda q, d: 1.0), tpr=0.9, fpr=0.1, documents=[("q", "a")]).judge("q", "b")


def test_keyboard_interrupt_propagates_and_the_session_keeps_its_steps(tmp_path, coll):
    base = QrelsOracle(coll.qrels)
    calls = {"n": 0}

    def oracle(q, d):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return base.judge(q, d)
    path = tmp_path / "ki.sqlite"
    s = JudgingSession(path, coll.runs, method="A")
    with pytest.raises(KeyboardInterrupt):
        s.run(oracle, budget=10)
    assert s.n_judged == 3 and not s.closed       # interrupted while asking: nothing in doubt
    s.run(base, budget=5)
    assert s.n_judged == 5
    # an interrupt in the middle of committing a judgment: rolled back, passed on (not a
    # SessionError), and the session closed since its selector is ahead of the file
    real, writes = s._store.write, {"n": 0}   # the session file's one transaction per write

    def interrupted_write(fn):
        writes["n"] += 1
        if writes["n"] == 2:   # the first serves the document, the second commits its judgment
            def cut(c):
                fn(c)
                raise KeyboardInterrupt
            return real(cut)
        return real(fn)
    s._store.write = interrupted_write
    with pytest.raises(KeyboardInterrupt):
        s.run(base, budget=8)
    assert s.closed
    with JudgingSession(path) as again:
        assert again.n_judged == 5
        assert again.run(base, budget=8).n_judged == 8


def test_callable_oracle_validates():
    assert CallableOracle(lambda q, d: np.int64(2)).judge("q", "d") == 2.0
    assert CallableOracle(lambda q, d: None).judge("q", "d") is None
    with pytest.raises(InputError, match="finite number"):
        CallableOracle(lambda q, d: "rel").judge("q", "d")
    with pytest.raises(InputError, match="finite number"):
        CallableOracle(lambda q, d: float("nan")).judge("q", "d")
    with pytest.raises(InputError, match="function"):
        CallableOracle(3)


def test_terminal_oracle_reasks_and_shows_context():
    answers = iter(["", "yes", "3", " 2 "])
    out = io.StringIO()
    o = TerminalOracle(labels=(0, 1, 2), topics=pd.DataFrame({"qid": ["7"], "query": ["masks and covid"]}),
                       text={"d9": "Masks   reduce\ntransmission."}, input_fn=lambda prompt: next(answers),
                       output=out)
    assert o.judge("7", "d9", weight=0.25, n_judged=4, budget=10) == 2.0
    shown = out.getvalue()
    assert "judgment 5 of 10 | topic 7 | document d9 | weight 0.25" in shown
    assert "masks and covid" in shown and "Masks reduce transmission." in shown
    assert shown.count("is not an answer") == 3


def test_terminal_oracle_skip_quit_eof(monkeypatch):
    answers = iter(["s", "q"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    o = TerminalOracle(labels=(0, 1), output=io.StringIO())
    assert o.judge("1", "d") is None
    with pytest.raises(QuitJudging):
        o.judge("1", "d")

    def eof(prompt=""):
        raise EOFError
    with pytest.raises(QuitJudging):
        TerminalOracle(input_fn=eof, output=io.StringIO()).judge("1", "d")
    with pytest.raises(InputError, match="distinct"):
        TerminalOracle(labels=(1, 1))


def test_topics_and_docs_files(tmp_path):
    (tmp_path / "t.txt").write_text("1\tcovid origin\n2 masks work\n")
    t = read_topics_file(tmp_path / "t.txt")
    assert t.to_dict("list") == {"qid": ["1", "2"], "query": ["covid origin", "masks work"]}
    (tmp_path / "t.trec").write_text("<top>\n<num> Number: 401\n<title> foreign minorities\n</top>\n")
    assert read_topics_file(tmp_path / "t.trec").iloc[0].tolist() == ["401", "foreign minorities"]
    (tmp_path / "d.trec").write_text("<DOC>\n<DOCNO> 12 </DOCNO>\nsome <b>text</b>\n</DOC>\n")
    assert read_docs_file(tmp_path / "d.trec") == {"12": "some text"}
    (tmp_path / "d.tsv").write_text("a\tfirst doc\n")
    assert read_docs_file(tmp_path / "d.tsv") == {"a": "first doc"}


# ---------------------------------------------------------------------------------------------
# fingerprints

def test_fingerprint_order_free_and_sensitive(coll):
    fp = fingerprint_runs(coll.runs)
    shuffled = {n: coll.runs[n].sample(frac=1.0, random_state=1) for n in reversed(list(coll.runs))}
    assert fingerprint_runs(shuffled) == fp
    changed = {n: r.copy() for n, r in coll.runs.items()}
    changed["run02"].loc[5, "rank"] += 1
    assert fingerprint_runs(changed) != fp
    renamed = dict(coll.runs)
    renamed["other"] = renamed.pop("run06")
    assert fingerprint_runs(renamed) != fp
    dup = {"r": pd.DataFrame({"qid": "1", "docno": ["a", "b", "a"], "score": [3.0, 2.0, 1.0], "rank": [0, 1, 2]})}
    fp_dup = fingerprint_runs(dup)
    assert fingerprint_runs({"r": dup["r"].iloc[[2, 0, 1]]}) == fp_dup
    assert fingerprint_runs({"r": dup["r"].assign(rank=[2, 1, 0])}) != fp_dup
    q = coll.qrels
    assert fingerprint_qrels(q.iloc[::-1]) == fingerprint_qrels(q)
    q2 = q.copy()
    q2.loc[0, "label"] = 1 - q2.loc[0, "label"]
    assert fingerprint_qrels(q2) != fingerprint_qrels(q)


# ---------------------------------------------------------------------------------------------
# sessions

def test_manual_loop_guards_and_reopen(tmp_path, coll, factory):
    path = tmp_path / "s.sqlite"
    oracle = QrelsOracle(coll.true_qrels)
    with JudgingSession(path, runs=coll.runs, method="C", selector_factory=factory) as s:
        first = s.next()
        assert s.next() == first  # served, still pending
        s.record(first[0], first[1], oracle.judge(first[0], first[1]))
        with pytest.raises(SessionError, match="already judged"):
            s.record(first[0], first[1], 1)
        with pytest.raises(SessionError, match="not proposed"):
            s.record("1", "d1-00000", 1)
        batch = s.propose(3)
        s.bypass(batch[1][0], batch[1][1])
        with pytest.raises(SessionError, match="already bypassed"):
            s.record(batch[1][0], batch[1][1], 0)
        s.record(batch[2][0], batch[2][1], 1)  # any served document, in any order
        with pytest.raises(InputError, match="finite number"):
            s.record(batch[0][0], batch[0][1], float("nan"))
        before = steps(s)
        pend = s.pending
        nxt = s.selector.propose(2)
        assert (s.n_judged, s.n_bypassed) == (2, 1)
    assert pend == [batch[0]]
    with JudgingSession(path, selector_factory=factory) as r:  # no runs, no settings: all stored
        assert steps(r) == before
        assert r.pending == pend
        assert r.selector.propose(2) == nxt
        assert (r.n_judged, r.n_bypassed) == (2, 1)
        assert r.next() == pend[0]
        qr = r.judged_qrels()
        assert list(zip(qr["qid"], qr["docno"])) == [first[:2], batch[2][:2]]
        assert qr["label"].tolist() == [oracle.judge(*first[:2]), 1.0]


def test_reopen_refuses_other_runs_or_settings(tmp_path, coll):
    path = tmp_path / "s.sqlite"
    JudgingSession(path, runs=coll.runs, method="C", p=0.8, selector_factory=FakeSelector).close()
    other = {n: r.copy() for n, r in coll.runs.items()}
    other["run01"] = other["run01"].iloc[:-1]
    with pytest.raises(SessionError, match="not the runs the session was created with"):
        JudgingSession(path, runs=other, selector_factory=FakeSelector)
    with pytest.raises(SessionError, match="runs not in the session"):
        JudgingSession(path, runs={**coll.runs, "extra": coll.runs["run01"]}, selector_factory=FakeSelector)
    with pytest.raises(SessionError, match="created with method='C', not 'A'"):
        JudgingSession(path, runs=coll.runs, method="A", selector_factory=FakeSelector)
    with pytest.raises(SessionError, match="p=0.8"):
        JudgingSession(path, p=0.95, selector_factory=FakeSelector)
    reordered = {n: coll.runs[n] for n in reversed(list(coll.runs))}
    with JudgingSession(path, runs=reordered, method="C", p=0.8, power=3, selector_factory=FakeSelector) as s:
        assert list(s.selector.runs) == list(coll.runs)  # the stored order, the stored copy
        for n in coll.runs:
            pd.testing.assert_frame_equal(s.selector.runs[n], coll.runs[n][["qid", "docno", "score", "rank"]],
                                          check_dtype=False)


def test_open_errors(tmp_path, coll):
    with pytest.raises(SessionError, match="no such session file"):
        JudgingSession(tmp_path / "none.sqlite", create=False, selector_factory=FakeSelector)
    with pytest.raises(SessionError, match="needs the runs"):
        JudgingSession(tmp_path / "new.sqlite", selector_factory=FakeSelector)
    assert not (tmp_path / "new.sqlite").exists()  # nothing left behind
    with pytest.raises(InputError, match="'p'"):
        JudgingSession(tmp_path / "new.sqlite", runs=coll.runs, p=1.5, selector_factory=FakeSelector)
    assert not (tmp_path / "new.sqlite").exists()
    (tmp_path / "text.sqlite").write_text("not a database at all, just some text " * 20)
    with pytest.raises(SessionError, match="not a judging session"):
        JudgingSession(tmp_path / "text.sqlite", runs=coll.runs, selector_factory=FakeSelector)
    other = sqlite3.connect(tmp_path / "other.sqlite")
    other.execute("CREATE TABLE x(a)")
    other.commit()
    other.close()
    with pytest.raises(SessionError, match="not a pyterrier-noise judging session"):
        JudgingSession(tmp_path / "other.sqlite", runs=coll.runs, selector_factory=FakeSelector)


@pytest.mark.parametrize("schema", ["CREATE TABLE notes(id INTEGER, body TEXT); INSERT INTO notes VALUES (1, 'x')",
                                    "CREATE TABLE meta(key TEXT, value TEXT); INSERT INTO meta VALUES ('format', 'v2')",
                                    "CREATE TABLE meta(a)"])
@pytest.mark.parametrize("create", [True, False])
def test_a_foreign_sqlite_file_is_refused_untouched(tmp_path, coll, schema, create):
    """Another application's SQLite file (rollback journal) is refused before any PRAGMA that writes:
    its bytes stay the same, and no -wal file appears."""
    path = tmp_path / "app.sqlite"
    other = sqlite3.connect(path)
    other.executescript(schema)
    other.commit()
    other.close()
    before = path.read_bytes()
    kw = {"runs": coll.runs} if create else {"create": False}
    with pytest.raises(SessionError, match="not a pyterrier-noise judging session .*the file was not changed"):
        JudgingSession(path, selector_factory=FakeSelector, **kw)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_concurrent_writers_are_refused(tmp_path, coll):
    path = tmp_path / "s.sqlite"
    s = JudgingSession(path, runs=coll.runs, selector_factory=FakeSelector)
    with pytest.raises(SessionLockedError, match="open in another process"):
        JudgingSession(path, selector_factory=FakeSelector)
    code = (_child_prelude(True, False) + "from pyterrier_noise.selection import JudgingSession, SessionLockedError\n"
            "try:\n"
            f"    JudgingSession({str(path)!r}, selector_factory=FakeSelector)\n"
            "except SessionLockedError as e:\n"
            "    print('LOCKED', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.stdout.startswith("LOCKED"), out.stderr
    s.close()
    with JudgingSession(path, selector_factory=FakeSelector) as again:  # reopened, nothing written yet
        assert again.n_judged == 0
        with pytest.raises(SessionLockedError):
            JudgingSession(path, selector_factory=FakeSelector)


def test_each_step_is_committed_before_the_next_is_served(tmp_path, coll):
    path = tmp_path / "s.sqlite"
    qo = QrelsOracle(coll.true_qrels)
    seen = []
    with JudgingSession(path, runs=coll.runs, selector_factory=FakeSelector) as s:
        def judge(q, d):
            # at each question, nothing is in flight and every earlier answer is in the file
            assert not s._store.connection.in_transaction
            seen.append(s._store.connection.execute("SELECT count(*) FROM events").fetchone()[0])
            assert s._store.connection.execute("SELECT count(*) FROM served WHERE qid=? AND docno=?", (q, d)).fetchone()[0] == 1
            return qo.judge(q, d)
        s.run(judge, budget=8)
        journal = s._store.connection.execute("PRAGMA journal_mode").fetchone()[0]
        sync = s._store.connection.execute("PRAGMA synchronous").fetchone()[0]
    assert seen == list(range(8))
    assert journal == "wal" and sync == 2  # FULL


def test_qrels_oracle_steps_skip_the_disk_wait_and_end_synced(tmp_path, coll):
    # an oracle with reproducible answers (qrels): every step is still committed before the next
    # document is served, without waiting for the disk (synchronous=NORMAL); a person's or a
    # function's answers keep synchronous=FULL; the run ends with FULL again and every step in the file
    path = tmp_path / "s.sqlite"
    qo = QrelsOracle(coll.true_qrels)
    seen = []
    with JudgingSession(path, runs=coll.runs, selector_factory=FakeSelector) as s:
        def check(event):
            conn = s._store.connection
            assert not conn.in_transaction
            seen.append((conn.execute("SELECT count(*) FROM events").fetchone()[0],
                         conn.execute("PRAGMA synchronous").fetchone()[0]))
        s.run(qo, budget=6, on_step=check)
        after = s._store.connection.execute("PRAGMA synchronous").fetchone()[0]
        s.run(lambda q, d: qo.judge(q, d), budget=9, on_step=check)
    assert seen == [(n, 1) for n in range(1, 7)] + [(n, 2) for n in range(7, 10)]   # NORMAL, then FULL
    assert after == 2
    with JudgingSession(path, selector_factory=FakeSelector) as again:
        assert again.n_judged == 9


def test_run_in_parts_equals_one_run_and_bypass_does_not_count(tmp_path, coll, factory):
    qo = QrelsOracle(coll.qrels, missing="bypass")  # pooled qrels: many proposals are unjudged
    with JudgingSession(tmp_path / "a.sqlite", runs=coll.runs, selector_factory=factory) as a:
        rep = a.run(qo, budget=25)
        whole = steps(a)
    assert rep.reason == "budget" and rep.judged == 25 and rep.bypassed > 0
    assert sum(x[0] == "judge" for x in whole) == 25
    assert rep.bypassed == sum(x[0] == "bypass" for x in whole)
    with JudgingSession(tmp_path / "b.sqlite", runs=coll.runs, selector_factory=factory) as b:
        assert b.run(qo, budget=10).n_judged == 10
        assert b.run(qo, budget=25, max_steps=3).reason == "limit"
    with JudgingSession(tmp_path / "b.sqlite", selector_factory=factory) as b:
        b.run(qo, budget=25)
        assert steps(b) == whole
        assert b.run(qo, budget=25).judged == 0  # already there


def test_exhausting_candidates_and_quit(tmp_path):
    runs = {"a": pd.DataFrame({"qid": "1", "docno": ["x", "y", "z"], "score": [3.0, 2.0, 1.0], "rank": [0, 1, 2]}),
            "b": pd.DataFrame({"qid": "1", "docno": ["y", "w"], "score": [2.0, 1.0], "rank": [0, 1]})}
    with JudgingSession(tmp_path / "s.sqlite", runs=runs, selector_factory=FakeSelector) as s:
        calls = []

        def judge(q, d):
            calls.append(d)
            if len(calls) == 3:
                raise QuitJudging
            return 1
        rep = s.run(judge)
        assert rep.reason == "quit" and rep.judged == 2
        assert s.pending == [(q, d, w) for q, d, w in s.pending] and len(s.pending) == 1
        rep = s.run(lambda q, d: 0)
        assert rep.reason == "exhausted" and s.n_judged == 4
        assert s.next() is None
        assert sorted(s.judged_qrels()["docno"]) == ["w", "x", "y", "z"]


def test_initial_qrels_and_export(tmp_path, coll, factory):
    init = coll.qrels[coll.qrels["qid"] == "1"].head(10)
    path = tmp_path / "s.sqlite"
    with JudgingSession(path, runs=coll.runs, initial_qrels=init, selector_factory=factory) as s:
        s.run(QrelsOracle(coll.true_qrels), budget=12)
        judged = s.judged_qrels()
        proposed = set(zip(s.history["qid"], s.history["docno"]))
        exported = s.export_qrels(tmp_path / "out" / "qrels.txt")
        assert s.n_judged == 12
    assert not proposed & set(zip(init["qid"], init["docno"]))  # known judgments are not asked again
    assert len(judged) == 22
    back = read_qrels(tmp_path / "out" / "qrels.txt")
    pd.testing.assert_frame_equal(back.reset_index(drop=True), judged.reset_index(drop=True), check_dtype=False)
    pd.testing.assert_frame_equal(exported, judged)
    truth = QrelsOracle(coll.true_qrels)
    tail = judged.iloc[10:]
    assert tail["label"].tolist() == [truth.judge(a, b) for a, b in zip(tail["qid"], tail["docno"])]
    with pytest.raises(SessionError, match="initial qrels"):
        JudgingSession(path, initial_qrels=init.head(3), selector_factory=factory)


def test_batches_resume_mid_batch(tmp_path, coll):
    qo = QrelsOracle(coll.true_qrels)
    with JudgingSession(tmp_path / "a.sqlite", runs=coll.runs, batch_size=4, selector_factory=FakeSelector) as a:
        a.run(qo, budget=14)
        whole = steps(a)
    with JudgingSession(tmp_path / "b.sqlite", runs=coll.runs, batch_size=4, selector_factory=FakeSelector) as b:
        b.run(qo, budget=6)  # stops inside the second batch of 4
        assert len(b.pending) == 2
    with JudgingSession(tmp_path / "b.sqlite", selector_factory=FakeSelector) as b:
        assert len(b.pending) == 2
        b.run(qo, budget=14)
        assert steps(b) == whole
    # (a fresh greedy proposal after 6 would differ: the batch is what an uninterrupted session judges)


_CHILD = """
import sys, time
from pyterrier_noise.synthetic import make_collection
from pyterrier_noise.selection import JudgingSession, QrelsOracle, NoisyOracle
c = make_collection(n_topics=5, n_systems=6, n_docs_per_topic=60, depth=20, pool_depth=5, seed=3)
oracle = NoisyOracle(QrelsOracle(c.true_qrels), tpr=0.8, fpr=0.1, seed=4)
def slow(q, d):
    time.sleep({delay})
    return oracle.judge(q, d)
s = JudgingSession({path!r}, runs=c.runs, method="C", selector_factory={factory})
print("open", flush=True)
s.run(slow, budget={budget}, on_step=lambda e: print(e.seq, e.action, e.qid, e.docno, e.label, flush=True))
print("finished", flush=True)
"""


def test_sigkill_loses_nothing_and_resumes_identically(tmp_path, coll, factory):
    budget, kill_after = 30, 9
    path = tmp_path / "killed.sqlite"
    code = _child_prelude(factory is FakeSelector, False) + _CHILD.format(delay=0.02, path=str(path), budget=budget,
                                                 factory="FakeSelector" if factory is FakeSelector else "None")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=REPO)
    reported = []
    try:
        assert child.stdout.readline().strip() == "open", child.stderr.read()
        while len(reported) < kill_after:
            line = child.stdout.readline()
            assert line, child.stderr.read()
            reported.append(line.split())
        os.kill(child.pid, signal.SIGKILL)
        rest, _ = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    reported += [line.split() for line in rest.splitlines()]
    assert "finished" not in rest and len(reported) < budget
    oracle = NoisyOracle(QrelsOracle(coll.true_qrels), tpr=0.8, fpr=0.1, seed=4)
    with JudgingSession(path, runs=coll.runs, selector_factory=factory) as s:
        h = s.history
        assert len(h) >= len(reported)  # every step the child reported as committed is in the file
        for (seq, action, q, d, label), row in zip(reported, h.itertuples()):
            assert (int(seq), action, q, d, float(label)) == (row.seq, row.action, row.qid, row.docno, row.label)
        s.run(oracle, budget=budget)
        resumed = steps(s)
    with JudgingSession(tmp_path / "whole.sqlite", runs=coll.runs, method="C", selector_factory=factory) as w:
        w.run(oracle, budget=budget)
        assert steps(w) == resumed
    assert sum(x[0] == "judge" for x in resumed) == budget


@settings(max_examples=5, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=4),
       batch=st.integers(min_value=1, max_value=3))
def test_any_sequence_of_interruptions_gives_the_same_session(tmp_path_factory, coll, cuts, batch):
    """Property: stopping after any numbers of steps and reopening never changes the judged sequence."""
    tmp = tmp_path_factory.mktemp("prop")
    qo = NoisyOracle(QrelsOracle(coll.qrels, missing="bypass"), tpr=0.9, fpr=0.05, seed=1)
    with JudgingSession(tmp / "a.sqlite", runs=coll.runs, batch_size=batch, selector_factory=FakeSelector) as a:
        a.run(qo, budget=12)
        whole = steps(a)
    for cut in cuts:
        with JudgingSession(tmp / "b.sqlite", runs=coll.runs, batch_size=batch, selector_factory=FakeSelector) as b:
            b.run(qo, budget=12, max_steps=cut)
    with JudgingSession(tmp / "b.sqlite", selector_factory=FakeSelector) as b:
        b.run(qo, budget=12)
        assert steps(b) == whole


# ---------------------------------------------------------------------------------------------
# the command line

def _trec_files(coll, tmp_path):
    d = coll.write_trec(tmp_path / "coll")
    return d, d / "runs", d / "true_qrels.txt"


def _cli_factory(monkeypatch):
    """The selector the command line uses in these tests: the real one, or FakeSelector while it is missing."""
    if _has_real_selector():
        return None
    import pyterrier_noise.selection.session as session_mod
    monkeypatch.setattr(session_mod, "_default_factory", lambda runs, **kw: FakeSelector(runs, **kw))
    return FakeSelector


def test_cli_scripted_resume_and_export(tmp_path, coll, capsys, monkeypatch):
    from pyterrier_noise import cli
    factory = _cli_factory(monkeypatch)
    d, runs_dir, qrels = _trec_files(coll, tmp_path)
    sess = tmp_path / "cli.sqlite"
    assert cli.main(["judge", "--session", str(sess), "--method", "C", "-m", "RBP(p=0.8)", "--budget", "7",
                     "--qrels", str(qrels), str(runs_dir)]) == 0
    assert "7 judgments (7 new)" in capsys.readouterr().out
    assert cli.main(["judge", "--session", str(sess), "--budget", "12", "--qrels", str(qrels)]) == 0
    assert "12 judgments (5 new)" in capsys.readouterr().out
    assert cli.main(["judge", "--session", str(sess), "--export", str(tmp_path / "q.txt")]) == 0
    with JudgingSession(tmp_path / "ref.sqlite", runs=coll.runs, selector_factory=factory) as ref:
        ref.run(QrelsOracle(coll.true_qrels), budget=12)
        expected = ref.judged_qrels()
    got = read_qrels(tmp_path / "q.txt")
    assert list(zip(got["qid"], got["docno"], got["label"])) == \
        list(zip(expected["qid"], expected["docno"], expected["label"]))
    # other settings on resume: a sentence, exit status 2
    assert cli.main(["judge", "--session", str(sess), "--method", "A", "--qrels", str(qrels)]) == 2
    assert "created with method='C'" in capsys.readouterr().err
    assert cli.main(["judge", "--session", str(tmp_path / "none.sqlite"), "--export", "x.txt"]) == 2


def test_cli_interactive_prompt_with_monkeypatched_input(tmp_path, coll, capsys, monkeypatch):
    from pyterrier_noise import cli
    factory = _cli_factory(monkeypatch)
    d, runs_dir, _ = _trec_files(coll, tmp_path)
    answers = iter(["1", "maybe", "0", "s", "2", "q"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    sess = tmp_path / "human.sqlite"
    docnos = pd.concat(list(coll.runs.values()))["docno"].unique()
    (tmp_path / "docs.tsv").write_text("".join(f"{d}\tthe text of {d}\n" for d in docnos))
    code = cli.main(["judge", "--session", str(sess), "--labels", "0,1,2", "--topics", str(d / "topics.txt"),
                     "--docs", str(tmp_path / "docs.tsv"), str(runs_dir)])
    out = capsys.readouterr().out
    assert code == 0
    assert "synthetic topic" in out and "'maybe' is not an answer" in out
    assert out.count("document: the text of ") == 5  # five documents shown, each with its text
    assert "3 judgments (3 new), 1 bypassed; stopped: quit" in out
    with JudgingSession(sess, selector_factory=factory) as s:
        h = s.history
    assert h["action"].tolist() == ["judge", "judge", "bypass", "judge"]
    assert h["label"].fillna(-1).tolist() == [1.0, 0.0, -1, 2.0]
    # resume without the runs (the session keeps them), up to a budget
    answers = iter(["1", "1"])
    code = cli.main(["judge", "--session", str(sess), "--labels", "0,1,2", "--budget", "5"])
    out = capsys.readouterr().out
    assert code == 0 and "5 judgments (2 new), 1 bypassed; stopped: budget reached" in out


def test_cli_interactive_in_a_subprocess(tmp_path, coll):
    """The real command, stdin fed by a pipe: answers are saved, a bad answer is asked again, quit is clean."""
    d, runs_dir, _ = _trec_files(coll, tmp_path)
    sess = tmp_path / "pipe.sqlite"
    code = _child_prelude() + "import sys\nfrom pyterrier_noise.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    args = [sys.executable, "-c", code, "judge", "--session", str(sess), "--budget", "5", str(runs_dir)]
    first = subprocess.run(args, input="1\nx\n0\nq\n", capture_output=True, text=True, cwd=REPO, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "2 judgments (2 new)" in first.stdout and "'x' is not an answer" in first.stdout
    with JudgingSession(sess, selector_factory=None if _has_real_selector() else FakeSelector) as s:
        assert s.history["label"].tolist() == [1.0, 0.0]


def _has_real_selector():
    try:
        from pyterrier_noise.selection.selector import JudgmentSelector  # noqa: F401
    except ImportError:
        return False
    return True


def test_cli_help_has_examples(capsys):
    from pyterrier_noise import cli
    with pytest.raises(SystemExit):
        cli.main(["judge", "--help"])
    out = capsys.readouterr().out
    assert "examples:" in out and "--session" in out and "--export" in out


def test_cli_interactive_in_tmux(tmp_path, coll):
    """Keys typed into a real terminal (tmux send-keys): label, a bad answer, label, quit."""
    import shutil
    import time
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    d, runs_dir, _ = _trec_files(coll, tmp_path)
    sess, rc = tmp_path / "tmux.sqlite", tmp_path / "rc"
    script = tmp_path / "judge.py"
    script.write_text(_child_prelude() + "import sys\nfrom pyterrier_noise.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    shell = (f"cd {REPO} && {sys.executable} {script} judge --session {sess} --labels 0,1,2 {runs_dir}; "
             f"echo $? > {rc}")
    sock = f"pn-test-{os.getpid()}"
    tmux = ["tmux", "-L", sock]
    subprocess.run(tmux + ["new-session", "-d", "-s", "judge", "-x", "200", "-y", "50", shell], check=True, timeout=30)
    try:
        for keys in ["2", "what", "0", "q"]:
            subprocess.run(tmux + ["send-keys", "-t", "judge", keys, "Enter"], check=True, timeout=30)
        deadline = time.monotonic() + 60
        while not (rc.exists() and rc.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rc.exists() and rc.read_text().strip(), "the judging command did not finish"
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True, timeout=30)
    assert rc.read_text().strip() == "0"
    with JudgingSession(sess, selector_factory=None if _has_real_selector() else FakeSelector) as s:
        assert s.history["label"].tolist() == [2.0, 0.0]


# ---------------------------------------------------------------------------------------------
# with the real selector: the paper's Table 1 example through a session (seed002 Sec. 2.8)

TABLE1 = {"Run 1": [18, 22, 15, 13, 11, 25, 10, 84], "Run 2": [22, 10, 11, 19, 38, 18, 33, 17],
          "Run 3": [21, 35, 16, 11, 38, 33, 18, 17], "Run 4": [10, 18, 11, 22, 87, 13, 17, 20]}


def _table1_runs():
    return {name: pd.DataFrame({"qid": "1", "docno": [str(d) for d in docs], "score": 8.0 - np.arange(8),
                                "rank": np.arange(8)}) for name, docs in TABLE1.items()}


def test_table1_method_a_through_a_session(tmp_path):
    _real_factory()
    with JudgingSession(tmp_path / "t1.sqlite", runs=_table1_runs(), method="A", p=0.8) as s:
        s.run(QrelsOracle(pd.DataFrame({"qid": ["1"], "docno": ["18"], "label": [1]})), budget=6)
        h = s.history
    assert h["docno"].tolist() == ["18", "22", "11", "10", "21", "13"]  # the paper's Method A order
    assert h["weight"].to_numpy() == pytest.approx([0.4780, 0.4624, 0.4403, 0.4124, 0.2000, 0.1679], abs=5e-5)
    with JudgingSession(tmp_path / "t1.sqlite") as s:  # reopened: same bounds as before closing
        b = s.bounds()
    resid = b.set_index("name")["residual"]  # one topic
    # residuals after six (seed002 Sec. 2.8: 0.41, 0.44, 0.65, 0.34; mean 0.4597, not the paper's 0.49)
    assert resid.to_numpy() == pytest.approx([0.4031, 0.4461, 0.6451, 0.3436], abs=5e-4)
    assert resid.mean() == pytest.approx(0.4597, abs=5e-5)


def test_table1_method_c_through_a_session(tmp_path):
    """Method C, power 3, relevant {18, 11, 35, 38} (seed002 Sec. 2.8, derived): order and weights."""
    _real_factory()
    rel = pd.DataFrame({"qid": "1", "docno": ["18", "11", "35", "38"], "label": 1})
    with JudgingSession(tmp_path / "c.sqlite", runs=_table1_runs(), method="C", p=0.8) as s:
        s.run(QrelsOracle(rel), budget=8)
        h = s.history
    assert h["docno"].tolist() == ["18", "22", "11", "10", "21", "35", "13", "16"]
    # first pick: every run's factor is r (base + r/2)^3 = 0.125, times Method A's weight of document 18
    assert h["weight"].iloc[0] == pytest.approx(0.125 * (0.2 + 0.16 + 0.2 * 0.8 ** 5 + 0.2 * 0.8 ** 6), rel=1e-12)
    # the seed note's values are rounded to 4 decimals (its 0.0598 is 0.059746 rounded twice)
    assert h["weight"].to_numpy() == pytest.approx([0.0598, 0.0727, 0.0431, 0.0425, 0.0325, 0.0112, 0.0111, 0.0108],
                                                   abs=1e-4)


def test_session_equals_a_direct_selector_loop(tmp_path, coll):
    """The session adds durability, nothing else: same sequence as driving JudgmentSelector by hand."""
    _real_factory()
    from pyterrier_noise.selection.selector import JudgmentSelector
    oracle = QrelsOracle(coll.qrels, missing="bypass")
    settings = dict(method="C", p=0.7, power=2, score_scope="query", max_rel=2)  # every setting reaches the selector
    sel = JudgmentSelector(coll.runs, **settings)
    direct = []
    while sel.n_judged < 20:
        q, d, w = sel.propose(1)[0]
        y = oracle.judge(q, d)
        if y is None:
            sel.bypass(q, d)
            direct.append(("bypass", q, d, -1, w))
        else:
            sel.record(q, d, y)
            direct.append(("judge", q, d, y, w))
    with JudgingSession(tmp_path / "s.sqlite", runs=coll.runs, **settings) as s:
        s.run(oracle, budget=20)
        assert steps(s) == direct
        pd.testing.assert_frame_equal(s.bounds(), sel.bounds())
        pd.testing.assert_frame_equal(s.system_bounds(p=0.95), sel.system_bounds(p=0.95))
    with JudgingSession(tmp_path / "s.sqlite") as s:  # replayed: the same bounds
        pd.testing.assert_frame_equal(s.bounds(), sel.bounds())
        assert s.selector.propose(3) == sel.propose(3)


def test_session_stop_rule_equals_the_selector_and_resumes(tmp_path, coll, capsys):
    """A StopRule ends a session's run where it ends JudgmentSelector.judge; the judgments are kept,
    and a later run without the rule goes on from there."""
    _real_factory()
    from pyterrier_noise import cli
    from pyterrier_noise.selection.selector import JudgmentSelector, StopRule
    rule = StopRule(top_residual=0.35, top_k=2)
    sel = JudgmentSelector(coll.runs, method="C")
    n = sel.judge(coll.true_qrels, 500, stop=rule)
    assert sel.stopped is not None and 0 < n < 500
    with JudgingSession(tmp_path / "s.sqlite", runs=coll.runs, method="C") as s:
        report = s.run(QrelsOracle(coll.true_qrels), budget=500, stop=rule)
        assert (report.reason, report.detail, report.n_judged) == ("stopped", sel.stopped, n)
        assert list(s.judged_qrels()["docno"]) == list(sel.judged_qrels()["docno"])
        with pytest.raises(InputError, match="expected a StopRule"):
            s.run(QrelsOracle(coll.true_qrels), budget=500, stop="leader")
    with JudgingSession(tmp_path / "s.sqlite") as s:   # resumed without the rule: judging goes on
        assert s.run(QrelsOracle(coll.true_qrels), budget=n + 5).n_judged == n + 5
    d, runs_dir, qrels = _trec_files(coll, tmp_path)
    assert cli.main(["judge", "--session", str(tmp_path / "cli.sqlite"), "--budget", "500", "--qrels", str(qrels),
                     "--stop-top-residual", "0.35", "--stop-top-k", "2", str(runs_dir)]) == 0
    out = capsys.readouterr().out
    assert f"{n} judgments ({n} new)" in out and "stopped: stop rule: the mean residual of the top 2 runs" in out


def test_export_over_the_session_file_is_refused(tmp_path, coll, monkeypatch):
    # issue 30: `judge --session s.sqlite --export s.sqlite` turned the session into a qrels file
    from cli_helpers import run_cli
    path = tmp_path / "s.sqlite"
    (tmp_path / "link.sqlite").symlink_to(path)
    with JudgingSession(path, runs=coll.runs, selector_factory=FakeSelector) as s:
        s.run(QrelsOracle(coll.true_qrels), budget=3)
        monkeypatch.chdir(tmp_path)
        for name in (path, tmp_path / "link.sqlite", Path("s.sqlite")):
            with pytest.raises(InputError, match="is the same file as the input session"):
                s.export_qrels(name)
    before = path.read_bytes()
    status, _, err = run_cli("judge", "--session", path, "--export", tmp_path / "link.sqlite")
    assert status == 2 and "--export" in err and "same file as the input --session" in err, err
    assert path.read_bytes() == before
    with JudgingSession(path) as s:            # still a session, resumable
        assert s.n_judged == 3


@pytest.mark.slow   # a signal test
def test_cli_judge_sigterm_saves_the_judgments_and_resumes(tmp_path):
    """SIGTERM mid-run of judge: one line saying what is saved, exit 143, no process left; the same
    command then resumes from the saved judgments."""
    import signal

    from cli_helpers import group_alive, signal_when, start_program, write_collection

    from pyterrier_noise import cli
    paths = write_collection(tmp_path)
    sess = tmp_path / "s.sqlite"
    wal = tmp_path / "s.sqlite-wal"
    argv = ["judge", "--session", sess, "--method", "pool", "--qrels", paths["qrels"], "--quiet",
            *[paths[f"run{r}"] for r in range(5)]]
    proc = start_program(*argv, "--budget", "9000")
    status, err = signal_when(proc, lambda: wal.exists() and wal.stat().st_size > 200_000, signal.SIGTERM)
    assert status == 143, err
    assert err.startswith("\nterminated: ") and "judgments are saved in" in err and "Traceback" not in err, err
    saved = int(err.split("terminated: ")[1].split()[0])
    assert 0 < saved < 9000
    assert not group_alive(proc)
    assert cli.main([str(a) for a in argv[:-5]] + ["--budget", str(saved + 3)]) == 0
    with JudgingSession(sess, create=False) as s:
        assert s.n_judged == saved + 3
