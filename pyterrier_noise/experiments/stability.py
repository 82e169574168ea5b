"""Stability of system orderings under judging error, as Rashidi, Zobel and Moffat (2023) measure it.

* :func:`ordering_agreement` -- RBO and Kendall's tau of every replicate's system ordering with
  the unperturbed one, with the paper's RBO: the truncated sum to depth 50 at persistence 0.9
  (Sec. 5.4, Table 3), beside the extrapolated form the robustness experiment reports;
* :func:`compare_stability` -- the paired t-test of two measures' RBO (or tau) over the same
  replicates (their test of RBP against AP, Sec. 5.4);
* :func:`consensus_run` and :func:`consensus_similarity` -- each topic's consensus ranking by
  mean meta-AP, and each run's RBO (persistence 0.98) with it, by group of runs (Sec. 5.4's
  explanation of TREC 7 against Robust 2004).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._validation import InputError, check_choice, check_int, check_probability
from .._vocab import RBO_SCORES, RboScore, TiePolicy
from ..io import read_runs
from ..judges import meta_ap
from ..stats import kendall_tau, paired_test, rbo
from .result import RobustnessResult

__all__ = ["PAPER_RBO", "ordering_agreement", "compare_stability", "consensus_run", "consensus_similarity"]

#: The RBO of Rashidi, Zobel and Moffat (2023) for system orderings: persistence 0.9, the truncated
#: sum to depth 50 (the number of their systems).  It is 0.9^50 = 0.0052 below the extrapolated
#: form whenever both orderings hold the same 50 systems (identical orderings: 0.9948, not 1).
PAPER_RBO = {"p": 0.9, "depth": 50, "variant": "trunc"}


def ordering_agreement(result: RobustnessResult, measures: Sequence[str] | None = None, *, p: float = 0.9,
                       depth: int | None = 50, variant: RboScore = "trunc") -> pd.DataFrame:
    """RBO and Kendall's tau_b of each replicate's system ordering with the unperturbed one.

    Rashidi, Zobel and Moffat (2023), Sec. 5.4 and Table 3: systems are ordered by their mean
    score (ties broken as the robustness experiment breaks them), and each replicate's ordering is
    compared with the ordering under the unperturbed qrels by
    ``RBO@D = (1 - p) sum_{d <= D} p^(d-1) |S_{:d} & T_{:d}| / d`` with ``p = 0.9`` and ``D = 50``
    (``variant="trunc"``, the paper's; ``"ext"`` is the extrapolated form of Webber, Moffat and
    Zobel (2010, Eq. 32) that :class:`RobustnessResult` reports, 0.0052 higher for 50 systems).

    Args:
        result: a :class:`RobustnessResult`.
        measures: measures to include (default: all).
        p: RBO persistence.
        depth: RBO depth (``None``: all systems).
        variant: ``"trunc"`` (default), ``"ext"`` or ``"min"`` (see :func:`pyterrier_noise.stats.rbo`).

    Returns:
        Frame ``replicate, measure, rbo, kendall_tau``.
    """
    if not isinstance(result, RobustnessResult):
        raise InputError(f"result must be a RobustnessResult (from robustness_experiment), got {type(result).__name__}")
    variant = check_choice("variant", variant, RBO_SCORES)
    p = check_probability("p", p)
    if depth is not None:
        depth = check_int("depth", depth, 1)
    names = list(result.measures) if measures is None else [str(m) for m in measures]
    frames = []
    for m in names:
        if m not in result.means:
            raise InputError(f"measure {m!r} is not in this result ({result.measures})")
        rk = np.asarray(result.observed_ranks[m], dtype=float)                 # (R, S) strict ranks
        sys = result.systems[result.systems["measure"] == m]
        r0 = sys["true_rank"].to_numpy(dtype=float)                            # (S,)
        S = r0.size
        strict0, strict = S - r0, S - rk
        rb = rbo(strict, np.broadcast_to(strict0, strict.shape), p=p, variant=variant, depth=depth)
        M, M0 = result.means[m], result.true[m].mean(axis=1)
        tau = kendall_tau(M.T, np.broadcast_to(M0, M.T.shape))
        frames.append(pd.DataFrame({"replicate": np.arange(rk.shape[0]), "measure": m,
                                    "rbo": np.atleast_1d(rb), "kendall_tau": np.atleast_1d(tau)}))
    return pd.concat(frames, ignore_index=True)


def compare_stability(agreement: pd.DataFrame, a: str, b: str, statistic: str = "rbo") -> dict[str, Any]:
    """Paired t-test of two measures' agreement over the same replicates (Rashidi, Zobel and Moffat 2023, Sec. 5.4).

    The paper compares RBP with AP by a paired Student t-test of their RBO values, paired by
    judgment replicate (the same perturbed qrels score both measures).

    Args:
        agreement: a frame with ``replicate, measure`` and the ``statistic`` column (from
            :func:`ordering_agreement`, or :attr:`RobustnessResult.rankings`).
        a, b: the two measures.
        statistic: the column compared (``"rbo"`` or ``"kendall_tau"``).

    Returns:
        ``{"a", "b", "statistic", "n", "mean_a", "mean_b", "mean_diff", "p_value", "more_stable"}``
        (``more_stable`` is the measure with the larger mean, or ``None`` when they are equal).
    """
    if not isinstance(agreement, pd.DataFrame) or not {"replicate", "measure", statistic} <= set(agreement.columns):
        raise InputError(f"agreement must be a frame with columns replicate, measure and {statistic!r}")
    wide = agreement.pivot_table(index="replicate", columns="measure", values=statistic, aggfunc="first")
    for m in (a, b):
        if m not in wide.columns:
            raise InputError(f"measure {m!r} is not in the agreement frame ({list(wide.columns)})")
    pair = wide[[a, b]].dropna()
    if len(pair) < 2:
        raise InputError(f"need at least 2 replicates with both {a!r} and {b!r}, got {len(pair)}")
    x, y = pair[a].to_numpy(dtype=float), pair[b].to_numpy(dtype=float)
    pv = float(paired_test(x, y))
    diff = float((x - y).mean())
    return {"a": a, "b": b, "statistic": statistic, "n": int(len(x)), "mean_a": float(x.mean()),
            "mean_b": float(y.mean()), "mean_diff": diff, "p_value": pv,
            "more_stable": a if diff > 0 else b if diff < 0 else None}


def _ranked(runs: Mapping[str, pd.DataFrame], depth: int) -> pd.DataFrame:
    """Long frame ``name, qid, docno, rank`` (1-based, trec_eval order: score, then docno descending)."""
    parts = []
    for name, r in runs.items():
        f = r[["qid", "docno", "score"]].astype({"qid": str, "docno": str})
        f = f.sort_values(["qid", "score", "docno"], ascending=[True, False, False], kind="mergesort")
        f = f.assign(rank=f.groupby("qid").cumcount() + 1)
        parts.append(f[f["rank"] <= depth].assign(name=str(name))[["name", "qid", "docno", "rank"]])
    return pd.concat(parts, ignore_index=True)


def consensus_run(runs: Any, depth: int = 1000, ties: TiePolicy = "trec_eval") -> pd.DataFrame:
    """Each topic's consensus ranking: documents by decreasing mean meta-AP over the runs.

    Rashidi, Zobel and Moffat (2023), Sec. 5.4: every document some run ranks in its top
    ``depth`` is scored by its mean meta-AP weight ``1 + H_N - H_k`` over all runs
    (:func:`pyterrier_noise.judges.meta_ap`), and ranked by it (ties: docno descending, as
    trec_eval orders equal scores).

    Returns:
        A run frame ``qid, docno, score, rank`` (``score`` = mean meta-AP, ``rank`` 1-based).
    """
    depth = check_int("depth", depth, 1)
    m = meta_ap(runs, depth=depth, ties=ties)
    m = m.sort_values(["qid", "meta_ap", "docno"], ascending=[True, False, False], kind="mergesort")
    return pd.DataFrame({"qid": m["qid"].to_numpy(), "docno": m["docno"].to_numpy(),
                         "score": m["meta_ap"].to_numpy(),
                         "rank": m.groupby("qid").cumcount().to_numpy() + 1})


def consensus_similarity(runs: Any, scores: Mapping[str, float] | pd.Series | None = None, *, top: int = 10,
                         p: float = 0.98, depth: int = 1000, ties: TiePolicy = "trec_eval") -> pd.DataFrame:
    """Each run's similarity to the consensus run, by group (Rashidi, Zobel and Moffat 2023, Sec. 5.4).

    For every run and topic, ``RBO@D = (1 - p) sum_{d <= D} p^(d-1) X_d / d`` between the run's
    top ``D = depth`` and :func:`consensus_run`'s (``X_d`` the overlap of the two depth-``d``
    prefixes; a list shorter than ``d`` contributes its whole prefix), averaged over topics.  With
    ``scores`` (each run's effectiveness, e.g. its mean AP under the qrels), the ``top`` best runs
    form the group ``"top"`` and the others ``"rest"``: the paper found the top-10 TREC 7 runs
    less like the consensus (0.358) than the other 40 (0.522), which is why rank-biased flips hurt
    TREC 7 more.  The paper gives persistence 0.98 and no depth; the default is the run depth 1000.

    Returns:
        Frame ``name, rbo`` (mean over topics), with ``score`` and ``group`` when ``scores`` is given.
    """
    p = check_probability("p", p)
    depth = check_int("depth", depth, 1)
    top = check_int("top", top, 1)
    runs = read_runs(runs)
    cons = consensus_run(runs, depth, ties)
    long = _ranked(runs, depth)
    names = sorted(long["name"].unique())
    topics = sorted(cons["qid"].unique())
    key = pd.MultiIndex.from_arrays([cons["qid"].to_numpy(), cons["docno"].to_numpy()])
    at = key.get_indexer(pd.MultiIndex.from_arrays([long["qid"].to_numpy(), long["docno"].to_numpy()]))
    c = cons["rank"].to_numpy()[np.maximum(at, 0)]
    found = at >= 0
    ok = found & (c <= depth)
    enter = np.maximum(long["rank"].to_numpy(), c)[ok]                         # depth at which it overlaps
    g = (pd.Index(names).get_indexer(long["name"]) * len(topics) + pd.Index(topics).get_indexer(long["qid"]))[ok]
    G = len(names) * len(topics)
    counts = np.bincount(g * (depth + 1) + enter, minlength=G * (depth + 1)).reshape(G, depth + 1)[:, 1:]
    X = np.cumsum(counts, axis=1, dtype=np.float64)                            # (G, depth) prefix overlaps
    d = np.arange(1, depth + 1, dtype=np.float64)
    per = (1.0 - p) * (X * p ** (d - 1) / d).sum(axis=1)
    has = np.zeros(G, dtype=bool)                                             # (run, topic) with a ranking
    has[pd.Index(names).get_indexer(long["name"]) * len(topics) + pd.Index(topics).get_indexer(long["qid"])] = True
    per = np.where(has, per, np.nan).reshape(len(names), len(topics))
    out = pd.DataFrame({"name": names, "rbo": np.nanmean(per, axis=1)})
    if scores is not None:
        s = pd.Series(scores, dtype=float)
        missing = [n for n in names if n not in s.index]
        if missing:
            raise InputError(f"scores: no score for run(s) {missing[:5]}; give one per run")
        out["score"] = s.reindex(names).to_numpy()
        best = out["score"].rank(ascending=False, method="first") <= top
        out["group"] = np.where(best, "top", "rest")
    return out
