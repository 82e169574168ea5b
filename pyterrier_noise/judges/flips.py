"""Random and rank-biased qrel flips (Rashidi, Zobel & Moffat 2023; Li & Smucker 2014), with the
signal-detection mapping between error rates and (discriminability, bias)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit, ndtr, ndtri

from .._validation import InputError, check_choice, check_number, check_rate
from .._vocab import JUDGE_NAMES, WEIGHTINGS, JudgeName, RunOrder, Weighting
from ..engine import JudgmentTable
from ._common import _as_table, _binarise, _binary_labels, _check_can_act, _relabel, _warn
from .base import JudgmentPerturbation
from .metaap import META_AP_DEPTH, MetaAP
from .sampling import inclusion
from .stream import Rows, Stream

#: Kinds of judges of Rashidi, Zobel & Moffat (2023) as (discriminability d', bias)
#: ``smart_neutral`` is the paper's main setting (TPR 0.93, FPR 0.07), ``extreme`` its low-TPR case
#: (0.31, 0.07); ``nist_primary`` and ``crowd_secondary`` are Smucker & Jethani's estimates for
#: primary (NIST) and secondary (crowd) assessors (0.78 / 0.06 and 0.79 / 0.14).
JUDGES: dict[JudgeName, tuple[float, float]] = {   # the keys are _vocab.JUDGE_NAMES
    "smart_neutral": (3.0, 0.0),
    "nist_primary": (2.3, 0.37),
    "crowd_secondary": (1.9, 0.14),
    "extreme": (1.0, 1.0),
}

#: Webber et al.'s logistic agreement model fitted on TREC 6 (Rashidi et al. 2023, Table 1):
#: ``tpr`` = (beta0, beta1) of P(judged relevant | relevant, meta-AP), ``fpr`` the same for
#: non-relevant documents.
WEBBER_TREC6: dict[str, tuple[float, float]] = {"tpr": (-0.62, 0.53), "fpr": (-3.90, 1.20)}


def sdt_rates(disc: Any, bias: Any) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Error rates of a judge with discriminability ``disc`` (d') and criterion ``bias``.

    ``TPR = Phi(disc/2 - bias)``, ``FPR = Phi(-disc/2 - bias)`` (Li & Smucker 2014, as used by
    Rashidi, Zobel & Moffat 2023, Sec. 3.1).  Vectorised; ``(3, 0)`` gives
    ``(0.9332, 0.0668)``.
    """
    d = np.asarray(disc, dtype=np.float64)
    b = np.asarray(bias, dtype=np.float64)
    if not (np.isfinite(d).all() and np.isfinite(b).all()):
        raise InputError(f"disc and bias must be finite numbers, got disc={disc!r}, bias={bias!r}")
    tpr, fpr = ndtr(d / 2 - b), ndtr(-d / 2 - b)   # the standard normal CDF, Phi
    if tpr.ndim == 0:
        return float(tpr), float(fpr)
    return tpr, fpr


