"""Tests for pyterrier_noise.synthetic: the seeded synthetic TREC-like collection."""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_measures import P

from pyterrier_noise import InputError
# _break_ties: synthetic.py's private tie breaker, tested here next to the module it serves
from pyterrier_noise.synthetic import SyntheticCollection, _break_ties, default_collection, make_collection

DOCS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "synthetic.md"


@pytest.fixture(scope="module")
def tied() -> SyntheticCollection:
    return make_collection(quantise=1)


def all_runs(c: SyntheticCollection) -> pd.DataFrame:
    return pd.concat([r.assign(name=n) for n, r in c.runs.items()], ignore_index=True)


def top_k(c: SyntheticCollection, k: int) -> pd.DataFrame:
    runs = all_runs(c)
    return runs[runs["rank"] < k]


def mean_precision(c: SyntheticCollection, k: int, qrels: pd.DataFrame) -> pd.Series:
    """Mean P@k per system from the rank column (unjudged counts as non-relevant)."""
    top = top_k(c, k).merge(qrels, on=["qid", "docno"], how="left")
    rel = (top["label"].fillna(0) > 0).astype(float)
    return rel.groupby(top["name"]).sum() / (k * len(c.topics))


def assert_collections_equal(a: SyntheticCollection, b: SyntheticCollection) -> None:
    for attr in ("topics", "qrels", "true_qrels", "effectiveness"):
        pd.testing.assert_frame_equal(getattr(a, attr), getattr(b, attr))
    pd.testing.assert_series_equal(a.system_quality, b.system_quality)
    assert a.names == b.names and a.contributing == b.contributing and a.variant_of == b.variant_of
    for name in a.names:
        pd.testing.assert_frame_equal(a.runs[name], b.runs[name])


# ----------------------------------------------------------------------------------------------
# determinism


def test_same_seed_gives_identical_collections():
    assert_collections_equal(make_collection(seed=7, quantise=2), make_collection(seed=7, quantise=2))
    assert_collections_equal(default_collection(), make_collection())


def test_different_seeds_differ(coll):
    other = make_collection(seed=1)
    assert not np.array_equal(coll.true_qrels["label"], other.true_qrels["label"])
    assert not np.array_equal(coll.runs["run01"]["score"], other.runs["run01"]["score"])
    assert not np.array_equal(coll.system_quality, other.system_quality)


def test_documents_do_not_depend_on_systems_pool_or_ties(coll):
    # the documents and their latent labels come from their own random stream
    for kw in (dict(n_systems=5), dict(pool_depth=3, pool_systems=4), dict(quantise=0)):
        pd.testing.assert_frame_equal(make_collection(**kw).true_qrels, coll.true_qrels)
    # ties and pooling do not change which systems are good or what they retrieve
    q = make_collection(quantise=3, pool_systems=2)
    pd.testing.assert_series_equal(q.system_quality, coll.system_quality)
    assert set(zip(q.runs["run07"]["qid"], q.runs["run07"]["docno"])) \
        == set(zip(coll.runs["run07"]["qid"], coll.runs["run07"]["docno"]))


def test_default_collection_returns_a_copy():
    a = default_collection()
    a.runs["run01"].loc[:, "score"] = -1.0
    a.qrels.loc[:, "label"] = -1          # in place (DataFrame.drop(inplace=True) is deprecated in pandas 3.1)
    b = default_collection()
    assert (b.runs["run01"]["score"] > 0).all() and len(b.qrels) > 0 and (b.qrels["label"] >= 0).all()


def test_accessors_return_copies(coll):
    c = coll.copy()
    pd.testing.assert_frame_equal(c.get_qrels(), c.qrels)
    pd.testing.assert_frame_equal(c.get_qrels(true=True), c.true_qrels)
    pd.testing.assert_frame_equal(c.get_topics(), c.topics)
    qrels, topics = c.get_qrels(), c.get_topics()
    qrels.loc[:, "label"] = 99
    topics.loc[:, "query"] = ""
    assert (c.qrels["label"] != 99).all() and (c.topics["query"] != "").all()
    meta = c.metadata()
    assert list(meta.columns) == ["run", "contributed_judgments", "variant_of", "quality"]
    assert meta["quality"].tolist() == c.system_quality.tolist()


# ----------------------------------------------------------------------------------------------
# shapes and schemas


