"""pyterrier_noise.evaluate against the references, per query, for every measure of issue 27.

* pytrec_eval (trec_eval's names, ``relevance_level`` = ``rel``, ``judged_docs_only_flag`` =
  ``judged_only``) is given the runs as they are: the engine's default tie policy must be
  trec_eval's own (float32 score descending, docno descending);
* ir_measures' judged (Judged@k), msmarco (RR@k) and gdeval (ERR@k, printed to 5 decimals)
  providers break ties otherwise, so they are given the runs re-scored in trec_eval's order
  (refs.trec_ranked_copy);
* every value is also checked against the oracle (tests/measures/oracle.py, proven in
  test_oracle.py) to 1e-9, which covers the topics a tool does not report (msmarco and gdeval
  skip topics without a relevant document);
* ``ties="given"`` (the rank column) against the oracle on the given order;
* a topic a run does not answer scores as ``trec_eval -c`` does: the measure of an empty ranking
  (0, except NumRel = R).  pytrec_eval has no ``-c``, so this is checked against the oracle only.

The real-data tests take the covid fixture (slow; skipped without ../shared).
"""
from __future__ import annotations

import warnings

import pytest
from collection_helpers import random_collection
from oracle import evaluate as oracle_evaluate
from pyterrier_noise.io import CoercionWarning
from refs import (
    GDEVAL_TOL,
    MEASURES,
    MEASURES_SHORT,
    TOL,
    cutoff_of,
    engine_values,
    provider_of,
    reference,
    trec_ranked_copy,
)

SYNTH = MEASURES + MEASURES_SHORT


def references_in_trec_order(texts, runs, qrels) -> dict:
    """pytrec_eval on the runs as given; the other providers on their trec_eval-ordered copies,
    cut below the deepest cutoff they are asked for (when every one has a cutoff)."""
    direct = [t for t in texts if provider_of(t) == "pytrec_eval"]
    other = [t for t in texts if provider_of(t) != "pytrec_eval"]
    out = {}
    if direct:
        out.update(reference(direct, runs, qrels))
    if other:
        cutoffs = [cutoff_of(t) for t in other]
        depth = None if None in cutoffs else max(cutoffs)
        out.update(reference(other, {n: trec_ranked_copy(r, depth) for n, r in runs.items()}, qrels))
    return out


def check(text, got, errors, ref, orc, n_expected, with_reference=True):
    if text in errors:
        raise AssertionError(f"evaluate refused {text}: {errors[text]!r}")
    tol = GDEVAL_TOL if provider_of(text) == "gdeval" else TOL
    n_ref = 0
    for key, want in ref.items():
        if key[2] == text:
            assert key in got, f"{text}: no value for {key[:2]}"
            assert got[key] == pytest.approx(want, abs=tol, rel=0), (key, provider_of(text))
            n_ref += 1
    n_orc = 0
    for key, want in orc.items():
        if key[2] == text:
            assert key in got, f"{text}: no value for {key[:2]}"
            assert got[key] == pytest.approx(want, abs=TOL, rel=0), (key, "oracle")
            n_orc += 1
    assert n_orc == n_expected
    if with_reference:
        assert n_ref >= (1 if provider_of(text) in ("msmarco", "gdeval") else n_expected)


# ---------------------------------------------------------------------------------------------
# graded synthetic collections with ties (fast)

@pytest.fixture(scope="module", params=[0, 1, 2], ids=lambda s: f"seed{s}")
def synthetic(request):
    runs, qrels = random_collection(request.param, n_runs=3, n_topics=5, grades=3, tie_decimals=1)
    got, errors = engine_values(runs, qrels, SYNTH)
    return got, errors, references_in_trec_order(SYNTH, runs, qrels), oracle_evaluate(runs, qrels, SYNTH)


@pytest.mark.parametrize("text", SYNTH)
def test_synthetic_equals_references(synthetic, text):
    got, errors, ref, orc = synthetic
    check(text, got, errors, ref, orc, n_expected=3 * 5)


@pytest.mark.parametrize("text", SYNTH)
def test_explicit_trec_eval_policy_is_the_default(text):
    runs, qrels = random_collection(5, n_runs=2, n_topics=4, grades=3, tie_decimals=1)
    got, errors = engine_values(runs, qrels, [text], ties="trec_eval")
    check(text, got, errors, {}, oracle_evaluate(runs, qrels, [text]), n_expected=2 * 4, with_reference=False)


@pytest.mark.parametrize("text", SYNTH)
def test_given_order_equals_the_oracle(text):
    runs, qrels = random_collection(7, n_runs=2, n_topics=4, grades=3, tie_decimals=1)
    got, errors = engine_values(runs, qrels, [text], ties="given")
    check(text, got, errors, {}, oracle_evaluate(runs, qrels, [text], ties="given"), n_expected=2 * 4,
          with_reference=False)


@pytest.mark.parametrize("text", SYNTH)
def test_unanswered_topic_scores_as_trec_eval_c(text):
    """Topic '2' dropped from run0 and topic '4' judged but never retrieved by anyone: the measure
    of an empty ranking (trec_eval -c)."""
    runs, qrels = random_collection(3, n_runs=2, n_topics=4, grades=3)
    runs["run0"] = runs["run0"][runs["run0"]["qid"] != "2"]
    runs = {n: r[r["qid"] != "4"] for n, r in runs.items()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, errors = engine_values(runs, qrels, [text])
    orc = oracle_evaluate(runs, qrels, [text])
    assert orc["run0", "2", text] == (float(sum(qrels.loc[qrels["qid"] == "2", "label"] >= 2))
                                      if text == "NumRel(rel=2)" else
                                      float(sum(qrels.loc[qrels["qid"] == "2", "label"] >= 1))
                                      if text == "NumRel" else 0.0)
    check(text, got, errors, {}, orc, n_expected=2 * 4, with_reference=False)
    # said once, with the count (run0 misses topic 2; nobody answers topic 4)
    said = [w for w in caught if issubclass(w.category, CoercionWarning) and "no ranking" in str(w.message)]
    assert len(said) == 1 and str(said[0].message).startswith("3 (run, topic) pair(s)"), [str(w.message) for w in caught]


# ---------------------------------------------------------------------------------------------
# TREC-COVID round 1, all 143 runs (slow)

@pytest.fixture(scope="module")
def covid_values(covid_collection):
    qrels, runs = covid_collection
    got, errors = engine_values(runs, qrels, MEASURES)
    return got, errors, references_in_trec_order(MEASURES, runs, qrels), oracle_evaluate(runs, qrels, MEASURES)


@pytest.mark.parametrize("text", MEASURES)
def test_covid_equals_references(covid_values, text):
    got, errors, ref, orc = covid_values
    check(text, got, errors, ref, orc, n_expected=143 * 30)
