"""Judgment perturbation models: seeded replicate qrels for robustness experiments.

Each model turns one set of judgments into many *replicates* -- versions of the qrels that a
different (noisier, shallower, sparser) judging process could have produced.  A replicate is a
label vector over the rows of a :class:`~pyterrier_noise.engine.JudgmentTable` (``NaN`` =
unjudged in that replicate), and ``n`` replicates are a ``(n_judgments, n)`` label matrix that
:meth:`AlignedRuns.evaluate <pyterrier_noise.engine.AlignedRuns.evaluate>` scores for every run,
topic and replicate at once (DESIGN.md, "align once, evaluate many times").

Models (each a :class:`JudgmentPerturbation`):

* :class:`RandomFlips` -- every judgment flips with the same class-conditional probability
  (Li & Smucker 2014, as used by Rashidi, Zobel & Moffat 2023, Sec. 3.1; rates from
  discriminability and bias, seed000 Sec. 2.1);
* :class:`RankBiasedFlips` -- the same expected error counts, placed by the meta-AP popularity of
  each document through Webber et al.'s logistic weights (Rashidi et al. 2023, Eq. 1, Figs 2-3);
* :class:`FlipRateModel` and :class:`MetarankLogisticModel` -- disagreement models fitted on dual
  assessments, per topic or universal (Webber et al. 2012, Sec. 3.2.2, Eq. 1), with
  :func:`sample_for_dual_assessment` to choose the documents to re-judge (Sec. 3.3);
* :class:`ConfusionJudge` -- a graded judge given by a confusion matrix ``P(observed | true)``
  (Goldberg et al. 2017, Table 1, Sec. 4.1);
* :class:`PoolDepthReduction` and :class:`RandomRemoval` -- judgments become *unjudged*
  (Yang 2019, Sec. 4.6; Buettcher et al. 2007), so residuals grow.

Randomness.  A replicate set is a function of ``(seed, judged rows of the table)`` only.  All
stochastic models draw exactly one uniform number per (judged row, replicate) from numpy's PCG64
stream seeded by ``numpy.random.SeedSequence(seed)``, in replicate-major order; replicate ``i``
uses stream positions ``i*m .. (i+1)*m - 1`` (``m`` judged rows), which the generator reaches
with ``PCG64.advance`` without drawing the earlier ones.  (``ConfusionJudge(sample_matrix=True)``
draws its matrices from a second stream, child 0 of the seed; stage ``k`` of a :class:`Chain`
uses child ``k``.)  Hence the same seed gives the same replicates on any machine, the first ``k``
of ``n`` replicates equal the ``k`` replicates, and replicates ``[start, start + n)`` can be drawn
alone (``start=``).  Two models with the same seed share these uniforms (common random numbers),
so their replicates differ only where the models do.
"""
from __future__ import annotations

import copy
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd
import pyterrier as pt
from scipy import stats
from scipy.special import expit

from ..engine.align import AlignedRuns, JudgmentTable
from .._warnings import PerturbationWarning
from .._validation import InputError, announce, check_choice, check_number
from ..io.trec import read_qrels, read_runs

__all__ = [
    "JUDGES", "WEBBER_TREC6", "PerturbationWarning", "sdt_rates", "sdt_params", "meta_ap_weight", "meta_ap",
    "inclusion_probabilities", "weighted_subset", "ReplicateSet", "JudgmentPerturbation", "RandomFlips",
    "RankBiasedFlips", "FlipRateModel", "MetarankLogisticModel", "sample_for_dual_assessment",
    "ConfusionJudge", "PoolDepthReduction", "RandomRemoval", "Chain", "deeply_judged_runs", 
]

#: Kinds of judges of Rashidi, Zobel & Moffat (2023) as (discriminability d', bias); seed000 Sec. 2.1.
#: ``smart_neutral`` is the paper's main setting (TPR 0.93, FPR 0.07), ``extreme`` its low-TPR case
#: (0.31, 0.07); ``nist_primary`` and ``crowd_secondary`` are Smucker & Jethani's estimates for
#: primary (NIST) and secondary (crowd) assessors (0.78 / 0.06 and 0.79 / 0.14).
JUDGES: dict[str, tuple[float, float]] = {
    "smart_neutral": (3.0, 0.0),
    "nist_primary": (2.3, 0.37),
    "crowd_secondary": (1.9, 0.14),
    "extreme": (1.0, 1.0),
}

#: Webber et al.'s logistic agreement model fitted on TREC 6 (Rashidi et al. 2023, Table 1):
#: ``tpr`` = (beta0, beta1) of P(judged relevant | relevant, meta-AP), ``fpr`` the same for
#: non-relevant documents.
WEBBER_TREC6: dict[str, tuple[float, float]] = {"tpr": (-0.62, 0.53), "fpr": (-3.90, 1.20)}

#: How runs are ordered for meta-AP and pools: trec_eval's order (score, then docno descending) or
#: the runs' own ``rank`` column.
RUN_ORDERS = ("trec_eval", "given")

#: Evaluation depth N of meta-AP (Aslam, Pavlu & Yilmaz 2005): "N = 1000, the maximum run length".
META_AP_DEPTH = 1000



def _warn(message: str) -> None:
    warnings.warn(message, PerturbationWarning, stacklevel=3)


# ------------------------------------------------------------------------------------------------
# validation helpers

def _number(name: str, value: Any) -> float:
    return check_number(name, value)


def _probability(name: str, value: Any) -> float:
    v = _number(name, value)
    if not 0.0 <= v <= 1.0:
        raise InputError(f"{name} must be a probability in [0, 1], got {value!r}")
    return v


def _integer(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_seed(seed: Any) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"seed must be a non-negative integer (or None for fresh entropy), got {seed!r}")
    return int(seed)


def _choice(name: str, value: Any, choices: Sequence) -> Any:
    return check_choice(name, value, choices)


def _binary_labels(rel: Any, off_label: Any, on_label: Any) -> tuple[float, float, float]:
    """Validate the binary threshold and the labels a flipped judgment receives."""
    rel = _number("rel", rel)
    if rel <= 0:
        raise InputError(f"rel must be > 0 (label >= rel is relevant; 0 would make every judgment relevant), "
                         f"got {rel!r}")
    off = _number("off_label", off_label)
    on = rel if on_label is None else _number("on_label", on_label)
    if not 0 <= off < rel:
        raise InputError(f"off_label must be in [0, rel={rel:g}) so that a flipped relevant judgment becomes "
                         f"non-relevant, got {off_label!r}")
    if on < rel:
        raise InputError(f"on_label must be >= rel={rel:g} so that a flipped non-relevant judgment becomes "
                         f"relevant, got {on_label!r}")
    return rel, off, on


def _as_table(table: Any) -> JudgmentTable:
    if isinstance(table, AlignedRuns):
        return table.table
    if isinstance(table, JudgmentTable):
        return table
    raise InputError(f"expected a JudgmentTable (e.g. AlignedRuns.table or JudgmentTable.from_qrels(qrels)), got "
                     f"{type(table).__name__}; use model.replicates(qrels, n) to start from a qrels frame or file")


def _same_rows(a: JudgmentTable, b: JudgmentTable) -> bool:
    return a is b or (len(a) == len(b) and a.topics == b.topics
                      and np.array_equal(a.frame["qid"].to_numpy(), b.frame["qid"].to_numpy())
                      and np.array_equal(a.frame["docno"].to_numpy(), b.frame["docno"].to_numpy()))


# ------------------------------------------------------------------------------------------------
# signal detection: rates <-> (discriminability, bias)