def test_shapes_and_schemas(coll):
    n_topics, n_systems, n_docs, depth = 30, 20, 500, 100
    assert list(coll.topics.columns) == ["qid", "query"]
    assert coll.topics["qid"].tolist() == [str(i) for i in range(1, n_topics + 1)]
    assert list(coll.qrels.columns) == ["qid", "docno", "label"]
    assert list(coll.true_qrels.columns) == ["qid", "docno", "label"]
    assert len(coll.true_qrels) == n_topics * n_docs
    assert not coll.true_qrels.duplicated(["qid", "docno"]).any()
    assert set(coll.true_qrels["label"]) == {0, 1, 2}
    assert coll.names == [f"run{i:02d}" for i in range(1, n_systems + 1)]
    assert coll.contributing == coll.names[:10]  # default: the first half
    assert list(coll.system_quality.index) == coll.names
    assert coll.effectiveness.shape == (n_systems, n_topics) and (coll.effectiveness > 0).all().all()
    assert len(coll.variant_of) == n_systems // 5
    assert not set(coll.variant_of) & set(coll.variant_of.values())  # parents are originals
    for name, run in coll.runs.items():
        assert list(run.columns) == ["qid", "docno", "score", "rank"]
        assert len(run) == n_topics * depth
        assert run.groupby("qid").size().eq(depth).all()
        assert pd.api.types.is_string_dtype(run["qid"]) and pd.api.types.is_string_dtype(run["docno"])
        assert run["score"].dtype == np.float64 and run["rank"].dtype == np.int64
        assert (run["score"] > 0).all()  # BM25-like
        # every docno belongs to its topic: d<qid>-<n>
        assert (run["docno"].str.extract(r"^d(\d+)-\d+$")[0] == run["qid"]).all()
    # qrels are a subset of the true labels, with the same labels
    merged = coll.qrels.merge(coll.true_qrels, on=["qid", "docno"], how="left", suffixes=("", "_true"))
    assert merged["label_true"].notna().all()
    assert (merged["label"] == merged["label_true"]).all()


