"""Ties on purpose and ties by accident: the banding, rounding and tie-breaking transformers.

Yang (2019), *Improving the Reliability and Robustness of IR Evaluation*, PhD thesis, Ch. 3
(with the thesis's errors corrected: see docs/ties.md).

Transformers (``pt.Transformer``; each keeps every input column it does not change, recomputes a
0-based ``rank`` and returns its rows ordered by query, in order of first appearance, then rank):

* :class:`TieBanding` -- geometric score bands, ``b_1 = 1``, ``b_{g+1} = ceil(rho * b_g)``
  (thesis Sec. 3.3.1), computed with exact rational arithmetic; every document of band ``g`` gets
  the score ``1/g`` and a ``band`` column.
* :class:`ScoreRounding` -- round scores to ``decimals``, ``sig_digits`` or a ``quantum``: the
  realistic way ties arise (low-precision scoring, printed scores).
* :class:`TieBreaker` -- order tied documents by a fixed rule: ``"trec_eval"`` (score descending,
  docno descending), ``"given"`` (the ``rank`` column), ``"input"`` (row order) or ``"random"``
  (seeded).

The bands themselves and their worst cases are in :mod:`.banding`, rounding in :mod:`.rounding`,
tie statistics in :mod:`.stats` and the brute-force reference in :mod:`.expected`.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pyterrier as pt

from .._validation import InputError, check_choice, check_seed
from .._vocab import PRECISIONS, TIE_BREAK_STRATEGIES, BandOrder, Precision, TieBreakStrategy
from ._frames import (_check_unique, _codes, _docno_codes, _empty, _finish, _numeric, _order_keys, _positions,
                      _validate)
from .banding import RhoLike, band_starts, exact_rho, band_order, rho_label
from .rounding import round_scores

__all__ = ["TieBanding", "ScoreRounding", "TieBreaker", "TIE_BREAK_STRATEGIES"]


# ------------------------------------------------------------------------------------------------
# transformers

class TieBanding(pt.Transformer):
    """Group each ranking into geometrically growing bands of tied scores.

    Yang (2019) thesis, Sec. 3.3.1 ("deliberate score grouping"): ``b_1 = 1``,
    ``b_{g+1} = ceil(rho * b_g)``, band ``g = [b_g, b_{g+1} - 1]``, computed exactly (see
    :func:`band_boundaries`).  Band membership comes from each ranking's existing order, the
    original scores are discarded, and every document of band ``g`` gets the score ``1/g``
    (strictly decreasing across bands, as in the thesis) and ``band = g`` (1-based).  ``rank`` is
    the 0-based position in the existing order, so within a band the rows stay in their old order;
    a tie-aware measure should treat that order as arbitrary.

    ``rho = 1`` gives every document its own band: the order is unchanged and no ties remain (the
    thesis's reference point, "original run order").  The thesis recommends ``rho <= 3`` (first
    band at most 3 documents) when RR is used, and finds system comparisons barely change up to
    ``rho = 2`` with binary judgments.

    Args:
        rho: growth factor >= 1; a float is read through its decimal string (1.1 means 11/10),
            or pass a string, :class:`~fractions.Fraction` or :class:`~decimal.Decimal`.
        by: the existing order of each ranking (:data:`BAND_ORDERS`).  ``"given"`` (default):
            the ``rank`` column ascending (row order among equal ranks); without a ``rank``
            column, as ``"trec_eval"``.  ``"trec_eval"``: score descending, then docno
            descending.  ``"input"``: row order.
    """

    def __init__(self, rho: RhoLike, by: BandOrder = "given") -> None:
        super().__init__()
        self.rho = rho
        self.by = band_order(by)

    @property
    def rho(self) -> Fraction:
        """The growth factor, as the exact fraction used by the recurrence (settable)."""
        return self._rho

    @rho.setter
    def rho(self, value: RhoLike) -> None:
        self._rho = exact_rho(value)

    def __repr__(self) -> str:
        return f"TieBanding(rho={rho_label(self._rho)}" + ("" if self.by == "given" else f", by={self.by!r}") + ")"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Band every ranking of ``inp`` (columns ``qid, docno`` plus ``score`` and/or ``rank``)."""
        by = self.by
        if by == "given" and isinstance(inp, pd.DataFrame) and "rank" not in inp.columns:
            by = "trec_eval"
        _validate(inp, self, {"given": ["rank"], "trec_eval": ["score"], "input": []}[by])
        if len(inp) == 0:
            return _empty(inp, score="float64", band="int64")
        _check_unique(inp, ["qid", "docno"], self)
        if "score" in inp.columns:     # replaced by 1 / band, but a NaN or inf score is refused as the CLI does
            _numeric(inp, "score", self)
        keys = _order_keys(inp, by, self)
        perm = np.lexsort((*keys, _codes(inp["qid"])))
        pos = _positions(_codes(inp["qid"])[perm])
        n_max = int(pos.max()) + 1
        # position -> band map, built once up to the longest ranking (bands depend only on position)
        starts = band_starts(self._rho, n_max)
        band_of = np.repeat(np.arange(1, len(starts) + 1, dtype=np.int64), np.diff(np.append(starts, n_max + 1)))
        band = band_of[pos]
        return _finish(inp, perm, pos, score=1.0 / band, band=band)


