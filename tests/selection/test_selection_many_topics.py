"""The selector on many topics: its set-up (row lookups, positions grouped by row) works on
chunks of topics at once, and its choices on a generated collection of many topics equal a
brute-force greedy that recomputes every weight from the judged state at every step."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pyterrier_noise.selection import JudgmentSelector
from pyterrier_noise.selection.contributions import _RowGrouping, _topic_chunks, positions_by_row

P = 0.8


def many_topics(seed: int, n_topics: int = 600, n_runs: int = 4, depth: int = 8, candidates: int = 12):
    """Runs of ``depth`` documents out of each topic's ``candidates`` (so runs overlap and weights
    tie), distinct scores, and a label for every candidate."""
    rng = np.random.default_rng(seed)
    runs = {}
    for r in range(n_runs):
        pick = np.argsort(rng.random((n_topics, candidates)), axis=1)[:, :depth]
        runs[f"r{r}"] = pd.DataFrame({"qid": np.repeat([f"q{t}" for t in range(n_topics)], depth),
                                      "docno": [f"d{d}" for d in pick.ravel()],
                                      "score": np.tile(np.arange(depth, 0, -1.0), n_topics)})
    qrels = pd.DataFrame({"qid": np.repeat([f"q{t}" for t in range(n_topics)], candidates),
                          "docno": [f"d{d}" for d in np.tile(np.arange(candidates), n_topics)],
                          "label": rng.integers(0, 2, n_topics * candidates).astype(float)})
    return runs, qrels


def test_rows_of_equals_a_dictionary_lookup():
    runs, qrels = many_topics(1)
    sel = JudgmentSelector(runs)
    table = {(str(q), str(d)): j for j, (q, d) in enumerate(zip(sel._qid, sel._docno))}
    extra = pd.DataFrame({"qid": ["q0", "nope", "q5", "q599"], "docno": ["zzz", "d1", "", "d3"]})
    q = np.concatenate([qrels["qid"].to_numpy(dtype=object), extra["qid"].to_numpy(dtype=object)])
    d = np.concatenate([qrels["docno"].to_numpy(dtype=object), extra["docno"].to_numpy(dtype=object)])
    perm = np.random.default_rng(0).permutation(len(q))   # queries in any order
    got = sel._rows_of(q[perm], d[perm])
    want = np.array([table.get((a, b), -1) for a, b in zip(q[perm], d[perm])])
    np.testing.assert_array_equal(got, want)
    assert (want >= 0).sum() > 0 and (want < 0).sum() > 0


@pytest.mark.parametrize("rows", [1, 7, 50, 1 << 16])
def test_grouping_by_chunks_of_topics_is_a_stable_sort_of_rows(rows):
    """Whatever the chunk size (one topic per chunk: the former per-topic loop), the positions
    grouped by row are those of a stable sort of the positions' rows."""
    runs, _ = many_topics(2, n_topics=300)
    a = JudgmentSelector(runs).aligned
    ptr, segs, pos = positions_by_row(a)
    order = np.argsort(a.jidx, kind="stable")
    seg_of_pos = np.repeat(np.arange(a.n_segments), a.seg_len)
    np.testing.assert_array_equal(segs, seg_of_pos[order])
    np.testing.assert_array_equal(pos, a.pos[order])
    start = np.asarray(a.table.topic_start, dtype=np.int64)
    chunks = _topic_chunks(start, rows)
    assert chunks[0][0] == 0 and chunks[-1][1] == a.n_topics
    assert all(x[1] == y[0] for x, y in zip(chunks, chunks[1:]))
    s2, p2 = np.zeros_like(segs), np.zeros_like(pos)
    _RowGrouping(a, ptr, s2, p2, segs.dtype.type)(chunks)
    np.testing.assert_array_equal(s2, segs)
    np.testing.assert_array_equal(p2, pos)


