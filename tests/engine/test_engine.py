"""The aligned engine: worked examples from the seed notes, brute force over tie orderings,
invariants of RBP residuals, and the label-matrix (many versions at once) contract."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyterrier_noise import AlignedRuns, InputError, MeasureSpec
from collection_helpers import random_collection


def one_run(labels, p_scores=None, extra_qrels=()):
    """A single-topic run whose document i has label labels[i] (None = unjudged)."""
    n = len(labels)
    docs = [f"d{i:03d}" for i in range(n)]
    scores = p_scores if p_scores is not None else list(range(n, 0, -1))
    run = pd.DataFrame({"qid": "1", "docno": docs, "score": np.asarray(scores, dtype=float)})
    q = [(d, lab) for d, lab in zip(docs, labels) if lab is not None] + list(extra_qrels)
    qrels = pd.DataFrame({"qid": "1", "docno": [d for d, _ in q], "label": [float(l) for _, l in q]})
    return {"r": run}, qrels


def value(runs, qrels, spec, ties="trec_eval"):
    return AlignedRuns.build(runs, qrels, ties=ties).evaluate([spec])[spec][0, 0, 0]


# -- seed002 Sec. 1.3: the paper's worked example --------------------------------------------------

def test_rbp_worked_example_seed002():
    runs, qrels = one_run([0, 1, 1, 0, 0, 1, None, 0, 0, 1])
    a = AlignedRuns.build(runs, qrels)
    specs = {c: MeasureSpec("RBP", c, p=0.8) for c in ("value", "residual", "upper", "projected")}
    v = {c: a.evaluate([s])[s][0, 0, 0] for c, s in specs.items()}
    assert v["value"] == pytest.approx(0.2 * (0.8 + 0.8**2 + 0.8**5 + 0.8**9), abs=1e-15)
    assert round(v["value"], 4) == 0.3804
    assert round(v["residual"], 4) == 0.1598
    assert round(v["upper"], 4) == 0.5402
    assert round(v["projected"], 4) == 0.4527


def test_rbp_residual_of_fully_judged_top_21():
    runs, qrels = one_run([0] * 21)
    assert value(runs, qrels, MeasureSpec("RBP", "residual", p=0.8)) == pytest.approx(0.8**21, rel=1e-12)


def test_rbp_cutoff_residual_includes_p_to_the_k():
    runs, qrels = one_run([1] * 20)
    assert value(runs, qrels, MeasureSpec("RBP", "residual", p=0.8, cutoff=5)) == pytest.approx(0.8**5)
    assert value(runs, qrels, MeasureSpec("RBP", p=0.8, cutoff=5)) == pytest.approx(1 - 0.8**5)


# -- seed004a Sec. 1 fixtures: the thesis's runs G and B (exponential gains, max = 3) ---------------

G = [3, 2, 3, 1, 0, 0, 3, 1, 1, 0]
B = [3, 3, 2, 0, 1, 0, 0, 0, 1, 0]


def exp_gain_labels(rels):
    return [2**r - 1 for r in rels]  # with max_rel=7 the gain is (2^rel - 1) / 7, eq. 2.4


@pytest.mark.parametrize("rels, phi, expected", [(G, 0.9, 0.296112), (B, 0.9, 0.240237),
                                                 (G, 0.5, 0.749721), (B, 0.5, 0.808315)])
def test_rbp_graded_thesis_values(rels, phi, expected):
    runs, qrels = one_run(exp_gain_labels(rels))
    assert value(runs, qrels, MeasureSpec("RBP", p=phi, max_rel=7)) == pytest.approx(expected, abs=5e-7)
    assert value(runs, qrels, MeasureSpec("RBP", "residual", p=phi, max_rel=7)) == pytest.approx(phi**10)


@pytest.mark.parametrize("rels, family, T, expected", [
    (G, "INSQ", 1, 0.5973), (G, "INSQ", 3, 0.3462), (B, "INSQ", 1, 0.6108), (B, "INSQ", 3, 0.3163),
    (G, "INST", 1, 0.8430), (G, "INST", 2, 0.5964), (G, "INST", 3, 0.4578),
    (B, "INST", 1, 0.9244), (B, "INST", 2, 0.6073), (B, "INST", 3, 0.4276)])
def test_cwl_measures_thesis_values(rels, family, T, expected):
    runs, qrels = one_run(exp_gain_labels(rels))
    assert round(value(runs, qrels, MeasureSpec(family, T=T, max_rel=7)), 4) == expected


@pytest.mark.parametrize("rels, T, upper", [(G, 1, 0.8534), (G, 3, 0.6310), (B, 1, 0.9352), (B, 3, 0.6205)])
def test_inst_upper_thesis_values(rels, T, upper):
    runs, qrels = one_run(exp_gain_labels(rels))
    assert round(value(runs, qrels, MeasureSpec("INST", "upper", T=T, max_rel=7)), 4) == upper


@pytest.mark.parametrize("T, lower, upper", [(1, 0.842930, 0.853353), (3, 0.456647, 0.630991)])
def test_inst_exact_tail_thesis_values(T, lower, upper):
    runs, qrels = one_run(exp_gain_labels(G))
    assert value(runs, qrels, MeasureSpec("INST", T=T, max_rel=7, tail="exact")) == pytest.approx(lower, abs=1e-6)
    assert value(runs, qrels, MeasureSpec("INST", "upper", T=T, max_rel=7, tail="exact")) == pytest.approx(upper, abs=1e-6)


@pytest.mark.parametrize("rels, T, val, res", [
    ([1, 0, 0], 1, 0.608297, 0.151598), ([0, 1, 0], 1, 0.207222, 0.16115),
    ([1] * 5, 1, 0.998115, 0.001885), ([0] * 10, 1, 0.0, 0.072282),
    ([1, 0, 0], 3, 0.181548, None), ([1] * 5, 3, 0.723557, None)])
def test_inst_binary_reference_values(rels, T, val, res):
    runs, qrels = one_run(rels)
    assert value(runs, qrels, MeasureSpec("INST", T=T)) == pytest.approx(val, abs=1e-6)
    if res is not None:
        assert value(runs, qrels, MeasureSpec("INST", "residual", T=T)) == pytest.approx(res, abs=1e-5)


def test_inst_exact_tail_against_long_truncation():
    """The closed-form tail equals a brute-force sum over 200,000 explicit ranks (seed004a 1.9 (b))."""
    rels = [1, 0, 1, 1, 0]
    runs, qrels = one_run(rels)
    T = 2.0
    exact = value(runs, qrels, MeasureSpec("INST", T=T, tail="exact"))
    N = 200_000
    g = np.zeros(N)
    g[: len(rels)] = rels
    S = np.cumsum(g)
    i = np.arange(1, N + 1)
    C = ((i + 2 * T - S - 1) / (i + 2 * T - S)) ** 2
    P = np.concatenate([[1.0], np.cumprod(C[:-1])])
    assert exact == pytest.approx((P * g).sum() / P.sum(), abs=1e-5)


def test_ndcg_and_ap_thesis_values():
    # G with two more relevant documents (rels 3 and 2) that the run does not retrieve
    runs, qrels = one_run(exp_gain_labels(G), extra_qrels=[("x1", 7.0), ("x2", 3.0)])
    assert round(value(runs, qrels, MeasureSpec("nDCG", cutoff=10)), 4) == 0.7472
    binary = [1, 1, 1, 1, 0, 0, 1, 1, 1, 0]
    runs, qrels = one_run(binary)
    assert value(runs, qrels, MeasureSpec("AP")) * 7 == pytest.approx(6.242063, abs=1e-6)
    assert value(runs, qrels, MeasureSpec("P", cutoff=10)) == pytest.approx(0.7)
    runs, qrels = one_run([0, 0, 1, 0])
    assert value(runs, qrels, MeasureSpec("RR")) == pytest.approx(1 / 3)


# -- tie policies -----------------------------------------------------------------------------------

def test_trec_eval_breaks_ties_by_docno_descending():
    run = pd.DataFrame({"qid": "1", "docno": ["a", "c", "b"], "score": [1.0, 1.0, 1.0]})
    qrels = pd.DataFrame({"qid": "1", "docno": ["c"], "label": [1.0]})
    # trec_eval order c, b, a: the relevant document is first
    assert value({"r": run}, qrels, MeasureSpec("RR")) == 1.0
    # given order (input order) a, c, b: second
    assert value({"r": run}, qrels, MeasureSpec("RR"), ties="given") == 0.5


def test_trec_eval_ties_compare_single_precision_scores():
    """trec_eval holds scores as C floats: scores equal in float32 tie, broken by docno descending."""
    run = pd.DataFrame({"qid": "1", "docno": ["a", "b"], "score": [1.0 + 1e-12, 1.0]})
    qrels = pd.DataFrame({"qid": "1", "docno": ["b"], "label": [1.0]})
    assert value({"r": run}, qrels, MeasureSpec("RR")) == 1.0  # b > a
    assert value({"r": run}, qrels, MeasureSpec("RR"), ties="given") == 0.5


def brute_force_expected(run: pd.DataFrame, qrels: pd.DataFrame, specs: list) -> dict:
    """Mean over every ordering of each group of tied scores (exact, by enumeration): every ordering
    becomes one topic of a single run, evaluated in its given order, all orderings in one call."""
    run = run.sort_values("score", ascending=False, kind="stable")
    groups = [g["docno"].tolist() for _, g in run.groupby("score", sort=False)]
    orders = [[d for grp in perms for d in grp]
              for perms in itertools.product(*[itertools.permutations(g) for g in groups])]
    n, k = len(orders), len(run)
    qids = np.arange(n).astype(str)
    r = pd.DataFrame({"qid": np.repeat(qids, k), "docno": np.concatenate(orders),
                      "score": np.tile(np.arange(k, 0, -1.0), n)})
    q = pd.DataFrame({"qid": np.repeat(qids, len(qrels)), "docno": np.tile(qrels["docno"].to_numpy(), n),
                      "label": np.tile(qrels["label"].to_numpy(), n)})
    out = AlignedRuns.build({"r": r}, q, ties="given").evaluate(specs)
    assert all(out[s].shape == (1, n, 1) for s in specs)
    return {s: math.fsum(out[s][0, :, 0]) / n for s in specs}


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([None, 3, 5]), st.sampled_from([0.5, 0.8]))
def test_expected_ties_equal_brute_force(seed, cutoff, p):
    rng = np.random.default_rng(seed)
    n = 7
    scores = rng.integers(0, 3, size=n).astype(float)  # many ties
    run = pd.DataFrame({"qid": "1", "docno": [f"d{i}" for i in range(n)], "score": scores})
    judged = rng.random(n) < 0.7
    qrels = pd.DataFrame({"qid": "1", "docno": [f"d{i}" for i in range(n) if judged[i]],
                          "label": rng.integers(0, 3, size=int(judged.sum())).astype(float)})
    if len(qrels) == 0:
        return
    groups = pd.Series(scores).value_counts()
    if math.prod(math.factorial(int(c)) for c in groups) > 3000:
        return
    specs = [MeasureSpec("RBP", p=p, cutoff=cutoff), MeasureSpec("RBP", "residual", p=p, cutoff=cutoff),
             MeasureSpec("RBP", p=p, max_rel=2, cutoff=cutoff), MeasureSpec("P", cutoff=cutoff or 4),
             MeasureSpec("nDCG", cutoff=cutoff)]
    want = brute_force_expected(run, qrels, specs)
    for spec in specs:
        assert value({"r": run}, qrels, spec, ties="expected") == pytest.approx(want[spec], abs=1e-12)


def test_tie_groups_are_kept_by_the_grouped_policies():
    runs, qrels = random_collection(1, tie_decimals=0)
    for ties in ("expected", "optimistic", "pessimistic"):
        a = AlignedRuns.build(runs, qrels, ties=ties)
        assert (a.group_end - a.group_start > 1).any()
    a = AlignedRuns.build(runs, qrels, ties="trec_eval")
    assert (a.group_end - a.group_start == 1).all()


@pytest.mark.parametrize("ties", ["trec_eval", "expected"])
def test_shuffling_rows_changes_nothing(ties):
    runs, qrels = random_collection(3, tie_decimals=1)
    specs = [MeasureSpec("RBP", p=0.8), MeasureSpec("RBP", "residual", p=0.8), MeasureSpec("P", cutoff=5),
             MeasureSpec("nDCG", cutoff=10), MeasureSpec("INSQ", T=2)]
    if ties == "trec_eval":
        specs += [MeasureSpec("AP"), MeasureSpec("RR"), MeasureSpec("INST", T=2)]
    base = AlignedRuns.build(runs, qrels, ties=ties).evaluate(specs)
    rng = np.random.default_rng(0)
    shuffled = {k: v.sample(frac=1.0, random_state=rng.integers(1 << 30)).assign(rank=0) for k, v in runs.items()}
    again = AlignedRuns.build(shuffled, qrels.sample(frac=1.0, random_state=1), ties=ties).evaluate(specs)
    for s in specs:
        np.testing.assert_allclose(again[s], base[s], atol=1e-15)


# -- invariants and the label matrix ----------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(st.integers(0, 100_000), st.sampled_from([0.5, 0.8, 0.95]), st.booleans())
def test_base_never_falls_and_residual_never_rises_as_judgments_are_added(seed, p, graded):
    runs, qrels = random_collection(seed, judged_frac=0.9)
    a = AlignedRuns.build(runs, qrels)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(a.table))
    # version v reveals the first v judgments of a random order: a (J, J+1) label matrix
    L = np.full((len(a.table), len(a.table) + 1), np.nan)
    for v in range(1, len(a.table) + 1):
        L[order[:v], v] = a.table.labels[order[:v]]
    kw = dict(p=p, max_rel=2.0 if graded else None)
    base, res, up, proj = (MeasureSpec("RBP", c, **kw) for c in ("value", "residual", "upper", "projected"))
    out = a.evaluate([base, res, up, proj], L)
    assert (np.diff(out[base], axis=2) >= -1e-15).all()
    assert (np.diff(out[res], axis=2) <= 1e-15).all()
    assert (out[base] <= out[up] + 1e-15).all() and (out[up] <= 1 + 1e-12).all()
    finite = ~np.isnan(out[proj])
    assert (out[proj][finite] >= out[base][finite] - 1e-12).all()
    assert (out[proj][finite] <= out[up][finite] + 1e-12).all()
    assert np.allclose(out[res][..., 0], 1.0)  # nothing judged: residual 1


def test_label_matrix_equals_separate_evaluations():
    runs, qrels = random_collection(7, n_runs=4, n_topics=5)
    a = AlignedRuns.build(runs, qrels)
    rng = np.random.default_rng(1)
    L = np.stack([a.table.labels, rng.integers(0, 3, len(a.table)).astype(float),
                  np.where(rng.random(len(a.table)) < 0.5, np.nan, a.table.labels)], axis=1)
    specs = [MeasureSpec("RBP", p=0.8), MeasureSpec("RBP", "residual", p=0.8), MeasureSpec("AP"),
             MeasureSpec("nDCG", cutoff=5), MeasureSpec("RR"), MeasureSpec("P", cutoff=3),
             MeasureSpec("INST", T=2, max_rel=2), MeasureSpec("INST", "residual", T=2, max_rel=2),
             MeasureSpec("INSQ", "residual", T=1)]
    together = a.evaluate(specs, L, chunk_elements=10)  # tiny chunks: exercise the chunking too
    for v in range(L.shape[1]):
        keep = ~np.isnan(L[:, v])
        q = a.table.frame[keep].assign(label=L[keep, v])
        alone = AlignedRuns.build(runs, q, topics=a.topics, on_topic_mismatch="ignore").evaluate(specs)
        for s in specs:
            np.testing.assert_allclose(together[s][:, :, v], alone[s][:, :, 0], atol=1e-13, err_msg=str(s))


def test_unanswered_topic_scores_zero_with_residual_one():
    runs, qrels = random_collection(2, n_runs=1, n_topics=3)
    runs["run0"] = runs["run0"][runs["run0"]["qid"] != "2"]
    with pytest.warns(UserWarning, match="no ranking"):
        a = AlignedRuns.build(runs, qrels)
    specs = [MeasureSpec("RBP", p=0.8), MeasureSpec("RBP", "residual", p=0.8), MeasureSpec("AP"),
             MeasureSpec("INST", "residual", T=1)]
    out = a.evaluate(specs)
    t = a.topics.index("2")
    assert [out[s][0, t, 0] for s in specs] == [0.0, 1.0, 0.0, pytest.approx(1.0)]


def test_include_unjudged_adds_nan_rows_without_changing_values():
    runs, qrels = random_collection(8, n_runs=3, n_topics=4)
    a = AlignedRuns.build(runs, qrels)
    b = AlignedRuns.build(runs, qrels, include_unjudged=True)
    retrieved = pd.concat(runs.values())[["qid", "docno"]].drop_duplicates()
    n_unjudged = len(retrieved.merge(qrels, how="left", on=["qid", "docno"]).query("label != label"))
    assert len(b.table) == len(a.table) + n_unjudged and (b.jidx >= 0).all()
    assert np.isnan(b.table.labels).sum() == n_unjudged
    specs = [MeasureSpec("RBP", p=0.8), MeasureSpec("RBP", "residual", p=0.8), MeasureSpec("AP"),
             MeasureSpec("nDCG", cutoff=5), MeasureSpec("INST", "residual", T=2)]
    ra, rb = a.evaluate(specs), b.evaluate(specs)
    for s in specs:
        np.testing.assert_allclose(ra[s], rb[s], atol=1e-15)
    # judging every unjudged row as non-relevant removes the whole residual inside the runs
    L = np.nan_to_num(b.table.labels, nan=0.0)
    res = b.evaluate([MeasureSpec("RBP", "residual", p=0.8)], L)[MeasureSpec("RBP", "residual", p=0.8)]
    np.testing.assert_allclose(res[..., 0], 0.8 ** 15)  # only the tail after rank 15 is left


@pytest.mark.parametrize("sep", ["\t", " "])
def test_run_files_aligned_directly_equal_frames(tmp_path, sep):
    """Run files go through Arrow's CSV reader inside alignment; the result equals reading frames."""
    import gzip
    from pyterrier_noise import read_runs
    runs, qrels = random_collection(12, n_runs=3, n_topics=4, tie_decimals=1)
    d = tmp_path / "runs"
    d.mkdir()
    for i, (name, r) in enumerate(runs.items()):
        text = "".join(sep.join([q, "Q0", doc, str(k + 1), repr(s), "tag"]) + "\n"
                       for q, doc, k, s in zip(r["qid"], r["docno"], r["rank"], r["score"]))
        (d / (name + (".gz" if i % 2 else ""))).write_bytes(gzip.compress(text.encode()) if i % 2 else text.encode())
    specs = [MeasureSpec("RBP", p=0.8), MeasureSpec("RBP", "residual", p=0.8), MeasureSpec("AP"), MeasureSpec("nDCG")]
    for ties in ("trec_eval", "given", "expected"):
        direct = AlignedRuns.build(d, qrels, ties=ties, n_jobs=1)
        framed = AlignedRuns.build(read_runs(d), qrels, ties=ties, n_jobs=1)
        assert direct.run_names == framed.run_names == sorted(runs)
        for attr in ("seg_len", "pos", "jidx", "group_start", "group_end"):
            np.testing.assert_array_equal(getattr(direct, attr), getattr(framed, attr))
        keep = [s for s in specs if ties != "expected" or s.family != "AP"]
        a, b = direct.evaluate(keep), framed.evaluate(keep)
        for s in keep:
            np.testing.assert_array_equal(a[s], b[s])


