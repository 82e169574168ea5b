"""Stopping rules for judgment selection (an extension of Moffat et al. 2007)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import InputError, check_choice, check_int, check_number
from .._vocab import STOP_LEADERS, StopLeader
from ..engine.ranges import midpoint_where_undefined as _proj_fallback, projected as _projection

__all__ = ["StopRule"]


@dataclass(frozen=True)
class StopRule:
    """Stop judging before the budget is spent (an extension: the paper always
    fills a fixed budget; running out of candidates always stops).

    Checked before the first judgment and after every judgment, on the selector's own RBP ranges
    at the selection persistence ``p`` (run means over topics; a run's residual counts its
    unjudged ranks and its tail), which it keeps up to date, so a check costs O(runs x topics).

    Args:
        top_residual: stop once the mean residual of the ``top_k`` runs leading by midpoint
            (base + residual / 2) is at most this.
        top_k: how many leading runs (default: a third of the runs, at least 2).
        leader: stop once the leading run (by midpoint) is separated from every other run: its
            base above each other run's upper bound (``"upper"``: certain, whatever the unjudged
            documents hold) or above each other run's projected value (``"projected"``: base /
            judged mass, a topic with nothing judged counting its midpoint).
    """

    top_residual: float | None = None
    top_k: int | None = None
    leader: StopLeader | None = None

    def __post_init__(self) -> None:
        if self.top_residual is None and self.leader is None:
            raise InputError("StopRule: give top_residual, leader, or both")
        if self.top_residual is not None and not 0.0 <= check_number("StopRule top_residual", self.top_residual) <= 1.0:
            raise InputError(f"StopRule top_residual must be between 0 and 1, got {self.top_residual!r}")
        if self.top_k is not None:
            check_int("StopRule top_k", self.top_k, 1)
        if self.top_k is not None and self.top_residual is None:
            raise InputError("StopRule: top_k goes with top_residual")
        if self.leader is not None:
            check_choice("StopRule leader", self.leader, STOP_LEADERS)

    def reason(self, selector: Any) -> str | None:
        """Why judging should stop now (a sentence), or None to go on; ``selector`` is a
        :class:`~pyterrier_noise.selection.JudgmentSelector`."""
        S = selector.n_runs
        base_q = selector.judged_base
        mass_q = selector.judged_mass
        resid_q = np.maximum(1.0 - mass_q, 0.0)
        base, resid = base_q.mean(axis=1), resid_q.mean(axis=1)
        lead = np.lexsort((np.arange(S), -(base + resid / 2.0)))   # by midpoint, ties by run order
        if self.top_residual is not None:
            k = min(S, self.top_k if self.top_k is not None else max(2, int(round(S / 3))))
            r = float(resid[lead[:k]].mean())
            if r <= self.top_residual:
                return (f"the mean residual of the top {k} runs by midpoint is {r:.4g} <= {self.top_residual:g} "
                        f"(RBP p={selector.p:g})")
        if self.leader is not None and S > 1:
            best, others = lead[0], lead[1:]
            if self.leader == "upper":
                bound = base[others] + resid[others]
            else:
                bound = _proj_fallback(base_q, resid_q, _projection(base_q, mass_q)).mean(axis=1)[others]
            if (base[best] > bound).all():
                return (f"run {selector.run_names[best]!r} leads by midpoint and its base {base[best]:.4g} is above "
                        f"every other run's {self.leader} value (at most {float(bound.max()):.4g}; RBP p={selector.p:g})")
        return None