def brute_force(sel: JudgmentSelector, labels: np.ndarray, steps: int, method: str) -> tuple[list, list]:
    """Greedy from scratch: every weight sum_s c * factor(s, q) recomputed at every step (Methods
    B and C, residual per topic, Method C's midpoint per run), the best by exact sum (math.fsum),
    ties by table row (qid, docno)."""
    ct = sel.contributions
    S, T = sel.n_runs, sel.n_topics
    topic = np.asarray(sel.aligned.table.topic_index, dtype=np.int64)
    row_of = np.repeat(np.arange(len(topic)), np.diff(ct.all_ptr))
    seg, c = ct.all_seg.astype(np.int64), ct.all_c
    run = seg // T
    judged = np.zeros(len(topic), dtype=bool)
    picked, weights = [], []
    for _ in range(steps):
        jr = judged[row_of]
        gain = np.nan_to_num(labels[row_of]) >= 1
        mass = np.bincount(seg[jr], weights=c[jr], minlength=S * T).reshape(S, T)
        base = np.bincount(seg[jr & gain], weights=c[jr & gain], minlength=S * T).reshape(S, T)
        r = np.maximum(1.0 - mass, 0.0)
        if method == "B":
            f = r
        else:
            rs = np.maximum(1.0 - mass.sum(axis=1) / T, 0.0)
            g = (base.sum(axis=1) / T + 0.5 * rs) ** 3
            f = r * g[:, None]
        ok = ~jr
        approx = np.bincount(row_of[ok], weights=c[ok] * f[run[ok], topic[row_of[ok]]], minlength=len(topic))
        cand = np.flatnonzero(approx >= approx.max() * (1 - 1e-9))
        exact = [math.fsum(c[(row_of == j)] * f[run[row_of == j], topic[j]]) for j in cand]
        best = max(range(len(cand)), key=lambda i: (exact[i], -cand[i]))
        j = int(cand[best])
        picked.append(j)
        weights.append(exact[best])
        judged[j] = True
    return picked, weights


@pytest.mark.parametrize("method", ["B", "C"])
def test_choices_on_many_topics_equal_brute_force(method):
    runs, qrels = many_topics(3)
    sel = JudgmentSelector(runs, p=P, method=method, head_size=4)
    labels = sel.labels_of(qrels)
    rows, weights = brute_force(sel, labels, 60, method)
    sel.judge(qrels, 60)
    h = sel.history
    table = list(zip(sel._qid, sel._docno))
    assert list(zip(h["qid"], h["docno"])) == [table[j] for j in rows]
    np.testing.assert_allclose(h["weight"].to_numpy(), weights, rtol=1e-12, atol=0)


@pytest.mark.parametrize("head", [2, 16])
@pytest.mark.parametrize("kw", [dict(method="C"), dict(method="B"), dict(method="C", score_scope="query"),
                                dict(method="B", residual_scope="system"), dict(method="C", per_topic_quota=1)])
def test_head_size_never_changes_the_choices_on_many_topics(kw, head):
    """A head far smaller than the topics (its topics' rows looked up one judged topic at a time;
    16 rows last several steps before a rebuild) and one holding every candidate (every topic's
    boundaries at once) make the same choices with the same weights: the head's size is speed only."""
    runs, qrels = many_topics(4, n_topics=400)
    small = JudgmentSelector(runs, p=P, head_size=head, **kw)
    large = JudgmentSelector(runs, p=P, head_size=100_000, **kw)
    small.judge(qrels, 150)
    large.judge(qrels, 150)
    a, b = small.history, large.history
    assert len(a) == 150
    pd.testing.assert_frame_equal(a, b)
    assert (a["weight"].to_numpy() > 0).all()
    if "per_topic_quota" in kw:
        assert small.topic_counts.max() == 1


@pytest.mark.parametrize("kw", [dict(method="C", score_scope="query"), dict(method="C"), dict(method="B"),
                                dict(method="C", score_scope="query", pool_runs=["r1", "r3"])])
def test_largest_factor_is_the_maximum_over_every_segment(kw):
    """The largest segment factor a full rebuild bounds the rows outside the head with, kept from
    each run's largest topic factor and the topics judged since, is the maximum of the factor over
    every segment of the pool runs, to the bit, judgment after judgment (Method C's topic factors
    grow when a relevant document is found, B's only fall)."""
    runs, qrels = many_topics(5, n_topics=200)
    sel = JudgmentSelector(runs, p=P, **kw)
    queue = sel._queue
    pool = np.repeat(np.isin(sel.run_names, sel.pool_runs), sel.n_topics)
    grew = False
    for step in range(120):
        before = queue._XT.copy()
        sel.judge(qrels, 1)
        grew |= bool((queue._XT > before).any())
        if step % 3 == 0 or step > 100:   # several judged topics between some of the checks
            assert queue._largest_factor() == queue._factor_flat()[pool].max()
    assert grew == (kw.get("score_scope") == "query")
