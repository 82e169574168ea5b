"""Helpers shared by the tests of :mod:`pyterrier_noise.crowd` (tests/test_crowd_*.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from pyterrier_noise.crowd import aggregate


def rows(*items, **const):
    """Judgment frame from (left, right, preferred, absolute, ratio_left, ratio_right) tuples."""
    cols = ["left", "right", "preferred", "absolute", "ratio_left", "ratio_right"]
    f = pd.DataFrame([dict(zip(cols, it)) for it in items])
    for c in cols:
        if c not in f:
            f[c] = np.nan
    f.insert(0, "qid", const.get("qid", "1"))
    f.insert(1, "worker", const.get("worker", "w1"))
    return f


def scores_of(frame, method, **kw):
    q = aggregate(frame, method, **kw)
    return dict(zip(q["docno"], q["label"]))