def test_bad_run_file_in_a_directory_still_names_its_line(tmp_path):
    runs, qrels = random_collection(4, n_runs=2)
    d = tmp_path / "runs"
    d.mkdir()
    (d / "good").write_text("".join(f"{q}\tQ0\t{doc}\t{k + 1}\t{s}\tt\n" for q, doc, k, s in
                                    runs["run0"][["qid", "docno", "rank", "score"]].itertuples(index=False)))
    (d / "bad").write_text("1\tQ0\td1\t1\t0.5\tt\n1\tQ0\td2\t2\tnan\tt\n")
    with pytest.raises(InputError, match=r"bad line 2: score 'nan' is not a finite number"):
        AlignedRuns.build(d, qrels, n_jobs=1)


def test_parallel_alignment_equals_serial(tmp_path):
    runs, qrels = random_collection(5, n_runs=6, n_topics=5, n_docs=2000, depth=500)
    big = {f"{n}_{k}": r for k in range(30) for n, r in runs.items()}  # 450,000 rows: processes are used
    serial = AlignedRuns.build(big, qrels, n_jobs=1)
    parallel = AlignedRuns.build(big, qrels, n_jobs=2)
    for attr in ("seg_len", "pos", "jidx", "group_start", "group_end"):
        np.testing.assert_array_equal(getattr(serial, attr), getattr(parallel, attr))


