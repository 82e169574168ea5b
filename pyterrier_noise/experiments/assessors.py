"""How faithful is a simulated assessor?  Webber, Chandar and Carterette (2012), Sec. 3.3, 4.3-4.5.

* :func:`simulation_fidelity` -- scores under simulated qrels against the scores under an observed
  *alternative* assessor's qrels: RMSE of the mean metric and mean Kendall tau of the system
  ranking (their Tables 5 and 6);
* :func:`assessor_significance` -- pairwise significance under simulated qrels, alone ("assessor
  only") or with a bootstrap sample of topics per replicate ("assessor + topic"), against the
  decisions under the original qrels: precision, recall and accuracy (their Table 7, both blocks).

Every score comes from one alignment of the runs and one ``AlignedRuns.evaluate`` call over the
replicate label matrix; the tests are :func:`pyterrier_noise.stats.all_pairs`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validation import InputError, announce, check_choice, check_int, check_probability
from ..engine import AlignedRuns
from .._vocab import TESTS, Test, TiePolicy
from ..stats import all_pairs, kendall_tau, significant
from ._common import aligned_runs, labelled_spec

__all__ = ["SimulationFidelity", "simulation_fidelity", "AssessorSignificance", "assessor_significance"]


def _replicate_scores(runs: Any, qrels: Any, model: Any, measure: Any, n_replicates: int, seed: Any,
                      ties: str) -> tuple[AlignedRuns, str, Any, np.ndarray, np.ndarray]:
    """Aligned runs, the measure's label and spec, scores under the original qrels (S, T) and under
    ``n_replicates`` simulated qrels (S, T, R)."""
    if not hasattr(model, "sample_labels"):
        raise InputError(f"model must be a judgment perturbation model with sample_labels(table, n, seed) (e.g. a "
                         f"fitted MetarankLogisticModel or FlipRateModel), got {type(model).__name__}")
    n_replicates = check_int("n_replicates", n_replicates, 1)
    aligned = aligned_runs(runs, qrels, ties)
    if aligned.n_runs < 2:
        raise InputError(f"need at least 2 runs to compare, got {aligned.n_runs}")
    label, spec = labelled_spec(measure)
    L = model.sample_labels(aligned.table, n_replicates, seed=seed)
    out = aligned.evaluate([spec], np.concatenate([aligned.label_matrix(), L], axis=1))[spec]
    return aligned, label, spec, out[:, :, 0], out[:, :, 1:]


@dataclass
class SimulationFidelity:
    """Result of :func:`simulation_fidelity` (Webber, Chandar and Carterette 2012, Tables 5-6).

    Attributes:
        measure: the measure's label.
        systems: per run ``name, original, alternative, mean, q025, q975``: the mean over topics
            under the original qrels, the alternative assessor's qrels, and the mean and 2.5% /
            97.5% quantiles over the simulated qrels.
        rmse: ``sqrt(mean over runs and replicates of (sim - alternative)^2)`` (Table 5's RMSE).
        mean_tau: mean over replicates of Kendall's tau_b between the run ranking under the
            alternative qrels and under each simulated qrels (Table 5's tau).
        rmse_original, mean_tau_original: the same against the original qrels.
        replicates: ``(runs, replicates)`` means over topics under the simulated qrels.
        topics: the topics scored (those both qrels judge).
    """

    measure: str
    systems: pd.DataFrame
    rmse: float
    mean_tau: float
    rmse_original: float
    mean_tau_original: float
    replicates: np.ndarray = field(repr=False)
    topics: list[str] = field(repr=False)


def simulation_fidelity(runs: Any, qrels: Any, alternative: Any, model: Any, measure: Any = "AP", *,
                        n_replicates: int = 1000, seed: int | None = 0,
                        ties: TiePolicy = "trec_eval") -> SimulationFidelity:
    """Scores under simulated assessors against an observed alternative assessor (Webber et al. 2012, Sec. 3.3).

    Every run is scored under the original qrels, under the alternative assessor's qrels and
    under ``n_replicates`` qrels simulated by ``model`` from the original ones (e.g. a fitted
    :class:`~pyterrier_noise.judges.MetarankLogisticModel` or
    :class:`~pyterrier_noise.judges.FlipRateModel`).  Absolute fidelity is the RMSE between the
    simulated mean scores and the alternative mean scores, pooled over runs and replicates;
    relative fidelity is Kendall's tau_b between the run ranking under the alternative qrels and
    under each replicate, averaged (Tables 5 and 6).  The reference is the *alternative* qrels, as
    in the paper; the same numbers against the original qrels are reported beside them.

    Args:
        runs: ``{name: frame}`` or a run directory; or the runs already aligned to the original
            qrels (an AlignedRuns, with ``qrels=None``), when ``alternative`` is the same runs
            aligned to the alternative qrels (several models compared on one pair of alignments).
        qrels: the original assessor's qrels (those the model perturbs).
        alternative: the alternative assessor's qrels (or an AlignedRuns, with ``runs`` one).
        model: a judgment perturbation model with ``sample_labels``.
        measure: one measure (ir_measures name or object, or a MeasureSpec).
        n_replicates: simulated qrels (the paper: 1,000).
        seed: seed of the model's replicates.
        ties: tie policy of the alignment.

    Only topics judged in both qrels are scored (a warning counts the others).
    """
    if isinstance(runs, AlignedRuns) != isinstance(alternative, AlignedRuns):
        raise InputError("runs, alternative: pass the runs themselves ({name: frame} or a directory) and the "
                         "alternative qrels, or both as AlignedRuns (the runs aligned to the original qrels and to "
                         "the alternative qrels)")
    aligned, label, spec, X0, X = _replicate_scores(runs, qrels, model, measure, n_replicates, seed, ties)
    alt = alternative if isinstance(alternative, AlignedRuns) else aligned_runs(runs, alternative, ties)
    common = [t for t in aligned.topics if t in set(alt.topics)]
    if not common:
        raise InputError("the original and the alternative qrels share no topic")
    dropped = aligned.n_topics + alt.n_topics - 2 * len(common)
    if dropped:
        announce(f"simulation_fidelity: {dropped} topic(s) are judged in only one of the two qrels and are left out "
                 f"({len(common)} scored)")
    ti = pd.Index(aligned.topics).get_indexer(common)
    ai = pd.Index(alt.topics).get_indexer(common)
    order = pd.Index(alt.run_names).get_indexer(aligned.run_names)
    if (order < 0).any() or alt.n_runs != aligned.n_runs:
        raise InputError(f"alternative: aligns other runs than runs ({alt.n_runs} runs, {aligned.n_runs} in runs); "
                         f"expected the same runs aligned to the alternative qrels")
    Xalt = alt.evaluate([spec])[spec][order][:, ai, 0].mean(axis=1)          # (S,)
    orig = X0[:, ti].mean(axis=1)
    sim = X[:, ti, :].mean(axis=1)                                           # (S, R)
    tau_alt = kendall_tau(sim.T, np.broadcast_to(Xalt, sim.T.shape))
    tau_orig = kendall_tau(sim.T, np.broadcast_to(orig, sim.T.shape))
    systems = pd.DataFrame({"name": aligned.run_names, "original": orig, "alternative": Xalt,
                            "mean": sim.mean(axis=1), "q025": np.quantile(sim, 0.025, axis=1),
                            "q975": np.quantile(sim, 0.975, axis=1)})
    return SimulationFidelity(
        measure=label, systems=systems, rmse=float(np.sqrt(np.mean((sim - Xalt[:, None]) ** 2))),
        mean_tau=float(np.nanmean(tau_alt)), rmse_original=float(np.sqrt(np.mean((sim - orig[:, None]) ** 2))),
        mean_tau_original=float(np.nanmean(tau_orig)), replicates=sim, topics=common)


@dataclass
class AssessorSignificance:
    """Result of :func:`assessor_significance` (Webber, Chandar and Carterette 2012, Table 7).

    Attributes:
        measure: the measure's label.
        summary: ``precision, recall, accuracy`` of the simulated decisions against the original
            ones over all (pair, replicate), the share of pairs significant under the original
            qrels (``reference_rate``) and under the simulated ones (``simulated_rate``),
            ``n_pairs``, ``n_replicates``, ``vary_topics``.
        pairs: per run pair ``system_a, system_b, p_value`` (original qrels, all topics),
            ``significant`` and ``share_significant`` (over the replicates).
        topic_samples: ``(replicates, topics)`` topic indices of each replicate's bootstrap sample
            (``None`` without ``vary_topics``).
    """

    measure: str
    summary: dict[str, Any]
    pairs: pd.DataFrame
    topic_samples: np.ndarray | None = field(default=None, repr=False)


def assessor_significance(runs: Any, qrels: Any, model: Any, measure: Any = "AP", *, n_replicates: int = 1000,
                          vary_topics: bool | Sequence[bool] = True, alpha: float = 0.05, test: Test = "t",
                          seed: int | None = 0,
                          ties: TiePolicy = "trec_eval") -> AssessorSignificance | list[AssessorSignificance]:
    """Significance decisions under simulated assessors (Webber, Chandar and Carterette 2012, Sec. 4.5, Table 7).

    Each replicate draws one simulated qrels from ``model``; with ``vary_topics=True`` ("assessor
    + topic", Table 7's second block) it also draws a bootstrap sample of the topics (as many as
    there are, with replacement), so the decisions carry both assessor and topic variance; with
    ``vary_topics=False`` ("assessor only", the first block) every replicate uses all topics.
    Every pair of runs is tested (paired ``test``, ``p < alpha``) in every replicate and compared
    with its decision under the original qrels over all topics:

        precision = |sig_sim & sig_orig| / |sig_sim|,  recall = |sig_sim & sig_orig| / |sig_orig|,
        accuracy = share of (pair, replicate) with sig_sim == sig_orig.

    Args:
        runs: ``{name: frame}``, a run directory or an AlignedRuns (with ``qrels=None``).
        qrels: the original qrels.
        model: a judgment perturbation model with ``sample_labels`` (fitted).
        measure: one measure.
        n_replicates: replicates ("trials"; the paper does not say how many).
        vary_topics: also resample the topics in each replicate.  A sequence of flags (e.g.
            ``(False, True)``, both blocks of Table 7) gives a list of results, one per flag, all
            from the same simulated qrels (sampled and scored once).
        alpha: significance level.
        test: paired test (:data:`pyterrier_noise.stats.TESTS`; the paper does not name its test).
        seed: seed of the model's replicates; the topic samples come from a stream spawned from it.
        ties: tie policy of the alignment.
    """
    alpha = check_probability("alpha", alpha)
    check_choice("test", test, TESTS)
    flags = [vary_topics] if isinstance(vary_topics, (bool, np.bool_)) else list(vary_topics)
    if not flags or not all(isinstance(v, (bool, np.bool_)) for v in flags):
        raise InputError(f"argument 'vary_topics': expected True, False or a sequence of them, got {vary_topics!r}")
    aligned, label, _, X0, X = _replicate_scores(runs, qrels, model, measure, n_replicates, seed, ties)
    if aligned.n_topics < 2:
        raise InputError(f"paired tests need at least 2 topics, got {aligned.n_topics}")
    out = [_significance(aligned, label, X0, X, bool(v), alpha, test, seed) for v in flags]
    return out[0] if isinstance(vary_topics, (bool, np.bool_)) else out


def _significance(aligned: AlignedRuns, label: str, X0: np.ndarray, X: np.ndarray, vary_topics: bool, alpha: float,
                  test: str, seed: int | None) -> AssessorSignificance:
    """:func:`assessor_significance` of one block from the scores under the original qrels ``X0``
    (S, T) and the simulated ones ``X`` (S, T, R)."""
    T, R = aligned.n_topics, X.shape[2]
    samples = None
    if vary_topics:
        rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
        samples = rng.integers(0, T, size=(R, T))
        X = X[:, samples.T, np.arange(R)[None, :]]                           # (S, T, R)
    ref = all_pairs(X0, test=test)
    sim = all_pairs(X, test=test)
    ref_sig = np.asarray(significant(ref.pvalue, alpha), dtype=bool)          # (pairs,)
    sim_sig = np.asarray(significant(sim.pvalue, alpha), dtype=bool)          # (pairs, R)
    both = (sim_sig & ref_sig[:, None]).sum()
    n_sim, n_ref = int(sim_sig.sum()), int(ref_sig.sum()) * R
    summary = {"precision": float(both / n_sim) if n_sim else float("nan"),
               "recall": float(both / n_ref) if n_ref else float("nan"),
               "accuracy": float((sim_sig == ref_sig[:, None]).mean()),
               "reference_rate": float(ref_sig.mean()), "simulated_rate": float(sim_sig.mean()),
               "n_pairs": int(len(ref_sig)), "n_replicates": int(R), "vary_topics": bool(vary_topics)}
    names = np.asarray(aligned.run_names, dtype=object)
    pairs = pd.DataFrame({"system_a": names[ref.i], "system_b": names[ref.j], "p_value": ref.pvalue,
                          "significant": ref_sig, "share_significant": sim_sig.mean(axis=1)})
    return AssessorSignificance(measure=label, summary=summary, pairs=pairs, topic_samples=samples)
