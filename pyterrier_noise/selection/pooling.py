"""Static judgment lists made before any judging: depth-k pools and RBP-weighted pools (Moffat,
Webber & Zobel 2007, Sec. 3)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .._validation import check_choice, check_int
from .._vocab import SELECTION_METHODS, SelectionMethod, SelectionTieBreak
from .selector import JudgmentSelector

__all__ = ["depth_pool", "rbp_pool"]


def depth_pool(runs: Any, depth: int, p: float = 0.8, pool_runs: Sequence[str] | None = None) -> pd.DataFrame:
    """Depth-k pooling: every document some run ranks in its top ``depth``, in pooling order (depth,
    then run order, then qid, then docno).  Columns ``order, qid, docno, depth, weight`` where
    ``weight = (1-p) p^(depth-1)`` (Moffat et al. 2007, Sec. 3, "pooling")."""
    check_int("depth", depth)
    q = JudgmentSelector(runs, p=p, method="pool", pool_runs=pool_runs).queue()
    q = q[q["depth"].to_numpy() <= depth].reset_index(drop=True)
    q.insert(0, "order", np.arange(1, len(q) + 1))
    return q


def rbp_pool(runs: Any, budget: int, p: float = 0.8, method: SelectionMethod = "A", per_topic_quota: Any = None,
             tie_break: SelectionTieBreak = "deterministic", seed: int = 0, pool_runs: Sequence[str] | None = None,
             residual_scope: str = "query") -> pd.DataFrame:
    """A static judgment list of ``budget`` documents by pooling, Method A or Method B, made before
    any judging (Method B is greedy but never needs a label: Moffat et al. 2007, Sec. 3).
    Columns ``order, qid, docno, weight``.  Method C needs labels: use :func:`simulate` or a
    :class:`JudgmentSelector`."""
    check_choice("method", method, SELECTION_METHODS[:3])
    check_int("budget", budget, 0)
    sel = JudgmentSelector(runs, p=p, method=method, per_topic_quota=per_topic_quota, tie_break=tie_break,
                           seed=seed, pool_runs=pool_runs, residual_scope=residual_scope)
    if method in ("pool", "A"):
        q = sel.queue().iloc[:int(budget)]
        qid, docno, w = q["qid"].to_numpy(), q["docno"].to_numpy(), q["weight"].to_numpy()
    else:
        while sel.n_judged < budget:   # Method B is greedy but ignores labels: record each as 0
            prop = sel.propose(1)
            if not prop:
                break
            sel.record(prop[0][0], prop[0][1], 0.0)
        h = sel.history
        qid, docno, w = h["qid"].to_numpy(), h["docno"].to_numpy(), h["weight"].to_numpy()
    return pd.DataFrame({"order": np.arange(1, len(qid) + 1), "qid": qid, "docno": docno,
                         "weight": np.asarray(w, dtype=np.float64)})