def sdt_rates(disc: Any, bias: Any) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Error rates of a judge with discriminability ``disc`` (d') and criterion ``bias``.

    ``TPR = Phi(disc/2 - bias)``, ``FPR = Phi(-disc/2 - bias)`` (Li & Smucker 2014, as used by
    Rashidi, Zobel & Moffat 2023, Sec. 3.1; seed000 Sec. 2.1).  Vectorised; ``(3, 0)`` gives
    ``(0.9332, 0.0668)``.
    """
    d = np.asarray(disc, dtype=np.float64)
    b = np.asarray(bias, dtype=np.float64)
    if not (np.isfinite(d).all() and np.isfinite(b).all()):
        raise InputError(f"disc and bias must be finite numbers, got disc={disc!r}, bias={bias!r}")
    tpr, fpr = stats.norm.cdf(d / 2 - b), stats.norm.cdf(-d / 2 - b)
    if tpr.ndim == 0:
        return float(tpr), float(fpr)
    return tpr, fpr


def sdt_params(tpr: Any, fpr: Any) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Inverse of :func:`sdt_rates`: ``disc = z(TPR) - z(FPR)``, ``bias = -(z(TPR) + z(FPR)) / 2``.

    ``z`` is the probit (seed000 Sec. 2.1).  Rates of exactly 0 or 1 give infinite values.
    """
    t = np.asarray(tpr, dtype=np.float64)
    f = np.asarray(fpr, dtype=np.float64)
    if not (np.all((t >= 0) & (t <= 1)) and np.all((f >= 0) & (f <= 1))):
        raise InputError(f"tpr and fpr must be probabilities in [0, 1], got tpr={tpr!r}, fpr={fpr!r}")
    zt, zf = stats.norm.ppf(t), stats.norm.ppf(f)
    disc, bias = zt - zf, -0.5 * (zt + zf)
    if np.ndim(disc) == 0:
        return float(disc), float(bias)
    return disc, bias


# ------------------------------------------------------------------------------------------------
# meta-AP popularity

def meta_ap_weight(rank: Any, depth: int = META_AP_DEPTH) -> np.ndarray:
    """Meta-AP weight of a document at 1-based ``rank``: ``1 + H_N - H_k`` for ``k <= N``, else 0.

    Aslam, Pavlu & Yilmaz (2005); seed000 Sec. 2.2, seed003 Sec. 2.  ``H_k`` is the k-th harmonic
    number and ``N = depth``; rank 1 weighs ``H_1000 = 7.4855``, rank 1000 weighs 1.
    """
    depth = _integer("depth", depth, 1)
    k = np.asarray(rank)
    if not np.issubdtype(k.dtype, np.integer):
        kf = np.asarray(k, dtype=np.float64)
        if not (np.isfinite(kf).all() and (kf == np.round(kf)).all()):
            raise InputError(f"rank must hold 1-based integer ranks, got {rank!r}")
        k = kf.astype(np.int64)
    if (k < 1).any():
        raise InputError(f"rank must hold 1-based ranks (>= 1), got {rank!r}")
    return _meta_ap_table(depth)[np.minimum(k, depth + 1) - 1]


def _meta_ap_table(depth: int) -> np.ndarray:
    """Weight of each 0-based position 0 .. depth (the last entry, beyond N, is 0)."""
    harmonic = np.cumsum(1.0 / np.arange(1, depth + 1))
    return np.append(1.0 + harmonic[-1] - harmonic, 0.0)


def _aligned_for(runs: Any, table: JudgmentTable, ties: str) -> AlignedRuns:
    """The runs aligned to ``table`` (an AlignedRuns on the same rows is used as it is)."""
    if isinstance(runs, AlignedRuns):
        if _same_rows(runs.table, table):
            return runs
        raise InputError("runs: an AlignedRuns is only usable when it was built on these judgments (the same "
                         "(qid, docno) rows); pass the runs themselves ({name: frame} or a directory) instead")
    return AlignedRuns.build(runs, table, ties=ties, on_topic_mismatch="ignore")


def _in_top(aligned: AlignedRuns, depth: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Positions that are judged rows of the table and ranked above ``depth``; error when none."""
    ok = (aligned.jidx >= 0) & (aligned.pos < depth)
    if not ok.any():
        raise InputError(
            f"{what}: none of the {len(aligned.table)} judged documents is retrieved in the top {depth} by any "
            f"of the {aligned.n_runs} run(s); the runs and the qrels have no overlap (qrels topics: "
            f"{aligned.topics[:5]}{' ...' if aligned.n_topics > 5 else ''})")
    return aligned.jidx[ok], aligned.pos[ok]


class _MetaAP:
    """Mean meta-AP of every row of a judgment table, from runs or from a given frame (cached)."""

    def __init__(self, runs: Any, metarank: Any, depth: int, ties: str, what: str) -> None:
        if (runs is None) == (metarank is None):
            raise InputError(f"{what}: give either runs (to compute meta-AP) or metarank (a qid, docno, meta_ap "
                             f"frame), not {'both' if runs is not None else 'neither'}")
        self.depth = _integer("depth", depth, 1)
        self.ties = _choice("ties", ties, RUN_ORDERS)
        self.what = what
        self.runs = runs if runs is None or isinstance(runs, AlignedRuns) else read_runs(runs)
        self.frame = None if metarank is None else self._check_frame(metarank)
        self._cache: tuple[JudgmentTable, np.ndarray] | None = None

    @staticmethod
    def _check_frame(frame: Any) -> pd.Series:
        if not isinstance(frame, pd.DataFrame) or not {"qid", "docno", "meta_ap"} <= set(frame.columns):
            raise InputError(f"metarank must be a frame with columns qid, docno, meta_ap (as meta_ap() returns), "
                             f"got {type(frame).__name__}"
                             + (f" with columns {list(frame.columns)}" if isinstance(frame, pd.DataFrame) else ""))
        values = pd.to_numeric(frame["meta_ap"], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(f"metarank: column 'meta_ap', row {i}: expected a finite number >= 0, got "
                             f"{frame['meta_ap'].iloc[i]!r}")
        index = pd.MultiIndex.from_arrays([frame["qid"].astype(str).to_numpy(), frame["docno"].astype(str).to_numpy()])
        if index.has_duplicates:
            i = int(np.flatnonzero(index.duplicated())[0])
            raise InputError(f"metarank: row {i} repeats (qid, docno) = {index[i]!r}; expected one value per document")
        return pd.Series(values, index=index)

    def for_table(self, table: JudgmentTable) -> np.ndarray:
        if self._cache is not None and self._cache[0] is table:
            return self._cache[1]
        if self.frame is not None:
            keys = pd.MultiIndex.from_arrays([table.frame["qid"].to_numpy(), table.frame["docno"].to_numpy()])
            loc = self.frame.index.get_indexer(keys)
            missing = loc < 0
            if missing.all():
                raise InputError(f"{self.what}: the metarank frame has a value for none of the {len(table)} judged "
                                 f"documents; the metarank frame and the qrels have no overlap")
            if missing.any():
                announce(f"{self.what}: {int(missing.sum())} judged document(s) have no meta-AP value in the "
                         f"metarank frame and count as retrieved by no run (meta-AP 0)")
            values = np.where(missing, 0.0, self.frame.to_numpy()[np.maximum(loc, 0)])
        else:
            aligned = _aligned_for(self.runs, table, self.ties)
            rows, pos = _in_top(aligned, self.depth, self.what)
            weights = _meta_ap_table(self.depth)[pos]
            # mean over ALL runs of the set, zeros included (Aslam et al. 2005; seed000 Sec. 2.2)
            values = np.bincount(rows, weights=weights, minlength=len(table)) / aligned.n_runs
        self._cache = (table, values)
        return values


def meta_ap(runs: Any, docs: Any = None, depth: int = META_AP_DEPTH, ties: str = "trec_eval") -> pd.DataFrame:
    """Mean meta-AP ("metarank") of documents over a set of runs.

    ``meta_ap(d) = (1/M) sum_runs (1 + H_N - H_k)`` with ``k`` the 1-based rank of ``d`` in a run
    (0 when the run does not rank it in its top ``N = depth``), averaged over all ``M`` runs
    (Aslam, Pavlu & Yilmaz 2005; Rashidi et al. 2023, Sec. 3.2; Webber et al. 2012, Sec. 3.2.1).

    Args:
        runs: ``{name: results frame}``, a run directory, or anything ``read_runs`` reads.
        docs: the documents to score (a ``qid, docno[, label]`` frame such as the qrels); default:
            every document some run ranks in its top ``depth``.
        depth: ``N``.
        ties: how runs are ordered (``trec_eval``: score, then docno descending; ``given``: the
            run's ``rank`` column).

    Returns:
        a ``qid, docno, meta_ap`` frame sorted by topic, then docno.
    """
    if not isinstance(runs, AlignedRuns):
        runs = read_runs(runs)
    if docs is None:
        if isinstance(runs, AlignedRuns):
            raise InputError("meta_ap(AlignedRuns) needs docs (the aligned runs keep no docnos of unjudged documents)")
        docs = pd.concat([f[["qid", "docno"]] for f in runs.values()], ignore_index=True).drop_duplicates()
        keep_positive = True
    else:
        keep_positive = False
    if isinstance(docs, pd.DataFrame):
        frame = docs.rename(columns={"query_id": "qid", "doc_id": "docno"})
        if {"qid", "docno"} <= set(frame.columns):
            frame = pd.DataFrame({"qid": frame["qid"].astype(str).to_numpy(),
                                  "docno": frame["docno"].astype(str).to_numpy(), "label": 0.0})
        table = JudgmentTable.from_qrels(frame)
    else:
        table = JudgmentTable.from_qrels(read_qrels(docs))
    values = _MetaAP(runs, None, depth, ties, "meta_ap").for_table(table)
    out = table.frame[["qid", "docno"]].copy()
    out["meta_ap"] = values
    if keep_positive:
        out = out[values > 0].reset_index(drop=True)
    return out


# ------------------------------------------------------------------------------------------------
# weighted random subsets (Rashidi et al. 2023, Fig. 3)

def _inclusion(w: np.ndarray, wbar: np.ndarray, rho: float | np.ndarray) -> np.ndarray:
    """Closed form of the paper's weighted_subset (seed000 Sec. 2.5), broadcast over arrays.

    ``pi = w rho / wbar`` if ``wbar >= rho`` (proportional branch), else
    ``pi = 1 - (1 - w)(1 - rho)/(1 - wbar)`` (complement branch); uniform ``rho`` when the mean
    weight is 0 (proportional) or 1 (complement).  ``sum(pi) = n rho`` in every case.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        prop = wbar >= rho
        pi = np.where(prop, w * rho / wbar, 1.0 - (1.0 - w) * (1.0 - rho) / (1.0 - wbar))
        degenerate = (prop & (wbar <= 0)) | (~prop & (wbar >= 1))
    pi = np.where(degenerate, rho, pi)
    return np.clip(pi, 0.0, 1.0)


def _weights_arg(weights: Any) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise InputError(f"weights must be a 1-d array, got shape {w.shape}")
    bad = ~np.isfinite(w) | (w < 0) | (w > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"weights, row {i}: expected a relative propensity in [0, 1], got {w[i]!r}")
    return w


def inclusion_probabilities(weights: Any, n_target: float) -> np.ndarray:
    """Inclusion probability of each item in the paper's ``weighted_subset(S, wgts, n')``.

    Rashidi, Zobel & Moffat (2023), Fig. 3, in closed form (seed000 Sec. 2.5): with ``rho = n'/n``
    and mean weight ``wbar``, ``pi_d = w_d rho / wbar`` when ``wbar >= rho``, otherwise
    ``pi_d = 1 - (1 - w_d)(1 - rho) / (1 - wbar)``; ``sum(pi) = n'`` (the expected subset size).
    ``n' <= 0`` gives zeros and ``n' >= n`` ones.
    """
    w = _weights_arg(weights)
    target = _number("n_target", n_target)
    n = len(w)
    if n == 0 or target <= 0:
        return np.zeros(n)
    if target >= n:
        return np.ones(n)
    return _inclusion(w, w.mean(), target / n)


def weighted_subset(weights: Any, n_target: float, seed: int | None = 0) -> np.ndarray:
    """A random subset (boolean mask) with expected size ``n_target`` (Rashidi et al. 2023, Fig. 3).

    Items are drawn by independent Bernoulli trials with :func:`inclusion_probabilities`, so the
    size is Poisson-binomial with mean ``n_target``.
    """
    pi = inclusion_probabilities(weights, n_target)
    return np.random.default_rng(_check_seed(seed)).random(len(pi)) < pi


# ------------------------------------------------------------------------------------------------
# random streams and row contexts

@dataclass(frozen=True)
class _Stream:
    """Uniforms for ``n`` replicates starting at replicate ``start``, ``m`` per replicate."""

    seed: np.random.SeedSequence
    m: int
    start: int
    n: int

    def uniforms(self) -> np.ndarray:
        """(m, n) C-contiguous: column i is replicate start + i (stream positions (start+i)*m ...)."""
        bits = np.random.PCG64(self.seed)
        if self.start:
            bits.advance(self.start * self.m)
        u = np.random.Generator(bits).random((self.n, self.m))
        return np.ascontiguousarray(u.T)

    def child(self, k: int) -> "_Stream":
        s = self.seed
        return replace(self, seed=np.random.SeedSequence(s.entropy, spawn_key=tuple(s.spawn_key) + (k,),
                                                         pool_size=s.pool_size))

    def generator(self) -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(self.seed))


class _Rows:
    """The judged rows of a table (those a model perturbs), with per-topic reductions."""

    def __init__(self, table: JudgmentTable) -> None:
        self.table = table
        self.rows = np.flatnonzero(~np.isnan(table.labels))
        self.labels = table.labels[self.rows]
        self.topic_index = table.topic_index[self.rows]
        self.n_topics = len(table.topics)
        self.topic_start = np.searchsorted(self.topic_index, np.arange(self.n_topics + 1))

    def __len__(self) -> int:
        return len(self.rows)

    def topic_sum(self, x: np.ndarray) -> np.ndarray:
        """Sum an (m, k) array over the rows of each topic -> (n_topics, k)."""
        x = np.asarray(x, dtype=np.float64)
        out = np.zeros((self.n_topics, x.shape[1]))
        sizes = np.diff(self.topic_start)
        ne = np.flatnonzero(sizes > 0)
        if len(ne):
            out[ne] = np.add.reduceat(x, self.topic_start[ne], axis=0)
        return out


def _relabel(L: np.ndarray, rel: float, says_relevant: np.ndarray, off: float, on: float) -> np.ndarray:
    """Binary flips at threshold ``rel``: relevant judgments the replicate calls non-relevant get
    ``off``, non-relevant ones it calls relevant get ``on``; the rest keep their (graded) label."""
    with np.errstate(invalid="ignore"):
        relevant = L >= rel
        nonrel = L < rel
    return np.where(relevant & ~says_relevant, off, np.where(nonrel & says_relevant, on, L))


def _is_integral(values: np.ndarray) -> bool:
    v = values[~np.isnan(values)]
    return bool(np.all(v == np.round(v)))


def _label_column(values: np.ndarray) -> np.ndarray:
    """Labels as int64 when integral (pytrec_eval needs integer relevance), else float."""
    return values.astype(np.int64) if _is_integral(values) else values


# ------------------------------------------------------------------------------------------------
# replicate sets

@dataclass(eq=False)
class ReplicateSet:
    """``n`` replicates of a set of judgments: a label matrix over the rows of a judgment table.

    Attributes:
        table: the judgment table (rows sorted by topic, then docno).
        labels: ``(len(table), n)`` float matrix; ``NaN`` = unjudged in that replicate.  Pass it
            to ``AlignedRuns.evaluate(specs, labels)`` of runs aligned to the same qrels.
        seed: the seed the replicates were drawn with.
        start: the number of the first replicate (replicate ``start + i`` is column ``i``).
        description: the model that made them.
    """

    table: JudgmentTable
    labels: np.ndarray
    seed: int
    start: int = 0
    description: str = ""

    @property
    def n(self) -> int:
        """Number of replicates."""
        return self.labels.shape[1]

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return (f"ReplicateSet({self.n} replicate(s) of {len(self.table)} judgment(s), seed={self.seed}, "
                f"start={self.start}, model={self.description})")

    def _column(self, i: Any) -> int:
        i = _integer("replicate index", i, 0)
        if i >= self.n:
            raise InputError(f"replicate index must be in [0, {self.n}), got {i}")
        return i

    def qrels(self, i: int) -> pd.DataFrame:
        """Replicate ``i`` (0-based column) as a ``qid, docno, label`` frame without its unjudged rows.

        Labels are integers when they are all integral (as ``pt.Experiment`` and pytrec_eval need).
        """
        col = self.labels[:, self._column(i)]
        keep = ~np.isnan(col)
        out = self.table.frame.loc[keep, ["qid", "docno"]].reset_index(drop=True)
        out["label"] = _label_column(col[keep])
        return out

    def __iter__(self) -> Iterator[pd.DataFrame]:
        for i in range(self.n):
            yield self.qrels(i)

    def file_names(self) -> list[str]:
        """``replicate-0001.qrels`` ... (numbered ``start + 1`` .. ``start + n``, at least 4 digits)."""
        width = max(4, len(str(self.start + self.n)))
        return [f"replicate-{self.start + i + 1:0{width}d}.qrels" for i in range(self.n)]

    def write_trec(self, directory: Any, progress: bool = False) -> list[Path]:
        """Write each replicate as a TREC qrels file ``DIR/replicate-0001.qrels`` ... (``qid 0 docno label``).

        Unjudged rows are left out; integral labels are written as integers.  The bytes depend only
        on the labels, so the same seed gives byte-identical files on any machine.
        """
        directory = Path(directory)
        if directory.exists() and not directory.is_dir():
            raise InputError(f"{directory}: exists and is not a directory")
        directory.mkdir(parents=True, exist_ok=True)
        L = self.labels
        judged = ~np.isnan(L)
        values = np.unique(L[judged])
        integral = _is_integral(values)
        text = [str(int(v)) if integral else repr(float(v)) for v in values]
        prefix = (self.table.frame["qid"].astype(str) + " 0 " + self.table.frame["docno"].astype(str) + " ").to_numpy()
        # every possible line, per label value: a replicate is then a gather and one join
        lines = np.array([[f"{p}{t}\n" for p in prefix] for t in text], dtype=object).reshape(len(text), len(prefix))
        codes = np.searchsorted(values, np.where(judged, L, values[0] if len(values) else 0.0))
        paths = []
        names = self.file_names()
        bar = pt.tqdm(total=self.n, desc="writing replicates", unit="replicate", disable=not progress)
        for i in range(self.n):
            keep = np.flatnonzero(judged[:, i])
            data = "".join(lines[codes[keep, i], keep]).encode("utf-8")
            path = directory / names[i]
            path.write_bytes(data)
            paths.append(path)
            bar.update(1)
        bar.close()
        return paths

    def realised_rates(self, rel: float = 1, by_topic: bool = False) -> pd.DataFrame:
        """The rates each replicate actually realised against the original judgments.

        ``tpr`` = share of originally relevant judgments (``label >= rel``) still relevant,
        ``fpr`` = share of originally non-relevant judgments now relevant, over the rows judged
        in both (seed000 Sec. 5, item 18: nominal rates hold only in expectation).  Also
        ``n_judged``, ``n_relevant`` (in the replicate) and ``n_relevant_original``.  One row per
        replicate, or per (replicate, qid) with ``by_topic=True``.
        """
        rel = _number("rel", rel)
        base = self.table.labels
        L = self.labels
        both = ~np.isnan(base)[:, None] & ~np.isnan(L)
        with np.errstate(invalid="ignore"):
            orig_rel = (base >= rel)[:, None] & both
            orig_non = (base < rel)[:, None] & both
            new_rel = L >= rel
        cols = {"tp": orig_rel & new_rel, "pos": orig_rel, "fp": orig_non & new_rel, "neg": orig_non,
                "n_judged": ~np.isnan(L), "n_relevant": new_rel,
                "n_relevant_original": np.broadcast_to(((base >= rel) & ~np.isnan(base))[:, None], L.shape)}
        if by_topic:
            rows = _Rows(replace(self.table, labels=np.zeros(len(self.table))))
            sums = {k: rows.topic_sum(v) for k, v in cols.items()}  # (T, n)
            qid = np.repeat(np.asarray(self.table.topics, dtype=object), self.n)
            rep = np.tile(np.arange(self.start, self.start + self.n), len(self.table.topics))
            flat = {k: v.ravel() for k, v in sums.items()}
            head = {"replicate": rep, "qid": qid}
        else:
            flat = {k: v.sum(axis=0) for k, v in cols.items()}
            head = {"replicate": np.arange(self.start, self.start + self.n)}
        with np.errstate(invalid="ignore", divide="ignore"):
            out = pd.DataFrame({**head, "tpr": flat["tp"] / flat["pos"], "fpr": flat["fp"] / flat["neg"],
                                "n_judged": flat["n_judged"].astype(np.int64),
                                "n_relevant": flat["n_relevant"].astype(np.int64),
                                "n_relevant_original": flat["n_relevant_original"].astype(np.int64)})
        return out


# ------------------------------------------------------------------------------------------------
# the base class

class JudgmentPerturbation(pt.Transformer):
    """A model of judging that turns one set of judgments into seeded replicates.

    Every model offers the same three forms:

    * ``sample_labels(table, n, seed=None, start=0)`` -- the ``(len(table), n)`` label matrix
      over a :class:`~pyterrier_noise.engine.JudgmentTable` (``AlignedRuns.table``), ready for
      ``AlignedRuns.evaluate``; rows unjudged in the table stay ``NaN``;
    * ``replicates(qrels, n, seed=None)`` -- a :class:`ReplicateSet` (frames, TREC files);
    * a ``pt.Transformer`` on qrels frames: ``model(qrels)`` (or ``model.transform(qrels)``) is
      one perturbed qrels frame -- replicate ``model.replicate`` (default 0) of ``model.seed`` --
      with the input's columns, so ``pt.Experiment(systems, topics, model(qrels), ...)`` works;
      ``model.transformer(seed=..., replicate=...)`` is a copy with another seed or replicate.

    ``seed=None`` in a call means the model's own ``seed``; a model built with ``seed=None``
    draws fresh entropy each time (the entropy is recorded in :attr:`ReplicateSet.seed`).
    ``a >> b`` of two models is a :class:`Chain` (``b`` perturbs ``a``'s replicates).
    """

    #: False for deterministic models (every replicate is the same)
    stochastic: bool = True

    def __init__(self, seed: int | None = 0, replicate: int = 0) -> None:
        self.seed = _check_seed(seed)
        self.replicate = _integer("replicate", replicate, 0)

    # -- what subclasses implement ------------------------------------------------------------

    def _perturb(self, rows: _Rows, L: np.ndarray, stream: _Stream) -> np.ndarray:
        """Labels of the judged rows (m, 1) or (m, n) -> replicate labels, broadcastable to (m, n)."""
        raise NotImplementedError

    def _params(self) -> dict[str, Any]:
        return {}

    # -- public API ---------------------------------------------------------------------------

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in {**self._params(), "seed": self.seed}.items())
        return f"{type(self).__name__}({args})"

    def _seed_sequence(self, seed: Any) -> np.random.SeedSequence:
        s = self.seed if seed is None else _check_seed(seed)
        return np.random.SeedSequence(s)

    def sample_labels(self, table: JudgmentTable, n: int, seed: int | None = None, *, start: int = 0) -> np.ndarray:
        """Labels of ``n`` replicates: a ``(len(table), n)`` float matrix, ``NaN`` = unjudged.

        Rows are aligned with ``table.frame``.  Column ``i`` is replicate ``start + i``; it does
        not depend on ``n``.  Vectorised over judgments and replicates.
        """
        return self._sample(_as_table(table), n, self._seed_sequence(seed), start)

    def _sample(self, table: JudgmentTable, n: Any, ss: np.random.SeedSequence, start: Any) -> np.ndarray:
        n = _integer("n (number of replicates)", n, 1)
        start = _integer("start", start, 0)
        rows = _Rows(table)
        stream = _Stream(ss, len(rows), start, n)
        sub = self._perturb(rows, rows.labels[:, None], stream)
        if len(rows) == len(table):
            if sub.shape == (len(table), n):
                return np.ascontiguousarray(sub, dtype=np.float64)
            return np.broadcast_to(sub, (len(table), n)).astype(np.float64)   # a C-contiguous copy
        out = np.full((len(table), n), np.nan)
        out[rows.rows] = sub
        return out

    def replicates(self, qrels: Any, n: int, seed: int | None = None, *, start: int = 0) -> ReplicateSet:
        """``n`` replicates of ``qrels`` (a frame, TREC file, ir_datasets qrels or a JudgmentTable).

        The table is ``JudgmentTable.from_qrels(qrels)``: the same rows as
        ``AlignedRuns.build(runs, qrels).table``, so ``.labels`` can be evaluated directly.
        """
        table = qrels if isinstance(qrels, JudgmentTable) else JudgmentTable.from_qrels(qrels)
        ss = self._seed_sequence(seed)
        labels = self._sample(table, n, ss, start)
        return ReplicateSet(table, labels, int(ss.entropy), int(start), repr(self))

    def transform(self, qrels: pd.DataFrame) -> pd.DataFrame:
        """One perturbed qrels frame: replicate ``self.replicate`` of ``self.seed``.

        Keeps every input column and row order; rows that the model makes unjudged are dropped;
        the label column (``label`` or ir_measures' ``relevance``) holds the new labels.
        """
        if not isinstance(qrels, pd.DataFrame):
            raise InputError(f"{type(self).__name__} transforms a qrels frame (qid, docno, label), got "
                             f"{type(qrels).__name__}")
        names = ("qid", "docno", "label") if "qid" in qrels.columns else ("query_id", "doc_id", "relevance")
        table = JudgmentTable.from_qrels(qrels)
        lab = self.sample_labels(table, 1, start=self.replicate)[:, 0]
        keys = pd.MultiIndex.from_arrays([qrels[names[0]].astype(str).to_numpy(),
                                          qrels[names[1]].astype(str).to_numpy()])
        where = pd.MultiIndex.from_arrays([table.frame["qid"].to_numpy(),
                                           table.frame["docno"].to_numpy()]).get_indexer(keys)
        new = lab[where]
        keep = ~np.isnan(new)
        out = qrels.loc[keep].copy()
        values = new[keep]
        if np.issubdtype(qrels[names[2]].dtype, np.integer) and _is_integral(values):
            out[names[2]] = values.astype(qrels[names[2]].dtype)
        else:
            out[names[2]] = _label_column(values)
        return out

    def transformer(self, seed: int | None = None, replicate: int = 0) -> "JudgmentPerturbation":
        """A copy of the model as a ``pt.Transformer`` giving replicate ``replicate`` of ``seed``."""
        other = copy.copy(self)
        other.seed = self.seed if seed is None else _check_seed(seed)
        other.replicate = _integer("replicate", replicate, 0)
        return other

    def __rshift__(self, other: Any) -> Any:
        if isinstance(other, JudgmentPerturbation):
            return Chain(self, other, seed=self.seed)
        return super().__rshift__(other)


# ------------------------------------------------------------------------------------------------
# random and rank-biased flips (Rashidi, Zobel & Moffat 2023)

class _RateModel(JudgmentPerturbation):
    """Shared TPR / FPR handling and the (disc, bias) constructors."""

    def _set_rates(self, tpr: Any, fpr: Any) -> None:
        self.tpr = _probability("tpr", tpr)
        self.fpr = _probability("fpr", fpr)
        if self.tpr <= self.fpr:
            _warn(f"tpr={self.tpr:g} <= fpr={self.fpr:g}: this judge is no better than chance (it calls relevant "
                  f"documents relevant no more often than non-relevant ones)")

    @property
    def disc(self) -> float:
        """Discriminability ``z(TPR) - z(FPR)`` (seed000 Sec. 2.1)."""
        return sdt_params(self.tpr, self.fpr)[0]

    @property
    def bias(self) -> float:
        """Criterion ``-(z(TPR) + z(FPR)) / 2``; positive = conservative (seed000 Sec. 2.1)."""
        return sdt_params(self.tpr, self.fpr)[1]

    @classmethod
    def from_discriminability(cls, disc: float, bias: float, **kwargs: Any) -> Any:
        """The model for a judge with discriminability ``disc`` and ``bias``:
        ``TPR = Phi(disc/2 - bias)``, ``FPR = Phi(-disc/2 - bias)`` (seed000 Sec. 2.1)."""
        tpr, fpr = sdt_rates(_number("disc", disc), _number("bias", bias))
        return cls(tpr=tpr, fpr=fpr, **kwargs)

    @classmethod
    def from_judge(cls, name: str, **kwargs: Any) -> Any:
        """The model for one of the named judges in :data:`JUDGES` (e.g. ``"smart_neutral"``)."""
        if name not in JUDGES:
            raise InputError(f"unknown judge {name!r}; expected one of {list(JUDGES)}")
        return cls.from_discriminability(*JUDGES[name], **kwargs)


class RandomFlips(_RateModel):
    """Random qrel flips: each judgment flips independently at class-conditional rates.

    A relevant judgment (``label >= rel``) stays relevant with probability ``tpr`` and a
    non-relevant one becomes relevant with probability ``fpr`` (Li & Smucker 2014; Rashidi, Zobel &
    Moffat 2023, Sec. 3.1 and Fig. 2 with equal weights, where ``weighted_subset`` reduces to
    Bernoulli trials; seed000 Sec. 2.5).  Give ``tpr`` and ``fpr``, or use
    :meth:`from_discriminability` / :meth:`from_judge`.

    Graded labels: a flipped relevant judgment becomes ``off_label`` (default 0), a flipped
    non-relevant one becomes ``on_label`` (default ``rel``); unflipped judgments keep their grade.
    """

    def __init__(self, tpr: float, fpr: float, *, rel: float = 1, off_label: float = 0,
                 on_label: float | None = None, seed: int | None = 0) -> None:
        super().__init__(seed)
        self._set_rates(tpr, fpr)
        self.rel, self.off_label, self.on_label = _binary_labels(rel, off_label, on_label)

    def _params(self) -> dict[str, Any]:
        return {"tpr": self.tpr, "fpr": self.fpr, "rel": self.rel}

    def _perturb(self, rows: _Rows, L: np.ndarray, stream: _Stream) -> np.ndarray:
        U = stream.uniforms()
        with np.errstate(invalid="ignore"):
            p = np.where(L >= self.rel, self.tpr, self.fpr)
        return _relabel(L, self.rel, U < p, self.off_label, self.on_label)


class RankBiasedFlips(_RateModel):
    """Rank-biased qrel flips: random flips placed by each document's meta-AP popularity.

    Rashidi, Zobel & Moffat (2023), Sec. 3.2, Eq. 1 and Figs 2-3 (seed000 Sec. 2.3-2.5).  Each
    judged document gets a logistic weight of its mean meta-AP over ``runs``: for relevant
    documents ``w1 = logistic(b0 + b1 m)`` with ``betas["tpr"]`` and for non-relevant ones
    ``w0`` with ``betas["fpr"]`` (default: Webber et al.'s TREC 6 fit, :data:`WEBBER_TREC6`).

    ``weighting="relative"`` (the paper's method): per topic, the relevant documents kept and the
    non-relevant documents flipped on are weighted random subsets (:func:`inclusion_probabilities`)
    whose expected sizes are ``|rel| * tpr`` and ``|nonrel| * fpr`` -- the same expected error
    counts as :class:`RandomFlips`, placed on unpopular relevant and popular non-relevant documents.
    ``weighting="absolute"``: the weights are the probabilities themselves (Webber et al.'s own
    use); ``tpr`` and ``fpr`` are then not used and may be ``None``.

    Args:
        tpr, fpr: nominal rates (or :meth:`from_discriminability`, :meth:`from_judge`).
        runs: the runs that define popularity (``{name: frame}``, a run directory, or an
            ``AlignedRuns`` built on the same qrels); or give ``meta_ap`` (a frame from
            :func:`meta_ap`) instead.
        depth: meta-AP depth ``N`` (1000); ``ties``: run order (trec_eval's by default).
        rel, off_label, on_label: binary threshold and labels of flipped judgments (as in
            :class:`RandomFlips`).
    """

    def __init__(self, tpr: float | None, fpr: float | None, runs: Any = None, *, meta_ap: Any = None,
                 depth: int = META_AP_DEPTH, ties: str = "trec_eval",
                 betas: Mapping[str, Sequence[float]] = WEBBER_TREC6, weighting: str = "relative",
                 rel: float = 1, off_label: float = 0, on_label: float | None = None,
                 seed: int | None = 0) -> None:
        super().__init__(seed)
        self.weighting = _choice("weighting", weighting, ("relative", "absolute"))
        if weighting == "relative" or tpr is not None or fpr is not None:
            if tpr is None or fpr is None:
                raise InputError("RankBiasedFlips needs tpr and fpr (the expected error counts) unless "
                                 "weighting='absolute'")
            self._set_rates(tpr, fpr)
        else:
            self.tpr = self.fpr = None
        self.betas = self._check_betas(betas)
        self.rel, self.off_label, self.on_label = _binary_labels(rel, off_label, on_label)
        self._meta = _MetaAP(runs, meta_ap, depth, ties, "RankBiasedFlips")
        self.depth = self._meta.depth

    @staticmethod
    def _check_betas(betas: Any) -> dict[str, tuple[float, float]]:
        if not isinstance(betas, Mapping) or set(betas) != {"tpr", "fpr"}:
            raise InputError(f"betas must be a mapping with keys 'tpr' and 'fpr' (each (beta0, beta1)), got {betas!r}")
        out = {}
        for key in ("tpr", "fpr"):
            pair = betas[key]
            if not isinstance(pair, Sequence) or len(pair) != 2:
                raise InputError(f"betas[{key!r}] must be a pair (beta0, beta1), got {pair!r}")
            out[key] = (_number(f"betas[{key!r}][0]", pair[0]), _number(f"betas[{key!r}][1]", pair[1]))
        return out

    def _params(self) -> dict[str, Any]:
        return {"tpr": self.tpr, "fpr": self.fpr, "weighting": self.weighting, "depth": self.depth}

    def weights(self, table: JudgmentTable) -> pd.DataFrame:
        """Per judgment of ``table``: ``meta_ap`` and the logistic weights ``w_relevant`` and
        ``w_nonrelevant`` (Rashidi et al. 2023, Eq. 1 with Table 1's coefficients)."""
        table = _as_table(table)
        m = self._meta.for_table(table)
        out = table.frame[["qid", "docno", "label"]].copy()
        out["meta_ap"] = m
        out["w_relevant"], out["w_nonrelevant"] = self._weights(m)
        return out

    def _weights(self, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        (a1, b1), (a0, b0) = self.betas["tpr"], self.betas["fpr"]
        return expit(a1 + b1 * m), expit(a0 + b0 * m)

    def probabilities(self, table: JudgmentTable) -> np.ndarray:
        """P(the replicate calls each judgment relevant), for the table's own labels: the keep
        probability of relevant and the flip-on probability of non-relevant judgments."""
        table = _as_table(table)
        rows = _Rows(table)
        out = np.full(len(table), np.nan)
        out[rows.rows] = self._p_relevant(rows, rows.labels[:, None])[:, 0]
        return out

    def _p_relevant(self, rows: _Rows, L: np.ndarray) -> np.ndarray:
        w1, w0 = self._weights(self._meta.for_table(rows.table)[rows.rows])
        w1, w0 = w1[:, None], w0[:, None]
        with np.errstate(invalid="ignore"):
            relevant = L >= self.rel
            nonrel = L < self.rel
        if self.weighting == "absolute":
            return np.where(relevant, w1, w0)
        # per (topic, class, replicate): mean weight, then the closed-form inclusion probability
        with np.errstate(invalid="ignore", divide="ignore"):
            wbar1 = rows.topic_sum(np.where(relevant, w1, 0.0)) / rows.topic_sum(relevant)
            wbar0 = rows.topic_sum(np.where(nonrel, w0, 0.0)) / rows.topic_sum(nonrel)
        keep = _inclusion(w1, wbar1[rows.topic_index], self.tpr)      # retained relevant (q1')
        flip_on = _inclusion(w0, wbar0[rows.topic_index], self.fpr)   # flipped on (q0')
        return np.where(relevant, keep, flip_on)

    def _perturb(self, rows: _Rows, L: np.ndarray, stream: _Stream) -> np.ndarray:
        p = self._p_relevant(rows, L)
        U = stream.uniforms()
        return _relabel(L, self.rel, U < p, self.off_label, self.on_label)


# ------------------------------------------------------------------------------------------------
# disagreement models fitted on dual assessments (Webber et al. 2012)

def _logistic_newton(g: np.ndarray, x: np.ndarray, y: np.ndarray, n_groups: int, rate: np.ndarray,
                     tol: float = 1e-10, max_iter: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Independent logistic regressions ``P(y = 1) = logistic(a_g + b_g x)``, one per group, fitted together.

    Newton-Raphson (= IRLS for the logit link), vectorised over groups: each iteration is a few
    ``bincount`` sums over the rows and a closed-form 2 x 2 solve per group.  Written here because
    statsmodels fits one design at a time: one Logit per topic is a Python loop per topic, and one
    block-diagonal GLM costs an SVD of an (observations x 2 groups) matrix per iteration (1.7 s for
    80 topic models of 100 documents here, against milliseconds).  The estimates and Wald standard
    errors equal statsmodels' ``Logit`` fitted group by group (tested).  Returns the parameters
    (G, 2), their covariance (G, 2, 2) (inverse Fisher information) and a convergence flag per group.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(rate / (1.0 - rate))
    params = np.stack([np.where(np.isfinite(a), a, 0.0), np.zeros(n_groups)], axis=1)
    converged = np.zeros(n_groups, dtype=bool)
    active = np.bincount(g, minlength=n_groups) > 0
    cov = np.full((n_groups, 2, 2), np.nan)
    for _ in range(max_iter):   # iterations of Newton's method, not a loop over data
        p = expit(params[g, 0] + params[g, 1] * x)
        w = p * (1.0 - p)
        r = y - p
        s0 = np.bincount(g, r, n_groups)
        s1 = np.bincount(g, r * x, n_groups)
        h00 = np.bincount(g, w, n_groups)
        h01 = np.bincount(g, w * x, n_groups)
        h11 = np.bincount(g, w * x * x, n_groups)
        with np.errstate(divide="ignore", invalid="ignore"):
            det = h00 * h11 - h01 * h01
            step = np.stack([(h11 * s0 - h01 * s1) / det, (h00 * s1 - h01 * s0) / det], axis=1)
            cov = np.stack([np.stack([h11, -h01], axis=1), np.stack([-h01, h00], axis=1)], axis=1) / det[:, None, None]
        step[~active | ~np.isfinite(step).all(axis=1)] = 0.0
        params = params + step
        converged = active & (np.abs(step).max(axis=1) < tol * (1.0 + np.abs(params).max(axis=1)))
        if converged[active].all():
            break
    return params, cov, converged & np.isfinite(cov).all(axis=(1, 2))


def _dual(original: Any, alternative: Any, rel: float) -> pd.DataFrame:
    o = read_qrels(original)
    a = read_qrels(alternative)
    d = o.merge(a, on=["qid", "docno"], suffixes=("_original", "_alternative"))
    if d.empty:
        raise InputError("no (qid, docno) is judged in both the original and the alternative qrels; expected "
                         "dual assessments (documents judged by both assessors)")
    return pd.DataFrame({"qid": d["qid"].to_numpy(), "docno": d["docno"].to_numpy(),
                         "A": d["label_original"].to_numpy() >= rel, "B": d["label_alternative"].to_numpy() >= rel})


class _DisagreementModel(JudgmentPerturbation):
    """P(B = 1 | A, topic[, metarank]) per (topic, original class), with a universal fallback.

    Internally: per topic (rows) and class (column 0: A = 0, column 1: A = 1), either a logistic
    model (``b0``, ``b1``) or a constant probability ``const`` (NaN where logistic).
    """

    def __init__(self, scope: str, rel: Any, off_label: Any, on_label: Any, seed: Any) -> None:
        super().__init__(seed)
        self.scope = _choice("scope", scope, ("per_topic", "universal"))
        self.rel, self.off_label, self.on_label = _binary_labels(rel, off_label, on_label)
        self._topics: list[str] = []
        self._b0 = self._b1 = self._const = np.zeros((0, 2))
        self._ub0 = self._ub1 = self._uconst = None

    def _uses_metarank(self) -> bool:
        return False

    def _require_fit(self) -> None:
        if self._uconst is None:
            raise InputError(f"{type(self).__name__} has not been fitted: call .fit(original_qrels, "
                             f"alternative_qrels) first")

    def _row_params(self, rows: _Rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(b0, b1, const), each (m, 2): the model of each row's topic for A = 0 and A = 1."""
        self._require_fit()
        n = len(rows)
        b0 = np.broadcast_to(self._ub0, (n, 2)).copy()
        b1 = np.broadcast_to(self._ub1, (n, 2)).copy()
        const = np.broadcast_to(self._uconst, (n, 2)).copy()
        if self.scope == "per_topic" and self._topics:
            tloc = pd.Index(self._topics).get_indexer(pd.Index(rows.table.topics))
            unknown = np.asarray(rows.table.topics, dtype=object)[tloc < 0]
            if len(unknown):
                _warn(f"{len(unknown)} topic(s) of the judgments have no per-topic disagreement model (e.g. qid "
                      f"{unknown[0]!r}); they use the universal model")
            t = tloc[rows.topic_index]
            known = t >= 0
            b0[known], b1[known], const[known] = self._b0[t[known]], self._b1[t[known]], self._const[t[known]]
        return b0, b1, const

    def _p_relevant_rows(self, rows: _Rows) -> np.ndarray:
        """(m, 2): P(B = 1 | A = 0) and P(B = 1 | A = 1) for each row."""
        b0, b1, const = self._row_params(rows)
        if self._uses_metarank():
            m = self._meta.for_table(rows.table)[rows.rows][:, None]
            with np.errstate(invalid="ignore"):
                logistic = expit(b0 + b1 * m)
            return np.where(np.isnan(const), logistic, const)
        return const

    def probabilities(self, qrels: Any) -> pd.DataFrame:
        """The qrels (a frame or table) with ``p_relevant``: P(the simulated assessor says relevant)
        given each original judgment (Webber et al. 2012, Eq. 1 / the flip-rate model)."""
        table = qrels if isinstance(qrels, JudgmentTable) else JudgmentTable.from_qrels(qrels)
        rows = _Rows(table)
        p = self._p_relevant_rows(rows)
        out = table.frame.copy()
        col = np.full(len(table), np.nan)
        col[rows.rows] = np.where(rows.labels >= self.rel, p[:, 1], p[:, 0])
        out["p_relevant"] = col
        return out

    def _perturb(self, rows: _Rows, L: np.ndarray, stream: _Stream) -> np.ndarray:
        p = self._p_relevant_rows(rows)
        with np.errstate(invalid="ignore"):
            p = np.where(L >= self.rel, p[:, 1:2], p[:, 0:1])
        U = stream.uniforms()
        return _relabel(L, self.rel, U < p, self.off_label, self.on_label)

    @staticmethod
    def _group_counts(g: np.ndarray, y: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
        return (np.bincount(g, minlength=n_groups).astype(np.int64),
                np.bincount(g, weights=y.astype(np.float64), minlength=n_groups).astype(np.int64))

    def _announce_missing(self, n: np.ndarray, topics: list[str]) -> None:
        for c, what in ((1, "relevant"), (0, "non-relevant")):
            empty = np.flatnonzero(n[:, c] == 0)
            if len(empty):
                _warn(f"{len(empty)} topic(s) have no dual-assessed {what} document (e.g. qid "
                      f"{topics[empty[0]]!r}); their {what} documents use the universal model")


class FlipRateModel(_DisagreementModel):
    """The rank-insensitive flip-rate disagreement model (Webber et al. 2012, Sec. 3.2.2).

    ``FNR = #(A=1, B=0) / #(A=1)`` and ``FPR = #(A=0, B=1) / #(A=0)`` over dual-assessed documents
    (original label ``A``, alternative label ``B``, both binarised at ``rel``), per topic or
    micro-averaged over topics (``scope="universal"``).  A simulated replicate calls a document
    relevant with probability ``1 - FNR`` if it was relevant and ``FPR`` if not (Sec. 3.3).
    Topics without dual-assessed documents of a class use the universal rate (with a warning).
    ``fnr`` and ``fpr`` may also be given directly (no fitting; universal).
    """

    def __init__(self, scope: str = "per_topic", *, fnr: float | None = None, fpr: float | None = None,
                 rel: float = 1, off_label: float = 0, on_label: float | None = None,
                 seed: int | None = 0) -> None:
        super().__init__(scope, rel, off_label, on_label, seed)
        self.rates_: pd.DataFrame | None = None
        if (fnr is None) != (fpr is None):
            raise InputError("give both fnr and fpr (fixed rates), or neither (and fit the model)")
        if fnr is not None:
            fnr, fpr = _probability("fnr", fnr), _probability("fpr", fpr)
            if 1 - fnr <= fpr:
                _warn(f"1 - fnr = {1 - fnr:g} <= fpr = {fpr:g}: this assessor is no better than chance")
            self._ub0 = self._ub1 = np.full(2, np.nan)
            self._uconst = np.array([fpr, 1.0 - fnr])

    def _params(self) -> dict[str, Any]:
        return {"scope": self.scope}

    def fit(self, original: Any, alternative: Any) -> "FlipRateModel":
        """Estimate the rates from dual assessments: qrels of the original and the alternative assessor
        (documents judged by both are the dual-assessed ones).  Returns ``self``; see :attr:`rates_`."""
        d = _dual(original, alternative, self.rel)
        topics = JudgmentTable.from_qrels(d.assign(label=0.0)[["qid", "docno", "label"]]).topics
        t = pd.Index(topics).get_indexer(d["qid"])
        g = t * 2 + d["A"].to_numpy().astype(np.int64)
        n, k = self._group_counts(g, d["B"].to_numpy(), 2 * len(topics))
        n, k = n.reshape(-1, 2), k.reshape(-1, 2)
        un, uk = n.sum(axis=0), k.sum(axis=0)
        if (un == 0).any():
            what = "relevant" if un[1] == 0 else "non-relevant"
            raise InputError(f"no dual-assessed document is {what} in the original qrels (label >= {self.rel:g} "
                             f"is relevant); the flip-rate model needs both classes")
        self._uconst = uk / un
        self._ub0 = self._ub1 = np.full(2, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            const = k / n
        if self.scope == "per_topic":
            self._announce_missing(n, topics)
        const = np.where(n > 0, const, self._uconst[None, :])
        self._topics = list(topics)
        self._const = const
        self._b0 = self._b1 = np.full(const.shape, np.nan)
        self.rates_ = pd.DataFrame({"qid": topics, "fnr": 1.0 - const[:, 1], "fpr": const[:, 0],
                                    "n_relevant": n[:, 1], "n_nonrelevant": n[:, 0]})
        self.universal_rates_ = {"fnr": float(1.0 - self._uconst[1]), "fpr": float(self._uconst[0]),
                                 "n_relevant": int(un[1]), "n_nonrelevant": int(un[0])}
        return self


class MetarankLogisticModel(_DisagreementModel):
    """Webber et al.'s metarank-logistic disagreement model (2012, Sec. 3.2.2, Eq. 1).

    ``P(B = 1 | m, A = r) = logistic(beta0_r + beta1_r m)`` with ``m`` the mean meta-AP of the
    document over ``runs`` (:func:`meta_ap`), fitted by maximum likelihood (Newton-Raphson over all
    groups at once; the same estimates and Wald standard errors as statsmodels' ``Logit``) on the
    dual-assessed documents, one model per original class ``r``, per topic or universal.  A
    replicate calls a document relevant with that probability (Sec. 3.3).

    Improper fits (Sec. 3.2.2): a group whose alternative labels all agree, or whose ``B = 1``
    documents all lie on one side of its ``B = 0`` documents in metarank (complete or quasi-complete
    separation, where no finite MLE exists) is *improper*.  ``improper="rate"`` (default) uses its
    empirical rate ``#(B=1) / n`` (0 or 1 when all agree); ``improper="universal"`` uses the
    universal model.  Topics without dual-assessed documents of a class use the universal model.

    Args:
        runs: runs defining the metarank (``{name: frame}``, a directory, or an ``AlignedRuns`` on
            the same qrels); or ``metarank``: a ``qid, docno, meta_ap`` frame.
        scope: ``"per_topic"`` or ``"universal"``.
        alpha: level of the Wald test of the slope in :attr:`coefficients_` ``status``.
    """

    def __init__(self, runs: Any = None, *, metarank: Any = None, scope: str = "per_topic",
                 improper: str = "rate", alpha: float = 0.05, depth: int = META_AP_DEPTH, ties: str = "trec_eval",
                 rel: float = 1, off_label: float = 0, on_label: float | None = None,
                 seed: int | None = 0) -> None:
        super().__init__(scope, rel, off_label, on_label, seed)
        self.improper = _choice("improper", improper, ("rate", "universal"))
        self.alpha = _probability("alpha", alpha)
        self._meta = _MetaAP(runs, metarank, depth, ties, "MetarankLogisticModel")
        self.coefficients_: pd.DataFrame | None = None
        self.universal_: pd.DataFrame | None = None

    def _uses_metarank(self) -> bool:
        return True

    def _params(self) -> dict[str, Any]:
        return {"scope": self.scope, "improper": self.improper}

    def fit(self, original: Any, alternative: Any) -> "MetarankLogisticModel":
        """Fit on dual assessments (documents judged in both qrels).  Returns ``self``.

        Sets :attr:`coefficients_` (per topic and class: ``beta0, beta1, se_beta0, se_beta1,
        p_slope, n, n_alt_relevant, status, used``) and :attr:`universal_` (the same per class).
        """
        d = _dual(original, alternative, self.rel)
        table = JudgmentTable.from_qrels(d.assign(label=d["A"].astype(np.float64))[["qid", "docno", "label"]])
        keys = pd.MultiIndex.from_arrays([d["qid"].to_numpy(), d["docno"].to_numpy()])
        at = pd.MultiIndex.from_arrays([table.frame["qid"].to_numpy(),
                                        table.frame["docno"].to_numpy()]).get_indexer(keys)
        m_all = self._meta.for_table(table)
        m = m_all[at]
        A = d["A"].to_numpy().astype(np.int64)
        B = d["B"].to_numpy()
        topics = table.topics
        t = table.topic_index[at]

        u = self._fit_groups(A, m, B, 2)
        if u["n"].min() == 0:
            what = "relevant" if u["n"][1] == 0 else "non-relevant"
            raise InputError(f"no dual-assessed document is {what} in the original qrels (label >= {self.rel:g} "
                             f"is relevant); the metarank model needs both classes")
        ub0, ub1, uconst = self._effective(u, None)
        self._ub0, self._ub1, self._uconst = ub0, ub1, uconst
        self.universal_ = self._frame(u, ["all", "all"], [0, 1])
        if self.scope == "per_topic":
            f = self._fit_groups(t * 2 + A, m, B, 2 * len(topics))
            self._announce_missing(f["n"].reshape(-1, 2), topics)
            b0, b1, const = self._effective(f, (ub0, ub1, uconst))
            self._b0, self._b1, self._const = b0.reshape(-1, 2), b1.reshape(-1, 2), const.reshape(-1, 2)
            self._topics = list(topics)
            self.coefficients_ = self._frame(f, np.repeat(topics, 2), np.tile([0, 1], len(topics)))
        else:
            self._topics = []
            self.coefficients_ = self.universal_
        improper = self.coefficients_["status"] == "improper"
        if improper.any():
            how = "their empirical rate" if self.improper == "rate" else "the universal model"
            _warn(f"{int(improper.sum())} of {len(improper)} logistic model(s) are improper (all alternative labels "
                  f"agree, or the labels are separated by metarank: no finite MLE); they use {how}")
        return self

    def _fit_groups(self, g: np.ndarray, m: np.ndarray, y: np.ndarray, n_groups: int) -> dict[str, np.ndarray]:
        """Separate maximum-likelihood logistic fits of y on (1, m), one per group, with Wald tests.

        Properness is decided first (no finite MLE under complete or quasi-complete separation);
        the proper groups are then fitted by :func:`_logistic_newton` all at once.
        """
        n, k = self._group_counts(g, y, n_groups)
        frame = pd.DataFrame({"g": g, "y": y, "m": m})
        ext = frame.groupby(["g", "y"])["m"].agg(["min", "max"]).unstack("y")
        lo1 = np.full(n_groups, np.inf); hi1 = np.full(n_groups, -np.inf)
        lo0 = np.full(n_groups, np.inf); hi0 = np.full(n_groups, -np.inf)
        idx = ext.index.to_numpy()
        if ("min", True) in ext.columns:
            lo1[idx] = ext[("min", True)].fillna(np.inf).to_numpy()
            hi1[idx] = ext[("max", True)].fillna(-np.inf).to_numpy()
        if ("min", False) in ext.columns:
            lo0[idx] = ext[("min", False)].fillna(np.inf).to_numpy()
            hi0[idx] = ext[("max", False)].fillna(-np.inf).to_numpy()
        # with one predictor, an MLE exists iff neither class lies (weakly) on one side of the other
        proper = (hi0 > lo1) & (hi1 > lo0)
        params = np.full((n_groups, 2), np.nan)
        bse = np.full((n_groups, 2), np.nan)
        pvalues = np.full((n_groups, 2), np.nan)
        rows = proper[g]
        if rows.any():
            fit, cov, converged = _logistic_newton(g[rows], m[rows], y[rows].astype(np.float64), n_groups, k / n)
            if not converged[proper].all():
                bad = np.flatnonzero(proper & ~converged)
                _warn(f"{len(bad)} logistic fit(s) did not converge (nearly separated by metarank); they are "
                      f"treated as improper")
                proper = proper & converged
            params[proper] = fit[proper]
            bse[proper] = np.sqrt(np.stack([cov[proper, 0, 0], cov[proper, 1, 1]], axis=1))
            pvalues[proper] = 2.0 * stats.norm.sf(np.abs(params[proper] / bse[proper]))
        status = np.where(n == 0, "no_data", "improper").astype(object)
        slope, p = params[:, 1], pvalues[:, 1]
        sig = p < self.alpha
        status[proper & (slope > 0) & sig] = "pos_sig"
        status[proper & (slope > 0) & ~sig] = "pos_nonsig"
        status[proper & (slope <= 0) & ~sig] = "neg_nonsig"
        status[proper & (slope <= 0) & sig] = "neg_sig"
        return {"n": n, "k": k, "params": params, "bse": bse, "p": p, "proper": proper, "status": status}

    def _effective(self, f: dict, fallback: tuple | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per group the model actually used: logistic, the empirical rate, or the fallback."""
        n, k = f["n"], f["k"]
        b0, b1 = f["params"][:, 0].copy(), f["params"][:, 1].copy()
        with np.errstate(invalid="ignore", divide="ignore"):
            const = np.where(f["proper"], np.nan, k / n)
        if fallback is not None:
            fb0, fb1, fconst = (np.tile(x, len(n) // 2) for x in fallback)
            use_fb = (n == 0) | (~f["proper"] & (self.improper == "universal"))
            b0, b1, const = np.where(use_fb, fb0, b0), np.where(use_fb, fb1, b1), np.where(use_fb, fconst, const)
        return b0, b1, const

    def _frame(self, f: dict, qids: Any, cond: Any) -> pd.DataFrame:
        used = np.where(f["proper"], "logistic", np.where(f["n"] == 0, "universal", self.improper)).astype(object)
        return pd.DataFrame({"qid": qids, "original": cond, "beta0": f["params"][:, 0], "beta1": f["params"][:, 1],
                             "se_beta0": f["bse"][:, 0], "se_beta1": f["bse"][:, 1], "p_slope": f["p"],
                             "n": f["n"], "n_alt_relevant": f["k"], "status": f["status"], "used": used})

    def slope_table(self) -> pd.DataFrame:
        """Counts of fitted models by slope class, per original class (Webber et al. 2012, Table 4)."""
        if self.coefficients_ is None:
            raise InputError("MetarankLogisticModel has not been fitted: call .fit(original, alternative) first")
        c = self.coefficients_[self.coefficients_["status"] != "no_data"]
        cols = ["pos_sig", "pos_nonsig", "improper", "neg_nonsig", "neg_sig"]
        table = pd.crosstab(c["original"].map({1: "p(.|1)", 0: "p(.|0)"}), c["status"]).reindex(
            index=["p(.|1)", "p(.|0)"], columns=cols, fill_value=0)
        table.index.name = "condition"
        return table.fillna(0).astype(np.int64)


def sample_for_dual_assessment(qrels: Any, n_per_class: int = 20, strategy: str = "uniform", *, runs: Any = None,
                               metarank: Any = None, n_bins: int = 5, depth: int = META_AP_DEPTH,
                               ties: str = "trec_eval", rel: float = 1, candidates: Any = None,
                               seed: int | None = 0) -> pd.DataFrame:
    """Choose documents to re-judge: ``n_per_class`` relevant and non-relevant judgments per topic.

    Webber et al. (2012), Sec. 3.3 and 4.4.  ``strategy="uniform"``: a simple random sample without
    replacement from each class; ``"even"``: each class is sorted by metarank (random order among
    ties) and cut into ``n_bins`` equal-count bins (sizes differ by at most one; the paper's
    quintiles), and ``n_per_class / n_bins`` documents are drawn from each bin (the first
    ``n_per_class % n_bins`` bins take one more).  A class or bin with too few documents gives all
    of them.  ``"even"`` needs ``runs`` or ``metarank``; ``candidates`` (a ``qid, docno`` frame)
    restricts the sampling frame, e.g. to documents that already have a second judgment.

    Returns the chosen qrels rows (``qid, docno, label``) with ``original_relevant`` and, when
    metarank is known, ``meta_ap`` (and ``bin`` for ``"even"``), sorted by topic then docno.
    """
    strategy = _choice("strategy", strategy, ("uniform", "even"))
    n_per_class = _integer("n_per_class", n_per_class, 1)
    n_bins = _integer("n_bins", n_bins, 1)
    rel = _number("rel", rel)
    table = JudgmentTable.from_qrels(qrels)
    frame = table.frame.copy()
    tix = table.topic_index
    if candidates is not None:
        if not isinstance(candidates, pd.DataFrame) or not {"qid", "docno"} <= set(candidates.columns):
            raise InputError("candidates must be a frame with columns qid and docno")
        ck = pd.MultiIndex.from_arrays([candidates["qid"].astype(str).to_numpy(),
                                        candidates["docno"].astype(str).to_numpy()])
        inside = ck.get_indexer(pd.MultiIndex.from_arrays([frame["qid"].to_numpy(), frame["docno"].to_numpy()])) >= 0
        if not inside.any():
            raise InputError("candidates: none of the candidate documents is in the qrels")
    else:
        inside = np.ones(len(frame), dtype=bool)
    m = None
    if runs is not None or metarank is not None:
        m = _MetaAP(runs, metarank, depth, ties, "sample_for_dual_assessment").for_table(table)
    elif strategy == "even":
        raise InputError("strategy='even' stratifies by metarank: give runs or metarank")
    relevant = table.labels >= rel
    n_rel = np.bincount(tix[inside & relevant], minlength=len(table.topics))
    no_rel = np.flatnonzero(n_rel == 0)
    if len(no_rel):
        _warn(f"{len(no_rel)} topic(s) have no relevant document to sample (e.g. qid {table.topics[no_rel[0]]!r}); "
              f"only non-relevant documents are drawn for them")
    rng = np.random.default_rng(_check_seed(seed))
    u = rng.random(len(frame))
    group = np.where(inside, tix * 2 + relevant.astype(np.int64), -1)

    def rank_in(keys_major: np.ndarray, *minor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order = np.lexsort((*minor[::-1], keys_major))
        k = keys_major[order]
        first = np.searchsorted(k, k)
        rank = np.empty(len(k), dtype=np.int64)
        rank[order] = np.arange(len(k)) - first
        size = np.empty(len(k), dtype=np.int64)
        size[order] = np.searchsorted(k, k, side="right") - first
        return rank, size

    if strategy == "uniform":
        r, _ = rank_in(group, u)
        chosen = inside & (r < n_per_class)
    else:
        r, size = rank_in(group, m, u)                              # metarank order, random among ties
        bins = (r * n_bins) // np.maximum(size, 1)
        sub = group * n_bins + bins
        r2, _ = rank_in(np.where(inside, sub, -1), rng.random(len(frame)))
        quota = n_per_class // n_bins + (bins < n_per_class % n_bins)
        chosen = inside & (r2 < quota)
        frame["bin"] = bins
    frame["original_relevant"] = relevant
    if m is not None:
        frame["meta_ap"] = m
    frame["label"] = _label_column(frame["label"].to_numpy())
    return frame[chosen].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------
# confusion-matrix judges (Goldberg et al. 2017)

class ConfusionJudge(JudgmentPerturbation):
    """A judge given by a confusion matrix ``J[g, b] = P(observed label b | true label g)``.

    Goldberg et al. (2017), Table 1 (binary) and Sec. 4.1 (graded, Eq. 15-16): each judgment
    with label ``g`` is replaced by a label drawn from row ``g``.  ``matrix`` is a
    :class:`~pyterrier_noise.correction.JudgeCalibration` (its estimated matrix and labels), a
    frame (index = true labels, columns = observed labels, in the same order) or a square array
    with ``labels``; rows must sum to 1.  With ``sample_matrix=True`` (calibrations only) every
    replicate first redraws the matrix from the calibration's multinomial counts, adding the
    calibration's own uncertainty (Goldberg et al. 2017, Alg. 1; seed001 A5).  Every label in the
    judgments must be one of the matrix's labels.
    """

    def __init__(self, matrix: Any, labels: Sequence[float] | None = None, *, sample_matrix: bool = False,
                 seed: int | None = 0) -> None:
        super().__init__(seed)
        from ..correction.estimates import JudgeCalibration
        self._counts = None
        if isinstance(matrix, JudgeCalibration):
            if labels is not None:
                raise InputError("labels come from the calibration; do not pass labels with a JudgeCalibration")
            labels = matrix.labels
            self._counts = matrix.counts.to_numpy().astype(np.int64)
            matrix = matrix.matrix.to_numpy()
        elif isinstance(matrix, pd.DataFrame):
            if labels is None:
                labels = list(matrix.index)
            try:
                same = [float(x) for x in matrix.columns] == [float(x) for x in matrix.index]
            except (TypeError, ValueError):
                raise InputError(f"matrix frame: labels must be numbers, got index {list(matrix.index)} and "
                                 f"columns {list(matrix.columns)}") from None
            if not same:
                raise InputError(f"matrix frame: the columns (observed labels {list(matrix.columns)}) must be the "
                                 f"same labels in the same order as the index (true labels {list(matrix.index)})")
            matrix = matrix.to_numpy()
        J = np.asarray(matrix, dtype=np.float64)
        if J.ndim != 2 or J.shape[0] != J.shape[1] or J.shape[0] < 2:
            raise InputError(f"matrix must be a square L x L array with L >= 2 (rows = true label, columns = "
                             f"observed label), got shape {J.shape}")
        bad = ~np.isfinite(J) | (J < 0)
        if bad.any():
            g, b = np.argwhere(bad)[0]
            raise InputError(f"matrix row {g}, column {b}: expected a probability >= 0, got {J[g, b]!r}")
        sums = J.sum(axis=1)
        off = np.flatnonzero(np.abs(sums - 1) > 1e-9)
        if len(off):
            raise InputError(f"matrix row {off[0]} sums to {sums[off[0]]!r}; each row is P(observed | true) and must "
                             f"sum to 1")
        n_labels = J.shape[0]
        if labels is None:
            labels = list(range(n_labels))
        try:
            values = np.asarray([float(x) for x in labels])
        except (TypeError, ValueError):
            raise InputError(f"labels must be numbers (relevance grades), got {list(labels)}") from None
        if len(values) != n_labels or len(np.unique(values)) != n_labels or not np.isfinite(values).all():
            raise InputError(f"labels must be {n_labels} distinct finite numbers, got {list(labels)}")
        order = np.argsort(values)
        self.labels = values[order]
        self.matrix = J[np.ix_(order, order)]
        if self._counts is not None:
            self._counts = self._counts[np.ix_(order, order)]
        self.sample_matrix = bool(sample_matrix)
        if self.sample_matrix and self._counts is None:
            raise InputError("sample_matrix=True redraws the matrix from calibration counts: pass a JudgeCalibration")
        if abs(np.linalg.det(self.matrix)) < 1e-9:
            _warn("the confusion matrix is singular: the observed labels carry no (or incomplete) information about "
                  "the true labels (a judge no better than chance)")
        elif n_labels == 2 and self.matrix[1, 1] <= self.matrix[0, 1]:
            _warn(f"TPR = {self.matrix[1, 1]:g} <= FPR = {self.matrix[0, 1]:g}: this judge is no better than chance")

    @classmethod
    def from_rates(cls, tpr: float, fpr: float, *, seed: int | None = 0) -> "ConfusionJudge":
        """The binary judge ``[[1 - fpr, fpr], [1 - tpr, tpr]]`` on labels 0, 1 (Goldberg et al. 2017, Table 1)."""
        tpr, fpr = _probability("tpr", tpr), _probability("fpr", fpr)
        return cls(np.array([[1 - fpr, fpr], [1 - tpr, tpr]]), [0, 1], seed=seed)

    def _params(self) -> dict[str, Any]:
        return {"labels": self.labels.tolist(), "matrix": np.round(self.matrix, 6).tolist(),
                "sample_matrix": self.sample_matrix}

    def _perturb(self, rows: _Rows, L: np.ndarray, stream: _Stream) -> np.ndarray:
        judged = ~np.isnan(L)
        g = np.searchsorted(self.labels, np.where(judged, L, self.labels[0]))
        g = np.minimum(g, len(self.labels) - 1)
        unknown = judged & (self.labels[g] != np.where(judged, L, self.labels[0]))
        if unknown.any():
            r, c = np.argwhere(unknown)[0]
            row = rows.table.frame.iloc[rows.rows[r]]
            raise InputError(f"judgment qid={row['qid']!r}, docno={row['docno']!r} has label {float(L[r, c]):g}, "
                             f"which is not one of the confusion matrix's labels {self.labels.tolist()}")
        U = stream.uniforms()
        nl = len(self.labels)
        if self.sample_matrix:
            n_gold = self._counts.sum(axis=1)
            J = self._counts / n_gold[:, None]
            draws = stream.child(0).generator().multinomial(n_gold, J, size=(stream.start + stream.n, nl))
            cum = np.cumsum(draws[stream.start:] / n_gold[None, :, None], axis=2)   # (n, L, L)
            col = np.arange(stream.n)[None, :]
            obs = np.zeros(U.shape, dtype=np.int64)
            for c in range(nl - 1):   # over labels (a handful), vectorised over judgments x replicates
                obs += U >= cum[col, g, c]
        else:
            cum = np.cumsum(self.matrix, axis=1)
            obs = np.zeros(U.shape, dtype=np.int64)
            for c in range(nl - 1):
                obs += U >= cum[g, c]
        return np.where(judged, self.labels[obs], np.nan)


# ------------------------------------------------------------------------------------------------
# making judgments unjudged: pool-depth reduction and random removal

class PoolDepthReduction(JudgmentPerturbation):
    """Keep only the judgments of documents in the depth-``depth`` pool of ``runs``; the rest become unjudged.

    Yang (2019), thesis Sec. 4.6 ("Depth@k reduction"; seed004b Sec. 2.5): ``Pool_t(k)`` is the
    union of the top ``k`` documents of every run for topic ``t`` (trec_eval order by default);
    ``qrels_k`` keeps the judgments of documents in it and makes the others unjudged (``NaN``), so
    R is recomputed from the reduced judgments and RBP residuals grow.  Deterministic: every
    replicate is the same (use ``n = 1``).  The thesis pools and scores only *deeply judged* runs
    (:func:`deeply_judged_runs`).
    """

    stochastic = False

    def __init__(self, runs: Any, depth: int, *, ties: str = "trec_eval") -> None:
        super().__init__(0)   # deterministic: the seed is not used
        self.depth = _integer("depth", depth, 1)
        self.ties = _choice("ties", ties, RUN_ORDERS)
        if runs is None:
            raise InputError("PoolDepthReduction needs the runs that form the pool")
        self.runs = runs if isinstance(runs, AlignedRuns) else read_runs(runs)
        self._cache: tuple[JudgmentTable, np.ndarray] | None = None

    def _params(self) -> dict[str, Any]:
        n = self.runs.n_runs if isinstance(self.runs, AlignedRuns) else len(self.runs)
        return {"depth": self.depth, "runs": n}

    def __repr__(self) -> str:
        p = self._params()
        return f"PoolDepthReduction(depth={p['depth']}, {p['runs']} runs)"

    def in_pool(self, table: JudgmentTable) -> np.ndarray:
        """Boolean per row of ``table``: is the document in some run's top ``depth``?"""
        table = _as_table(table)
        if self._cache is not None and self._cache[0] is table:
            return self._cache[1]
        aligned = _aligned_for(self.runs, table, self.ties)
        rows, _ = _in_top(aligned, self.depth, "PoolDepthReduction")
        mask = np.zeros(len(table), dtype=bool)
        mask[rows] = True
        judged = ~np.isnan(table.labels)
        empty = np.flatnonzero(np.bincount(table.topic_index[mask & judged], minlength=len(table.topics)) == 0)
        if len(empty):
            _warn(f"{len(empty)} topic(s) keep no judgment in the depth-{self.depth} pool (e.g. qid "
                  f"{table.topics[empty[0]]!r}): every document of theirs is unjudged")
        self._cache = (table, mask)
        return mask

    def _perturb(self, rows: _Rows, L: np.ndarray, stream: _Stream) -> np.ndarray:
        keep = self.in_pool(rows.table)[rows.rows]
        return np.where(keep[:, None], L, np.nan)


class RandomRemoval(JudgmentPerturbation):
    """Each judgment becomes unjudged with probability ``fraction`` (Buettcher et al. 2007; Sakai &
    Kando 2008; listed in Yang 2019, Sec. 4.6 / seed004b Sec. 7.3).

    ``exact=True`` removes exactly ``round(fraction * n_t)`` judgments of each topic ``t`` (a
    uniformly random subset) instead of independent Bernoulli trials.
    """

    def __init__(self, fraction: float, *, exact: bool = False, seed: int | None = 0) -> None:
        super().__init__(seed)
        self.fraction = _probability("fraction", fraction)
        self.exact = bool(exact)

    def _params(self) -> dict[str, Any]:
        return {"fraction": self.fraction, "exact": self.exact}

    def _perturb(self, rows: _Rows, L: np.ndarray, stream: _Stream) -> np.ndarray:
        U = stream.uniforms()
        judged = np.broadcast_to(~np.isnan(L), U.shape)
        if not self.exact:
            return np.where(U < self.fraction, np.nan, L)
        # rank of each judged row's uniform within its topic (unjudged rows sort last), per replicate
        key = rows.topic_index[:, None] + np.where(judged, U, 1.5) / 2.0
        order = np.argsort(key, axis=0, kind="stable")
        rank = np.empty_like(order)
        # sorted position p holds a row of topic topic_index[p] (topics are contiguous and sorted)
        np.put_along_axis(rank, order, (np.arange(len(rows)) - rows.topic_start[rows.topic_index])[:, None], axis=0)
        quota = np.floor(self.fraction * rows.topic_sum(judged) + 0.5)      # (T, n)
        remove = judged & (rank < quota[rows.topic_index[:, None], np.arange(U.shape[1])[None, :]])
        return np.where(remove, np.nan, L)


class Chain(JudgmentPerturbation):
    """Models applied in turn: each perturbs the previous one's replicates (``a >> b``).

    Stage ``k`` draws its random numbers from child ``k`` of the chain's seed
    (``SeedSequence(seed, spawn_key=(k,))``), so the stages are independent; the stages' own seeds
    are not used.  Replicate ``i`` of the chain applies every stage's replicate ``i``.
    """

    def __init__(self, *models: JudgmentPerturbation, seed: int | None = 0) -> None:
        super().__init__(seed)
        stages: list[JudgmentPerturbation] = []
        for mdl in models:
            if not isinstance(mdl, JudgmentPerturbation):
                raise InputError(f"Chain stages must be judgment perturbation models, got {type(mdl).__name__}")
            stages.extend(mdl.stages if isinstance(mdl, Chain) else [mdl])
        if not stages:
            raise InputError("Chain needs at least one model")
        self.stages = stages
        self.stochastic = any(s.stochastic for s in stages)

    def __repr__(self) -> str:
        return " >> ".join(repr(s) for s in self.stages) + f" (chain seed={self.seed})"

    def _perturb(self, rows: _Rows, L: np.ndarray, stream: _Stream) -> np.ndarray:
        for k, stage in enumerate(self.stages):
            L = stage._perturb(rows, L, stream.child(k))
        return L


def deeply_judged_runs(runs: Any, qrels: Any, depth: int = 50, ties: str = "trec_eval") -> list[str]:
    """Runs whose ranking for every topic of the qrels has at least ``depth`` documents, all judged.

    Yang (2019), Sec. 4.2 (seed004b Sec. 2.1): the systems the thesis pools and scores in its
    pool-depth experiments, so that every pooled document already has an official judgment.
    """
    depth = _integer("depth", depth, 1)
    table = qrels if isinstance(qrels, JudgmentTable) else JudgmentTable.from_qrels(qrels)
    aligned = _aligned_for(runs, table, _choice("ties", ties, RUN_ORDERS))
    seg = np.repeat(np.arange(aligned.n_segments), aligned.seg_len)
    top_judged = (aligned.pos < depth) & (aligned.jidx >= 0)
    judged = np.bincount(seg[top_judged], minlength=aligned.n_segments).reshape(aligned.n_runs, aligned.n_topics)
    ok = (judged >= depth).all(axis=1)
    return [name for name, good in zip(aligned.run_names, ok) if good]