@pytest.mark.parametrize("which", ["default", "tied", "very_tied"])
def test_rankings_are_trec_eval_ordered(which, coll, tied):
    c = {"default": coll, "tied": tied}.get(which) or make_collection(quantise=0, n_topics=5)
    runs = all_runs(c)
    depth = c.params["depth"]
    # rows are grouped by qid in numeric order, ranks 0..depth-1 in row order
    assert runs.groupby("name")["qid"].apply(lambda q: q.astype(int).is_monotonic_increasing).all()
    assert np.array_equal(runs["rank"].to_numpy(), np.tile(np.arange(depth), len(runs) // depth))
    # no duplicate document within a ranking
    assert not runs.duplicated(["name", "qid", "docno"]).any()
    # sorted by score descending, ties by docno descending (trec_eval's comp_sim_docno)
    prev = runs.shift()
    same = (runs["rank"] > 0).to_numpy()
    assert (runs["score"][same] <= prev["score"][same]).all()
    tie = same & (runs["score"] == prev["score"]).to_numpy()
    assert (runs["docno"][tie] < prev["docno"][tie]).all()
    assert tie.any() == (which != "default")


def test_ranks_agree_with_trec_eval_under_ties(tied):
    """P@k from the rank column equals pytrec_eval's P@k, which sorts by score then docno desc."""
    qrels = tied.true_qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    for name in ("run01", "run12", "run20"):
        run = tied.runs[name]
        ours = run.merge(tied.true_qrels, on=["qid", "docno"])
        for k in (1, 3, 5, 10):
            expected = (ours[ours["rank"] < k].groupby("qid")["label"].apply(lambda x: (x > 0).sum()) / k)
            got = {m.query_id: m.value for m in ir_measures.iter_calc(
                [P @ k], qrels, run.rename(columns={"qid": "query_id", "docno": "doc_id"}))}
            assert got == pytest.approx(expected.reindex(list(got), fill_value=0).to_dict(), abs=1e-12)


# ----------------------------------------------------------------------------------------------
# pooling and unjudged documents


@pytest.mark.parametrize("pool_systems, pool_depth, contributing", [
    (None, 10, [f"run{i:02d}" for i in range(1, 11)]),
    (3, 5, ["run01", "run02", "run03"]),
    (["run05", "run02"], 20, ["run02", "run05"]),
    ([0, 4, 19], 1, ["run01", "run05", "run20"]),
])
def test_judged_documents_are_exactly_the_pool(pool_systems, pool_depth, contributing):
    c = make_collection(n_topics=8, pool_systems=pool_systems, pool_depth=pool_depth)
    assert c.contributing == contributing
    top = top_k(c, pool_depth)
    pool = set(zip(*top[top["name"].isin(c.contributing)][["qid", "docno"]].to_numpy().T))
    assert set(zip(c.qrels["qid"], c.qrels["docno"])) == pool
    assert len(c.qrels) == len(pool)


def test_non_contributing_systems_retrieve_unjudged_documents(coll):
    top = top_k(coll, 10).merge(coll.qrels, on=["qid", "docno"], how="left")
    unjudged = top["label"].isna().groupby(top["name"]).mean()
    contributing = unjudged.index.isin(coll.contributing)
    assert (unjudged[contributing] == 0).all()           # pooled to depth 10
    assert (unjudged[~contributing] > 0.05).all()        # every other system has holes
    assert unjudged[~contributing].mean() > 0.2          # about a third on average (0.34 at seed 0)
    # and beyond the pool depth, contributing systems have unjudged documents too
    deeper = top_k(coll, 20).merge(coll.qrels, on=["qid", "docno"], how="left")
    assert deeper.loc[deeper["name"].isin(coll.contributing), "label"].isna().any()


# ----------------------------------------------------------------------------------------------
# the model: quality, topics, teams, labels


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_better_systems_score_higher_on_true_labels(seed):
    c = make_collection(seed=seed)
    p10 = mean_precision(c, 10, c.true_qrels)
    rho = scipy.stats.spearmanr(c.system_quality.reindex(p10.index), p10).statistic
    assert rho > 0.75  # 0.92 .. 1.0 on these seeds
    assert p10.max() - p10.min() > 0.3  # systems of varied quality


def test_effectiveness_depends_on_topic_and_interaction(coll):
    top = top_k(coll, 10).merge(coll.true_qrels, on=["qid", "docno"])
    p10 = (top["label"] > 0).groupby([top["name"], top["qid"]]).mean().unstack()
    topic_means = p10.mean(axis=0)
    assert topic_means.max() - topic_means.min() > 0.4   # topic difficulty varies
    # no system is best on every topic: the ranking of systems changes with the topic
    best = p10.to_numpy() == p10.to_numpy().max(axis=0, keepdims=True)
    assert best.all(axis=1).sum() == 0
    # per-topic effectiveness tracks the latent per-topic signal-to-noise ratio
    rho = scipy.stats.spearmanr(coll.effectiveness.loc[p10.index, p10.columns].to_numpy().ravel(),
                                p10.to_numpy().ravel()).statistic
    assert rho > 0.5


def test_variants_overlap_heavily_with_their_parent(coll):
    top = top_k(coll, 10)
    sets = {n: set(zip(g["qid"], g["docno"])) for n, g in top.groupby("name")}
    teams = {frozenset(p) for p in coll.variant_of.items()} | \
        {frozenset((a, b)) for a, pa in coll.variant_of.items() for b, pb in coll.variant_of.items() if pa == pb}
    names = coll.names
    others = [len(sets[a] & sets[b]) / len(sets[a]) for i, a in enumerate(names) for b in names[i + 1:]
              if frozenset((a, b)) not in teams]
    for variant, parent in coll.variant_of.items():
        assert len(sets[variant] & sets[parent]) / len(sets[variant]) > 2 * np.mean(others)
        assert abs(coll.system_quality[variant] - coll.system_quality[parent]) < 1.0


def test_label_distribution_is_skewed(coll):
    labels = coll.true_qrels["label"]
    counts = labels.value_counts()
    assert counts[0] > counts[1] > counts[2] > 0
    assert counts[0] / len(labels) > 0.85
    per_topic = (labels > 0).groupby(coll.true_qrels["qid"]).sum()
    assert per_topic.min() >= 1                          # every topic has a relevant document
    assert per_topic.max() > 5 * per_topic.min()         # generality varies across topics
    # binary and finer grades
    assert set(make_collection(grades=(0, 1), n_topics=5).true_qrels["label"]) == {0, 1}
    fine = make_collection(grades=(0, 1, 2, 3, 4), n_topics=10).true_qrels["label"]
    counts = fine.value_counts().reindex(range(5), fill_value=0)
    assert (np.diff(counts.to_numpy()) < 0).all()


def test_every_topic_gets_a_relevant_document_even_when_tiny():
    c = make_collection(n_topics=40, n_docs_per_topic=2, depth=2, pool_depth=1, n_systems=2, seed=5)
    assert ((c.true_qrels["label"] > 0).groupby(c.true_qrels["qid"]).sum() >= 1).all()


# ----------------------------------------------------------------------------------------------
# ties


def count_ties(c: SyntheticCollection, dtype=np.float64) -> int:
    runs = all_runs(c)
    scores = runs["score"].to_numpy(dtype)
    same_ranking = (runs["rank"] > 0).to_numpy()
    return int((same_ranking[1:] & (scores[1:] == scores[:-1])).sum())


def test_quantise_creates_ties(coll, tied):
    assert count_ties(coll) == 0
    assert count_ties(coll, np.float32) == 0  # trec_eval compares float32 scores
    ties = [count_ties(make_collection(quantise=d, n_topics=10)) for d in (0, 1, 2, 3)]
    assert ties[0] > ties[1] > ties[2] > ties[3] > 0
    assert count_ties(tied) == count_ties(tied, np.float32) > 0.2 * 20 * 30 * 100
    s = tied.runs["run03"]["score"].to_numpy()
    assert np.array_equal(s, np.round(s, 1))


@pytest.mark.parametrize("seed", range(6))
def test_unquantised_scores_have_no_float32_ties(seed):
    # float32 collisions happen about once per default-sized collection before tie breaking
    c = make_collection(seed=seed, n_topics=15)
    assert count_ties(c, np.float32) == 0


def test_break_ties_keeps_order_and_makes_scores_strict():
    x = np.array([[5, 3, 3, 3, 1], [2, 2, 1, 1, 1]], dtype=np.float32)
    y = _break_ties(x)
    assert (np.diff(y, axis=1) < 0).all()
    assert np.array_equal(np.argsort(-y, axis=1, kind="stable"), np.argsort(-x, axis=1, kind="stable"))
    assert np.allclose(y, x, rtol=1e-6, atol=0)
    assert np.array_equal(x[:, 0], np.array([5, 2], dtype=np.float32))  # input untouched


# ----------------------------------------------------------------------------------------------
# TREC files


@pytest.mark.parametrize("compress", [False, True])
def test_write_trec_round_trip(compress, tmp_path, tied):
    c = tied
    root = c.write_trec(tmp_path / "coll", compress=compress)
    assert root == tmp_path / "coll"
    suffix = ".gz" if compress else ""
    assert sorted(p.name for p in (root / "runs").iterdir()) == sorted(n + suffix for n in c.names)
    for name in ("run01", "run17"):
        path = root / "runs" / (name + suffix)
        text = (gzip.decompress(path.read_bytes()) if compress else path.read_bytes()).decode()
        assert re.fullmatch(r"(\d+ Q0 d\d+-\d+ \d+ [0-9.]+ " + name + r"\n)+", text)
        back = pd.DataFrame(ir_measures.read_trec_run(str(path)))
        run = c.runs[name]
        assert back["query_id"].tolist() == run["qid"].tolist()
        assert back["doc_id"].tolist() == run["docno"].tolist()
        assert np.array_equal(back["score"].to_numpy(), run["score"].to_numpy())  # exact
        ranks = [int(line.split()[3]) for line in text.splitlines()]
        assert ranks == (run["rank"] + 1).tolist()  # 1-based in the file
    for file, frame in (("qrels.txt", c.qrels), ("true_qrels.txt", c.true_qrels)):
        back = pd.DataFrame(ir_measures.read_trec_qrels(str(root / file)))
        assert (back["iteration"] == "0").all()
        assert back["query_id"].tolist() == frame["qid"].tolist()
        assert back["doc_id"].tolist() == frame["docno"].tolist()
        assert back["relevance"].tolist() == frame["label"].tolist()
    assert (root / "topics.txt").read_text().splitlines()[:2] == ["1 synthetic topic 1", "2 synthetic topic 2"]
    meta = pd.read_csv(root / "runs-metadata.csv", keep_default_na=False)
    assert meta["run"].tolist() == c.names
    assert meta.loc[meta["contributed_judgments"] == "yes", "run"].tolist() == c.contributing
    assert dict(zip(meta["run"], meta["variant_of"])) == {n: c.variant_of.get(n, "") for n in c.names}


def test_write_trec_is_byte_identical_across_calls(tmp_path):
    a = make_collection(n_topics=5, seed=2).write_trec(tmp_path / "a", compress=True)
    b = make_collection(n_topics=5, seed=2).write_trec(tmp_path / "b", compress=True)
    for p in sorted(a.rglob("*")):
        if p.is_file():
            assert p.read_bytes() == (b / p.relative_to(a)).read_bytes()


def test_write_trec_full_precision_scores_round_trip(tmp_path):
    c = make_collection(n_topics=3, n_systems=2, seed=11)
    root = c.write_trec(tmp_path)
    back = pd.DataFrame(ir_measures.read_trec_run(str(root / "runs" / "run02")))
    assert np.array_equal(back["score"].to_numpy(), c.runs["run02"]["score"].to_numpy())


# ----------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize("kwargs, argument", [
    (dict(n_topics=0), "n_topics"),
    (dict(n_systems=2.5), "n_systems"),
    (dict(n_docs_per_topic=True), "n_docs_per_topic"),
    (dict(depth=600), "depth"),
    (dict(pool_depth=0), "pool_depth"),
    (dict(pool_depth=101), "pool_depth"),
    (dict(pool_systems=0), "pool_systems"),
    (dict(pool_systems=21), "pool_systems"),
    (dict(pool_systems=["run99"]), "pool_systems"),
    (dict(pool_systems=[20]), "pool_systems"),
    (dict(pool_systems=[]), "pool_systems"),
    (dict(pool_systems="run01"), "pool_systems"),
    (dict(grades=(0,)), "grades"),
    (dict(grades=(0, 2, 1)), "grades"),
    (dict(grades=(1, 2)), "grades"),
    (dict(grades=(0, 0.5)), "grades"),
    (dict(grades=5), "grades"),
    (dict(quantise=-1), "quantise"),
    (dict(quantise=5), "quantise"),
    (dict(quantise=1.5), "quantise"),
    (dict(n_variants=20), "n_variants"),
    (dict(n_variants=-1), "n_variants"),
    (dict(seed=-3), "seed"),
    (dict(seed="x"), "seed"),
])
def test_bad_arguments_raise_input_error_naming_them(kwargs, argument):
    with pytest.raises(InputError, match=f"argument '{argument}'"):
        make_collection(**kwargs)