class ScoreRounding(pt.Transformer):
    """Round scores to ``decimals`` places, ``sig_digits`` significant digits or a ``quantum``.

    The realistic way ties arise (Yang 2019 thesis, Sec. 3.3: reduced-precision scoring; the thesis
    leaves "non-geometric bands from real score rounding" as future work).  Give exactly one of
    the three.  Rounding is monotone (see :func:`round_scores`), so no two documents swap; the
    documents it ties keep their previous relative order -- the ``rank`` column if present,
    otherwise row order -- and ``rank`` is recomputed by rounded score descending.

    Args:
        decimals: decimal places (negative rounds to tens, hundreds, ...).
        sig_digits: significant digits (>= 1).
        quantum: round to the nearest multiple of this positive step.
    """

    def __init__(self, *, decimals: int | None = None, sig_digits: int | None = None,
                 quantum: float | str | None = None) -> None:
        super().__init__()
        round_scores(np.zeros(0), decimals=decimals, sig_digits=sig_digits, quantum=quantum)  # validates
        self.decimals = decimals
        self.sig_digits = sig_digits
        self.quantum = quantum

    def __repr__(self) -> str:
        for name in ("decimals", "sig_digits", "quantum"):
            if getattr(self, name) is not None:
                return f"ScoreRounding({name}={getattr(self, name)!r})"
        return "ScoreRounding()"  # pragma: no cover - __init__ forbids it

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Round the ``score`` column of ``inp`` and re-rank."""
        _validate(inp, self, ["score"])
        if len(inp) == 0:
            return _empty(inp, score="float64")
        score = round_scores(_numeric(inp, "score", self), decimals=self.decimals,
                             sig_digits=self.sig_digits, quantum=self.quantum)
        keys = _order_keys(inp, "given" if "rank" in inp.columns else "input", self)
        qcode = _codes(inp["qid"])
        perm = np.lexsort((*keys, -score, qcode))
        return _finish(inp, perm, _positions(qcode[perm]), score=score[perm])


class TieBreaker(pt.Transformer):
    """Put the documents of every ranking in score order with a fixed rule for ties, and re-rank.

    Yang (2019) thesis, Sec. 3.1 (tie-handling strategies):

    * ``"trec_eval"``: score descending, then docno descending -- trec_eval's ``comp_sim_docno``
      (a byte-wise ``strcmp``, reversed).  Table 3.1's run D, H, A, C, M, S, W, B, E, J becomes
      D, H, C, A, S, M, W, J, E, B.  Numeric docnos are compared as text, as trec_eval does
      ("9" > "10").
    * ``"given"``: score descending, ties in the order the run gives them: by the ``rank``
      column, then row order (the thesis's canonical TREC order: ``sort -k4gr -k3,3``; the thesis
      calls trusting the system's own order "run order"); without a ``rank`` column, row order.
      The same word as the engine's ``ties="given"``.
    * ``"input"``: score descending, ties in row order, ignoring any ``rank`` column (what
      ``pt.model.add_ranks`` and cwl_eval do).
    * ``"random"``: score descending, ties in a random order drawn from ``seed``.  The draw depends
      only on the seed and the set of (qid, docno) pairs, not on the input row order, so the same
      seed gives the same output on a shuffled frame.

    Args:
        strategy: one of the four above.
        seed: an int, required for ``"random"`` (``numpy.random.default_rng(seed)``); there is
            no default, so that a random order is always reproducible and never fresh entropy.
        precision: ``"float64"`` (default) compares scores exactly; ``"float32"`` first rounds
            them to 32-bit floats, as trec_eval and pytrec_eval store them, so that scores equal
            in float32 are ties.  Output scores are not changed by this.
        rescore: if True, replace ``score`` by ``n - rank`` (``n`` = length of the ranking), which
            is strictly decreasing, so that later components cannot re-break the ties.
    """

    def __init__(self, strategy: TieBreakStrategy = "trec_eval", *,
                 seed: int | None = None, precision: Precision = "float64",
                 rescore: bool = False) -> None:
        super().__init__()
        self.strategy = check_choice("strategy", strategy, TIE_BREAK_STRATEGIES)
        self.precision = check_choice("precision", precision, PRECISIONS)
        if strategy == "random":
            if seed is None:
                raise InputError("TieBreaker('random') needs an integer seed so that its order can be reproduced, "
                                 "got seed=None")
            check_seed(seed, allow_none=False)
        elif seed is not None:
            raise InputError(f"seed is only used by strategy='random', not {strategy!r}")
        if not isinstance(rescore, bool):
            raise InputError(f"rescore must be True or False, got {rescore!r}")
        self.seed = seed
        self.rescore = rescore

    def __repr__(self) -> str:
        args = [repr(self.strategy)]
        if self.seed is not None:
            args.append(f"seed={self.seed}")
        if self.precision != "float64":
            args.append(f"precision={self.precision!r}")
        if self.rescore:
            args.append("rescore=True")
        return f"TieBreaker({', '.join(args)})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Reorder every ranking of ``inp`` (``qid, docno, score``) and recompute ``rank``."""
        _validate(inp, self, ["score"])
        if len(inp) == 0:
            return _empty(inp, score="float64") if self.rescore else _empty(inp)
        _check_unique(inp, ["qid", "docno"], self)
        score = _numeric(inp, "score", self)
        key = score.astype(np.float32) if self.precision == "float32" else score
        if self.strategy == "trec_eval":
            tie_key = -_docno_codes(inp["docno"])
        elif self.strategy == "input" or (self.strategy == "given" and "rank" not in inp.columns):
            tie_key = np.arange(len(inp))
        elif self.strategy == "given":
            tie_key = _numeric(inp, "rank", self)
        else:
            # draw in a canonical (qid, docno) order so that row order does not matter
            canon = np.lexsort((_docno_codes(inp["docno"]), _codes(inp["qid"].astype(str), sort=True)))
            tie_key = np.empty(len(inp))
            tie_key[canon] = np.random.default_rng(self.seed).random(len(inp))
        qcode = _codes(inp["qid"])
        perm = np.lexsort((np.arange(len(inp)), tie_key, -key, qcode))
        pos = _positions(qcode[perm])
        if not self.rescore:
            return _finish(inp, perm, pos)
        n = np.bincount(qcode)[qcode[perm]]
        return _finish(inp, perm, pos, score=(n - pos).astype(np.float64))