# -- run files read in threads, unjudged rows added by integer keys, topics taken from the runs -------

def _write_runs(runs: dict, d, sep: str = " ") -> None:
    import gzip
    d.mkdir()
    for i, (name, r) in enumerate(runs.items()):
        text = "".join(sep.join([q, "Q0", doc, str(k + 1), repr(s), "tag"]) + "\n"
                       for q, doc, k, s in zip(r["qid"], r["docno"], r["rank"], r["score"]))
        (d / (name + (".gz" if i % 2 else ""))).write_bytes(gzip.compress(text.encode()) if i % 2 else text.encode())


def test_unique_inverse_equals_numpy_on_both_paths():
    from pyterrier_noise.engine.keys import unique_inverse
    rng = np.random.default_rng(3)
    for key_range, n in ((50, 1000), (10 ** 9, 1000), (1 << 20, 0)):   # dense, sort-based, empty
        keys = rng.integers(0, key_range, n)
        uniq, inv = unique_inverse(keys, key_range)
        ref_u, ref_i = np.unique(keys, return_inverse=True)
        np.testing.assert_array_equal(uniq, ref_u)
        np.testing.assert_array_equal(inv, ref_i.reshape(-1))
        np.testing.assert_array_equal(uniq[inv], keys)


def test_unique_inverse_in_blocks_equals_numpy(monkeypatch):
    from pyterrier_noise.engine import keys as keys_module
    monkeypatch.setattr(keys_module, "_BLOCK", 7)   # many blocks, keys repeated across their edges
    rng = np.random.default_rng(4)
    for n in (1, 7, 8, 100, 1001):
        keys = rng.integers(0, 10 ** 9, n) // 10 ** 7 * 10 ** 7
        uniq, inv = keys_module.unique_inverse(keys, 10 ** 9)
        ref_u, ref_i = np.unique(keys, return_inverse=True)
        np.testing.assert_array_equal(uniq, ref_u)
        np.testing.assert_array_equal(inv, ref_i.reshape(-1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_include_unjudged_table_is_sorted_and_every_position_finds_its_row(seed):
    """The grown table is the one a string sort would give, and each position's row names its
    own (qid, docno); judged rows keep their labels."""
    from pyterrier_noise.engine.align import JudgmentTable
    runs, qrels = random_collection(seed, n_runs=4, n_topics=5, n_docs=60, depth=25, judged_frac=0.3)
    qrels = pd.concat([qrels, pd.DataFrame({"qid": "2", "docno": ["zz-never-retrieved"], "label": [1.0]})])
    b = AlignedRuns.build(runs, qrels, include_unjudged=True, keep_docnos=True)
    f = b.table.frame
    resorted = JudgmentTable.from_frame(f.sample(frac=1.0, random_state=seed).reset_index(drop=True), b.topics)
    pd.testing.assert_frame_equal(resorted.frame.astype(object), f.astype(object))
    np.testing.assert_array_equal(resorted.topic_start, b.table.topic_start)
    seg = np.repeat(np.arange(b.n_segments), b.seg_len)
    np.testing.assert_array_equal(f["docno"].to_numpy(dtype=object)[b.jidx], b.docno)
    np.testing.assert_array_equal(f["qid"].to_numpy(dtype=object)[b.jidx],
                                  np.asarray(b.topics, dtype=object)[seg % b.n_topics])
    merged = f.merge(qrels, on=["qid", "docno"], how="left", suffixes=("", "_q"))
    np.testing.assert_array_equal(merged["label"].to_numpy(), merged["label_q"].to_numpy())
    assert "zz-never-retrieved" in set(f["docno"])   # judged rows stay even when no run retrieved them


@pytest.mark.parametrize("include_unjudged", [False, True])
def test_run_files_in_threads_equal_one_thread_and_frames(tmp_path, include_unjudged):
    from pyterrier_noise import read_runs
    runs, qrels = random_collection(21, n_runs=5, n_topics=4, tie_decimals=1)
    _write_runs(runs, tmp_path / "runs", sep="\t")
    built = [AlignedRuns.build(tmp_path / "runs", qrels, include_unjudged=include_unjudged, n_jobs=n)
             for n in (1, 3)]
    built.append(AlignedRuns.build(read_runs(tmp_path / "runs"), qrels, include_unjudged=include_unjudged, n_jobs=1))
    for other in built[1:]:
        assert other.run_names == built[0].run_names
        for attr in ("seg_len", "pos", "jidx", "group_start", "group_end"):
            np.testing.assert_array_equal(getattr(other, attr), getattr(built[0], attr))
        pd.testing.assert_frame_equal(other.table.frame.astype(object), built[0].table.frame.astype(object))


def test_topics_from_runs(tmp_path):
    """topics='runs': the runs' topics in natural order; qrels topics no run answers are dropped."""
    runs, qrels = random_collection(5, n_runs=3, n_topics=11)
    runs = {k: r[r["qid"] != "4"] for k, r in runs.items()}            # no run answers topic 4
    qrels = qrels[qrels["qid"] != "7"]                                   # the qrels lack topic 7
    _write_runs(runs, tmp_path / "runs")
    for source in (tmp_path / "runs", runs):
        a = AlignedRuns.build(source, qrels, topics="runs", on_topic_mismatch="ignore")
        assert a.topics == ["1", "2", "3", "5", "6", "7", "8", "9", "10", "11"]
        assert "4" not in set(a.table.frame["qid"]) and not (a.table.frame["qid"] == "7").any()
    with pytest.raises(InputError, match="topics must be a list of qids or 'runs'"):
        AlignedRuns.build(runs, qrels, topics="qrels")


def test_missing_run_file_is_an_input_error(tmp_path):
    runs, qrels = random_collection(4, n_runs=2)
    with pytest.raises(InputError, match="no such file"):
        AlignedRuns.build([tmp_path / "absent.run"], qrels)


# -- INST's dense C/W/L arrays are built a chunk of segments at a time (issue 19) ------------------

@pytest.mark.parametrize("ties", ["trec_eval", "expected", "optimistic"])
def test_inst_chunks_change_no_bit(ties, monkeypatch):
    """INST computed a few segments per chunk equals INST over one chunk holding every segment,
    bit for bit (each segment's value comes from the same operations), for both tails, several
    label versions and the grouped tie policies."""
    from pyterrier_noise.engine import evaluate_tied
    from pyterrier_noise.engine.kernels import cwl, ties as tie_kernels
    runs, qrels = random_collection(3, tie_decimals=1)
    aligned = AlignedRuns.build(runs, qrels, ties="trec_eval" if ties == "trec_eval" else "expected")
    L = aligned.label_matrix()
    rng = np.random.default_rng(5)
    L = np.repeat(L, 3, axis=1)
    L[rng.random(L.shape) < 0.3] = np.nan
    specs = [MeasureSpec("INST", c, T=T, max_rel=2, tail=tail)
             for c in ("value", "residual") for T in (1.0, 3.0) for tail in ("cwl", "exact")]

    def values(budget):
        def chunks(n, depth, R, budget=budget):
            step = max(1, budget // (depth * R))
            return [(a, min(a + step, n)) for a in range(0, n, step)]
        monkeypatch.setattr(cwl, "segment_chunks", chunks)
        monkeypatch.setattr(tie_kernels, "BUDGET", budget)   # rows per chunk of the "expected" enumeration
        if ties == "trec_eval":
            return [cwl.inst_bounds(aligned, s, L)[0] for s in specs]
        return [evaluate_tied(aligned, s, L, ties) for s in specs]

    whole, chunked = values(10**12), values(1)   # one chunk of every segment / one segment per chunk
    for a, b in zip(whole, chunked):
        assert np.array_equal(a, b)