def test_write_trec_validates(tmp_path, coll):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="argument 'directory'"):
        coll.write_trec(tmp_path / "file")
    with pytest.raises(InputError, match="argument 'compress'"):
        coll.write_trec(tmp_path / "d", compress="yes")


# ----------------------------------------------------------------------------------------------
# properties over small collections


@settings(max_examples=25, deadline=None)
@given(n_topics=st.integers(1, 4), n_systems=st.integers(1, 6), n_docs=st.integers(1, 40),
       data=st.data(), quantise=st.sampled_from([None, 0, 1, 2]), seed=st.integers(0, 2**32))
def test_invariants_on_small_collections(n_topics, n_systems, n_docs, data, quantise, seed):
    depth = data.draw(st.integers(1, n_docs))
    pool_depth = data.draw(st.integers(1, depth))
    pool = data.draw(st.integers(1, n_systems))
    c = make_collection(n_topics=n_topics, n_systems=n_systems, n_docs_per_topic=n_docs, depth=depth,
                        pool_depth=pool_depth, pool_systems=pool, quantise=quantise, seed=seed)
    runs = all_runs(c)
    assert len(runs) == n_topics * n_systems * depth
    assert not runs.duplicated(["name", "qid", "docno"]).any()
    assert np.array_equal(runs["rank"].to_numpy(), np.tile(np.arange(depth), n_topics * n_systems))
    prev = runs.shift()
    same = (runs["rank"] > 0).to_numpy()
    assert (runs["score"][same] <= prev["score"][same]).all()
    tie = same & (runs["score"] == prev["score"]).to_numpy()
    assert (runs["docno"][tie] < prev["docno"][tie]).all()
    if quantise is None:
        assert not tie.any()
    top = runs[(runs["rank"] < pool_depth) & runs["name"].isin(c.contributing)]
    assert set(zip(c.qrels["qid"], c.qrels["docno"])) == set(zip(top["qid"], top["docno"]))
    assert len(c.true_qrels) == n_topics * n_docs
    assert ((c.true_qrels["label"] > 0).groupby(c.true_qrels["qid"]).sum() >= 1).all()


# ----------------------------------------------------------------------------------------------
# the docs page


@pytest.mark.slow   # a whole docs page, as tests/docs/test_docs.py runs every page; the unit tests above are quick
def test_docs_examples_run(tmp_path, monkeypatch):
    if not DOCS_PAGE.exists():
        pytest.skip("docs/synthetic.md is absent")
    blocks = re.findall(r"```python\n(.*?)```", DOCS_PAGE.read_text(), flags=re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOCS_PAGE), "exec"), namespace)
