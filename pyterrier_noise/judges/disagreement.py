"""Disagreement models fitted on dual assessments (Webber, Chandar & Carterette 2012): the flip-rate
and metarank-logistic models, and the choice of documents to re-judge."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit, ndtr

from .._validation import InputError, check_choice, check_int, check_number, check_rate, check_seed
from .._vocab import BIN_STRATEGIES, FIT_SCOPES, IMPROPER_FITS, BinStrategy, FitScope, Improper, RunOrder
from ..engine import JudgmentTable
from ..io import read_qrels
from ._common import _binary_labels, _check_can_act, _label_column, _relabel, _warn
from .base import JudgmentPerturbation
from .metaap import META_AP_DEPTH, MetaAP
from .stream import Rows, Stream


def _logistic_newton(g: np.ndarray, x: np.ndarray, y: np.ndarray, n_groups: int, rate: np.ndarray,
                     tol: float = 1e-10, max_iter: int = 100) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Independent logistic regressions ``P(y = 1) = logistic(a_g + b_g x)``, one per group, fitted together.

    Newton-Raphson (= IRLS for the logit link), vectorised over groups: each iteration is a few
    ``bincount`` sums over the rows and a closed-form 2 x 2 solve per group.  Written here because
    statsmodels fits one design at a time: one Logit per topic is a Python loop per topic, and one
    block-diagonal GLM costs an SVD of an (observations x 2 groups) matrix per iteration.  The
    estimates and Wald standard errors equal statsmodels' ``Logit`` fitted group by group (tested).
    Returns the parameters (G, 2), their covariance (G, 2, 2) (inverse Fisher information) and a
    convergence flag per group.
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


def _model_p(m: np.ndarray, b0: np.ndarray, b1: np.ndarray, const: np.ndarray, step: np.ndarray) -> np.ndarray:
    """P(B = 1) at metarank ``m`` under a logistic model, a constant or a step (whichever is set).

    ``step[..., :]`` = (threshold c, probability below c, above c, at c): the 0/1 probabilities an
    improper (separated) fit assigns by score (Webber, Chandar and Carterette 2012, Sec. 3.2.2).
    """
    with np.errstate(invalid="ignore"):
        p = expit(b0 + b1 * m)
        c = step[..., 0]
        stepped = np.where(m > c, step[..., 2], np.where(m < c, step[..., 1], step[..., 3]))
    p = np.where(np.isnan(const), p, const)
    return np.where(np.isnan(c), p, stepped)


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
    model (``b0``, ``b1``), a constant probability ``const`` (NaN where not used) or a step in
    metarank (``step``: threshold, probability below, above and at it; NaN where not used).
    """

    def __init__(self, scope: str, rel: Any, off_label: Any, on_label: Any, seed: Any) -> None:
        super().__init__(seed)
        self.scope = check_choice("scope", scope, FIT_SCOPES)
        self.rel, self.off_label, self.on_label = _binary_labels(rel, off_label, on_label)
        self._topics: list[str] = []
        self._b0 = self._b1 = self._const = np.zeros((0, 2))
        self._step = np.full((0, 2, 4), np.nan)
        self._ub0 = self._ub1 = self._uconst = None
        self._ustep = np.full((2, 4), np.nan)

    def _uses_metarank(self) -> bool:
        return False

    def _require_fit(self) -> None:
        if self._uconst is None:
            raise InputError(f"{type(self).__name__} has not been fitted: call .fit(original_qrels, "
                             f"alternative_qrels) first")

    def _row_params(self, rows: Rows) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(b0, b1, const) each (m, 2) and step (m, 2, 4): the model of each row's topic for A = 0 and A = 1."""
        self._require_fit()
        n = len(rows)
        b0 = np.broadcast_to(self._ub0, (n, 2)).copy()
        b1 = np.broadcast_to(self._ub1, (n, 2)).copy()
        const = np.broadcast_to(self._uconst, (n, 2)).copy()
        step = np.broadcast_to(self._ustep, (n, 2, 4)).copy()
        if self.scope == "per_topic" and self._topics:
            tloc = pd.Index(self._topics).get_indexer(pd.Index(rows.table.topics))
            unknown = np.asarray(rows.table.topics, dtype=object)[tloc < 0]
            if len(unknown):
                _warn(f"{len(unknown)} topic(s) of the judgments have no per-topic disagreement model (e.g. qid "
                      f"{unknown[0]!r}); they use the universal model")
            t = tloc[rows.topic_index]
            known = t >= 0
            b0[known], b1[known], const[known] = self._b0[t[known]], self._b1[t[known]], self._const[t[known]]
            step[known] = self._step[t[known]]
        return b0, b1, const, step

    def _p_relevant_rows(self, rows: Rows) -> np.ndarray:
        """(m, 2): P(B = 1 | A = 0) and P(B = 1 | A = 1) for each row."""
        b0, b1, const, step = self._row_params(rows)
        if self._uses_metarank():
            m = self._meta.for_table(rows.table)[rows.rows][:, None]
            return _model_p(m, b0, b1, const, step)
        return const

    def probabilities(self, qrels: Any) -> pd.DataFrame:
        """The qrels (a frame or table) with ``p_relevant``: P(the simulated assessor says relevant)
        given each original judgment (Webber et al. 2012, Eq. 1 / the flip-rate model)."""
        table = qrels if isinstance(qrels, JudgmentTable) else JudgmentTable.from_qrels(qrels)
        rows = Rows(table)
        p = self._p_relevant_rows(rows)
        out = table.frame.copy()
        col = np.full(len(table), np.nan)
        col[rows.rows] = np.where(rows.labels >= self.rel, p[:, 1], p[:, 0])
        out["p_relevant"] = col
        return out

    def _perturb(self, rows: Rows, L: np.ndarray, stream: Stream) -> np.ndarray:
        p = self._p_relevant_rows(rows)
        _check_can_act(L, self.rel, type(self).__name__, "its false negatives (P(B = 0 | A = 1))",
                       "its false positives (P(B = 1 | A = 0))")
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

    def __init__(self, scope: FitScope = "per_topic", *, fnr: float | None = None, fpr: float | None = None,
                 rel: float = 1, off_label: float = 0, on_label: float | None = None,
                 seed: int | None = 0) -> None:
        super().__init__(scope, rel, off_label, on_label, seed)
        self.rates_: pd.DataFrame | None = None
        if (fnr is None) != (fpr is None):
            raise InputError("give both fnr and fpr (fixed rates), or neither (and fit the model)")
        if fnr is not None:
            fnr, fpr = check_rate("fnr", fnr), check_rate("fpr", fpr)
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
        self._step = np.full(const.shape + (4,), np.nan)
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
    separation, where no finite MLE exists) is *improper*, "though 0 or 1 probabilities can be
    assigned to scores".  ``improper="step"`` (default, the paper's) does that: probability 1 on
    the ``B = 1`` side of the gap between the two classes and 0 on the other, split at the midpoint
    of the gap (at a shared boundary value, the documents there get their empirical rate; when all
    labels agree, 0 or 1 everywhere).  ``improper="rate"`` (the earlier default) uses
    the group's empirical rate ``#(B=1) / n`` whatever the metarank; ``improper="universal"`` uses
    the universal model.  A warning names the topics with improper fits.  Topics without
    dual-assessed documents of a class use the universal model.

    Goodness of fit (Sec. 3.2.3, Eq. 2): ``coefficients_["rss"]`` is the unweighted residual sum
    of squares ``S = sum_i (y_i - pi_i)^2`` of each group under the model used for it (Hosmer et
    al. 1997); :func:`compare_predictors` compares predictors with it (Table 3).

    Args:
        runs: runs defining the metarank (``{name: frame}``, a directory, or an ``AlignedRuns`` on
            the same qrels); or ``metarank``: a ``qid, docno, meta_ap`` frame.
        scope: ``"per_topic"`` or ``"universal"``.
        alpha: level of the Wald test of the slope in :attr:`coefficients_` ``status``.
        predictor: the metarank computed from ``runs`` (Sec. 3.2.1): ``"meta_ap"`` (default, the
            paper's choice), ``"mean_inverse_rank"`` or ``"max_inverse_rank"`` (:func:`metarank`).
    """

    def __init__(self, runs: Any = None, *, metarank: Any = None, scope: FitScope = "per_topic",
                 improper: Improper = "step", alpha: float = 0.05, depth: int = META_AP_DEPTH, ties: RunOrder = "trec_eval",
                 rel: float = 1, off_label: float = 0, on_label: float | None = None,
                 seed: int | None = 0, predictor: str = "meta_ap") -> None:
        super().__init__(scope, rel, off_label, on_label, seed)
        self.improper = check_choice("improper", improper, IMPROPER_FITS)
        self.alpha = check_rate("alpha", alpha)
        self._meta = MetaAP(runs, metarank, depth, ties, "MetarankLogisticModel", predictor)
        self.coefficients_: pd.DataFrame | None = None
        self.universal_: pd.DataFrame | None = None

    def _uses_metarank(self) -> bool:
        return True

    def _params(self) -> dict[str, Any]:
        return {"scope": self.scope, "improper": self.improper, "predictor": self._meta.predictor}

    def fit(self, original: Any, alternative: Any) -> "MetarankLogisticModel":
        """Fit on dual assessments (documents judged in both qrels).  Returns ``self``.

        Sets :attr:`coefficients_` (per topic and class: ``beta0, beta1, se_beta0, se_beta1,
        p_slope, n, n_alt_relevant, status, used, rss``) and :attr:`universal_` (the same per class).
        ``p_slope`` is the two-sided Wald test of ``beta1 = 0``; ``rss`` is Eq. 2.
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
        ueff = self._effective(u, None)
        self._ub0, self._ub1, self._uconst, self._ustep = ueff
        self.universal_ = self._frame(u, ["all", "all"], [0, 1], self._rss(A, m, B, ueff, 2))
        if self.scope == "per_topic":
            g = t * 2 + A
            f = self._fit_groups(g, m, B, 2 * len(topics))
            self._announce_missing(f["n"].reshape(-1, 2), topics)
            eff = self._effective(f, ueff)
            b0, b1, const, step = eff
            self._b0, self._b1, self._const = b0.reshape(-1, 2), b1.reshape(-1, 2), const.reshape(-1, 2)
            self._step = step.reshape(-1, 2, 4)
            self._topics = list(topics)
            self.coefficients_ = self._frame(f, np.repeat(topics, 2), np.tile([0, 1], len(topics)),
                                             self._rss(g, m, B, eff, 2 * len(topics)))
        else:
            self._topics = []
            self.coefficients_ = self.universal_
        improper = self.coefficients_["status"] == "improper"
        if improper.any():
            how = {"step": "0/1 probabilities by metarank (improper='rate': their empirical rate)",
                   "rate": "their empirical rate, whatever the metarank",
                   "universal": "the universal model"}[self.improper]
            bad = self.coefficients_[improper]
            names = ", ".join(f"{q!r} (A={a})" for q, a in zip(bad["qid"].head(10), bad["original"].head(10)))
            more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
            _warn(f"{int(improper.sum())} of {len(improper)} logistic model(s) are improper (all alternative labels "
                  f"agree, or the labels are separated by metarank: no finite MLE): qid {names}{more}; they use {how}")
        return self

    @staticmethod
    def _rss(g: np.ndarray, m: np.ndarray, y: np.ndarray, eff: tuple, n_groups: int) -> np.ndarray:
        """Webber et al. (2012), Eq. 2: ``sum_i (y_i - pi_i)^2`` per group, ``pi`` from the model used."""
        b0, b1, const, step = eff
        p = _model_p(m, b0[g], b1[g], const[g], step[g])
        return np.bincount(g, weights=(y.astype(np.float64) - p) ** 2, minlength=n_groups)

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
        # improper groups: 0/1 by metarank, split at the middle of the gap between the classes
        up = hi0 <= lo1                                    # every B = 1 at or above every B = 0
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = k / n
            c = np.where(up, (hi0 + lo1) / 2.0, (hi1 + lo0) / 2.0)
        agree = (k == 0) | (k == n)
        c = np.where(agree, 0.0, c)
        at = np.isclose(m, c[g], rtol=0.0, atol=1e-12) & ~agree[g]
        n_at = np.bincount(g[at], minlength=n_groups)
        k_at = np.bincount(g[at], weights=y[at].astype(np.float64), minlength=n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            p_at = np.where(n_at > 0, k_at / np.maximum(n_at, 1), 0.5)
        step = np.stack([c, np.where(agree, rate, np.where(up, 0.0, 1.0)),
                         np.where(agree, rate, np.where(up, 1.0, 0.0)), np.where(agree, rate, p_at)], axis=1)
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
            pvalues[proper] = 2.0 * ndtr(-np.abs(params[proper] / bse[proper]))   # 2 P(Z > |z|)
        status = np.where(n == 0, "no_data", "improper").astype(object)
        slope, p = params[:, 1], pvalues[:, 1]
        sig = p < self.alpha
        status[proper & (slope > 0) & sig] = "pos_sig"
        status[proper & (slope > 0) & ~sig] = "pos_nonsig"
        status[proper & (slope <= 0) & ~sig] = "neg_nonsig"
        status[proper & (slope <= 0) & sig] = "neg_sig"
        return {"n": n, "k": k, "params": params, "bse": bse, "p": p, "proper": proper, "status": status,
                "step": step}

    def _effective(self, f: dict, fallback: tuple | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per group the model actually used: logistic, a step, the empirical rate, or the fallback."""
        n, k = f["n"], f["k"]
        b0, b1 = f["params"][:, 0].copy(), f["params"][:, 1].copy()
        improper = ~f["proper"] & (n > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            const = np.where(improper & (self.improper != "step"), k / n, np.nan)
        step = np.where((improper & (self.improper == "step"))[:, None], f["step"], np.nan)
        if fallback is not None:
            fb0, fb1, fconst = (np.tile(x, len(n) // 2) for x in fallback[:3])
            fstep = np.tile(fallback[3], (len(n) // 2, 1))
            use_fb = (n == 0) | (improper & (self.improper == "universal"))
            b0, b1, const = np.where(use_fb, fb0, b0), np.where(use_fb, fb1, b1), np.where(use_fb, fconst, const)
            step = np.where(use_fb[:, None], fstep, step)
        return b0, b1, const, step

    def _frame(self, f: dict, qids: Any, cond: Any, rss: np.ndarray) -> pd.DataFrame:
        used = np.where(f["proper"], "logistic", np.where(f["n"] == 0, "universal", self.improper)).astype(object)
        return pd.DataFrame({"qid": qids, "original": cond, "beta0": f["params"][:, 0], "beta1": f["params"][:, 1],
                             "se_beta0": f["bse"][:, 0], "se_beta1": f["bse"][:, 1], "p_slope": f["p"],
                             "n": f["n"], "n_alt_relevant": f["k"], "status": f["status"], "used": used,
                             "rss": np.where(f["n"] > 0, rss, np.nan)})

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


def sample_for_dual_assessment(qrels: Any, n_per_class: int = 20, strategy: BinStrategy = "uniform", *,
                               runs: Any = None, metarank: Any = None, n_bins: int = 5, depth: int = META_AP_DEPTH,
                               ties: RunOrder = "trec_eval", rel: float = 1, candidates: Any = None,
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
    strategy = check_choice("strategy", strategy, BIN_STRATEGIES)
    n_per_class = check_int("n_per_class", n_per_class, 1)
    n_bins = check_int("n_bins", n_bins, 1)
    rel = check_number("rel", rel)
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
        m = MetaAP(runs, metarank, depth, ties, "sample_for_dual_assessment").for_table(table)
    elif strategy == "even":
        raise InputError("strategy='even' stratifies by metarank: give runs or metarank")
    relevant = table.labels >= rel
    n_rel = np.bincount(tix[inside & relevant], minlength=len(table.topics))
    no_rel = np.flatnonzero(n_rel == 0)
    if len(no_rel):
        _warn(f"{len(no_rel)} topic(s) have no relevant document to sample (e.g. qid {table.topics[no_rel[0]]!r}); "
              f"only non-relevant documents are drawn for them")
    rng = np.random.default_rng(check_seed(seed))
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