def sdt_params(tpr: Any, fpr: Any) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Inverse of :func:`sdt_rates`: ``disc = z(TPR) - z(FPR)``, ``bias = -(z(TPR) + z(FPR)) / 2``.

    ``z`` is the probit.  Rates of exactly 0 or 1 give infinite values.
    """
    t = np.asarray(tpr, dtype=np.float64)
    f = np.asarray(fpr, dtype=np.float64)
    if not (np.all((t >= 0) & (t <= 1)) and np.all((f >= 0) & (f <= 1))):
        raise InputError(f"tpr and fpr must be probabilities in [0, 1], got tpr={tpr!r}, fpr={fpr!r}")
    zt, zf = ndtri(t), ndtri(f)   # the probit, Phi^-1
    disc, bias = zt - zf, -0.5 * (zt + zf)
    if np.ndim(disc) == 0:
        return float(disc), float(bias)
    return disc, bias


class _RateModel(JudgmentPerturbation):
    """Shared TPR / FPR handling and the (disc, bias) constructors."""

    def _set_rates(self, tpr: Any, fpr: Any) -> None:
        self.tpr = check_rate("tpr", tpr)
        self.fpr = check_rate("fpr", fpr)
        if self.tpr <= self.fpr:
            _warn(f"tpr={self.tpr:g} <= fpr={self.fpr:g}: this judge is no better than chance (it calls relevant "
                  f"documents relevant no more often than non-relevant ones)")

    def _check_can_act(self, L: np.ndarray) -> None:
        """Warn when the judgments have no class for ``fpr`` (or ``tpr``) to act on."""
        if self.tpr is None:   # absolute weighting: the logistic weights of either class act
            tpr, fpr = "the false-negative weights (betas['tpr'])", "the false-positive weights (betas['fpr'])"
        else:
            tpr = f"tpr={self.tpr:g}" if self.tpr < 1 else None
            fpr = f"fpr={self.fpr:g}" if self.fpr > 0 else None
        _check_can_act(L, self.rel, type(self).__name__, tpr, fpr)

    @property
    def disc(self) -> float:
        """Discriminability ``z(TPR) - z(FPR)``."""
        return sdt_params(self.tpr, self.fpr)[0]

    @property
    def bias(self) -> float:
        """Criterion ``-(z(TPR) + z(FPR)) / 2``; positive = conservative."""
        return sdt_params(self.tpr, self.fpr)[1]

    @classmethod
    def from_discriminability(cls, disc: float, bias: float, **kwargs: Any) -> Any:
        """The model for a judge with discriminability ``disc`` and ``bias``:
        ``TPR = Phi(disc/2 - bias)``, ``FPR = Phi(-disc/2 - bias)``."""
        tpr, fpr = sdt_rates(check_number("disc", disc), check_number("bias", bias))
        return cls(tpr=tpr, fpr=fpr, **kwargs)

    @classmethod
    def from_judge(cls, name: JudgeName, **kwargs: Any) -> Any:
        """The model for one of the named judges in :data:`JUDGES` (e.g. ``"smart_neutral"``)."""
        return cls.from_discriminability(*JUDGES[check_choice("name", name, JUDGE_NAMES)], **kwargs)


class RandomFlips(_RateModel):
    """Random qrel flips: each judgment flips independently at class-conditional rates.

    A relevant judgment (``label >= rel``) stays relevant with probability ``tpr`` and a
    non-relevant one becomes relevant with probability ``fpr`` (Li & Smucker 2014; Rashidi, Zobel &
    Moffat 2023, Sec. 3.1 and Fig. 2 with equal weights, where ``weighted_subset`` reduces to
    Bernoulli trials).  Give ``tpr`` and ``fpr``, or use
    :meth:`from_discriminability` / :meth:`from_judge`.

    Graded labels: a flipped relevant judgment becomes ``off_label`` (default 0), a flipped
    non-relevant one becomes ``on_label`` (default ``rel``); unflipped judgments keep their grade
    (default, ``binarise=False``), so graded measures keep the grades the flips left alone.
    ``binarise=True`` makes every judgment of a replicate binary (``on_label`` or ``off_label``),
    as Rashidi, Zobel and Moffat (2023) binarised the qrels before flipping: it changes only
    measures that use grades (nDCG's gains); binary measures at ``rel`` score the same either way.
    """

    def __init__(self, tpr: float, fpr: float, *, rel: float = 1, off_label: float = 0,
                 on_label: float | None = None, seed: int | None = 0, binarise: bool = False) -> None:
        super().__init__(seed)
        self._set_rates(tpr, fpr)
        self.rel, self.off_label, self.on_label = _binary_labels(rel, off_label, on_label)
        self.binarise = _check_bool("binarise", binarise)

    def _params(self) -> dict[str, Any]:
        return {"tpr": self.tpr, "fpr": self.fpr, "rel": self.rel}

    def _perturb(self, rows: Rows, L: np.ndarray, stream: Stream) -> np.ndarray:
        self._check_can_act(L)
        U = stream.uniforms()
        with np.errstate(invalid="ignore"):
            p = np.where(L >= self.rel, self.tpr, self.fpr)
        out = _relabel(L, self.rel, U < p, self.off_label, self.on_label)
        return _binarise(out, self.rel, self.off_label, self.on_label) if self.binarise else out


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


class RankBiasedFlips(_RateModel):
    """Rank-biased qrel flips: random flips placed by each document's meta-AP popularity.

    Rashidi, Zobel & Moffat (2023), Sec. 3.2, Eq. 1 and Figs 2-3.  Each
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
        binarise: make every judgment binary, as the paper did (as in :class:`RandomFlips`).
    """

    def __init__(self, tpr: float | None, fpr: float | None, runs: Any = None, *, meta_ap: Any = None,
                 depth: int = META_AP_DEPTH, ties: RunOrder = "trec_eval",
                 betas: Mapping[str, Sequence[float]] = WEBBER_TREC6, weighting: Weighting = "relative",
                 rel: float = 1, off_label: float = 0, on_label: float | None = None,
                 seed: int | None = 0, binarise: bool = False) -> None:
        super().__init__(seed)
        self.binarise = _check_bool("binarise", binarise)
        self.weighting = check_choice("weighting", weighting, WEIGHTINGS)
        if weighting == "relative" or tpr is not None or fpr is not None:
            if tpr is None or fpr is None:
                raise InputError("RankBiasedFlips needs tpr and fpr (the expected error counts) unless "
                                 "weighting='absolute'")
            self._set_rates(tpr, fpr)
        else:
            self.tpr = self.fpr = None
        self.betas = self._check_betas(betas)
        self.rel, self.off_label, self.on_label = _binary_labels(rel, off_label, on_label)
        self._meta = MetaAP(runs, meta_ap, depth, ties, "RankBiasedFlips")
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
            out[key] = (check_number(f"betas[{key!r}][0]", pair[0]), check_number(f"betas[{key!r}][1]", pair[1]))
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
        rows = Rows(table)
        out = np.full(len(table), np.nan)
        out[rows.rows] = self._p_relevant(rows, rows.labels[:, None])[:, 0]
        return out

    def _p_relevant(self, rows: Rows, L: np.ndarray) -> np.ndarray:
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
        keep = inclusion(w1, wbar1[rows.topic_index], self.tpr)      # retained relevant (q1')
        flip_on = inclusion(w0, wbar0[rows.topic_index], self.fpr)   # flipped on (q0')
        return np.where(relevant, keep, flip_on)

    def _perturb(self, rows: Rows, L: np.ndarray, stream: Stream) -> np.ndarray:
        self._check_can_act(L)
        p = self._p_relevant(rows, L)
        U = stream.uniforms()
        out = _relabel(L, self.rel, U < p, self.off_label, self.on_label)
        return _binarise(out, self.rel, self.off_label, self.on_label) if self.binarise else out
