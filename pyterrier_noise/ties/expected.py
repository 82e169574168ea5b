"""Brute-force expected, minimum and maximum of a metric over the orderings of tied groups
(Yang 2019 thesis, Sec. 3.1): the reference for the closed forms of the evaluation engine."""
from __future__ import annotations

import itertools
import math
from typing import Callable, NamedTuple, Sequence

import numpy as np
import pandas as pd

from .._validation import InputError
from ._frames import _codes

__all__ = ["MAX_ORDERINGS", "TieRange", "expected_by_enumeration"]

#: :func:`expected_by_enumeration` refuses inputs with more orderings than this by default
#: (8! = 40,320 fits; a run with two tied groups of 6 has 518,400 and does not).
MAX_ORDERINGS = 100_000


class TieRange(NamedTuple):
    """Expected value (uniform over orderings), minimum and maximum of a metric over the orderings
    of tied groups (Yang 2019 thesis, Sec. 3.1: averaging across permutations; optimistic and
    pessimistic limits)."""

    expected: float
    minimum: float
    maximum: float


def expected_by_enumeration(gains_in_ranked_order: Sequence[float] | np.ndarray,
                            group_ids: Sequence[object] | np.ndarray,
                            metric_fn: Callable[[np.ndarray], float], *,
                            limit: int = MAX_ORDERINGS, vectorized: bool = False) -> TieRange:
    """Expected, minimum and maximum of a metric over every ordering within tied groups, by brute force.

    Yang (2019) thesis, Sec. 3.1 ("averaging across permutations": every ordering of every tied
    group equally likely; ``prod_g l_g!`` orderings).  This is the slow, obviously correct
    reference for closed forms such as McSherry & Najork's (exact expected AP 0.536323 on thesis
    Table 3.1, where the thesis's eq. 3.3 gives 0.488668).

    Args:
        gains_in_ranked_order: gain of the document at each rank, rank 1 first.
        group_ids: tie-group label of each rank; equal labels must be contiguous (a group of
            tied scores occupies consecutive ranks).  The scores themselves work as labels.
        metric_fn: maps one ordering's gain vector (rank 1 first) to a number; with
            ``vectorized=True`` it maps an ``(n_orderings, n)`` matrix to ``n_orderings`` numbers.
        limit: refuse (InputError) inputs with more than this many orderings (default
            :data:`MAX_ORDERINGS` = 100,000).

    Returns:
        ``TieRange(expected, minimum, maximum)``.
    """
    gains = np.asarray(gains_in_ranked_order, dtype=np.float64)
    ids = np.asarray(group_ids, dtype=object) if not isinstance(group_ids, np.ndarray) else group_ids
    if gains.ndim != 1 or ids.ndim != 1:
        raise InputError("gains_in_ranked_order and group_ids must be one-dimensional")
    if len(gains) != len(ids):
        raise InputError(f"gains_in_ranked_order has {len(gains)} values but group_ids has {len(ids)}; "
                         f"expected one group id per rank")
    if len(gains) == 0:
        raise InputError("gains_in_ranked_order is empty; expected at least one ranked document")
    if not np.isfinite(gains).all():
        i = int(np.flatnonzero(~np.isfinite(gains))[0])
        raise InputError(f"gains_in_ranked_order[{i}] is {gains[i]}; expected finite gains")
    if not callable(metric_fn):
        raise InputError(f"metric_fn must be callable, got {metric_fn!r}")
    codes = _codes(pd.Series(ids))
    new = np.ones(len(codes), dtype=bool)
    new[1:] = codes[1:] != codes[:-1]
    starts = np.flatnonzero(new)
    if len(starts) != codes.max() + 1:
        seen = pd.Series(codes[starts]).duplicated().to_numpy()
        bad = starts[int(np.flatnonzero(seen)[0])]
        raise InputError(f"group_ids[{bad}] = {ids[bad]!r} starts a second run of ranks for the same group; "
                         f"expected each tied group to occupy consecutive ranks")
    lengths = np.diff(np.append(starts, len(codes)))
    n_orderings = math.prod(math.factorial(int(n)) for n in lengths)
    if n_orderings > limit:
        raise InputError(f"{n_orderings:,} orderings (group sizes {sorted(lengths.tolist(), reverse=True)[:5]}...) "
                         f"exceed limit={limit:,}; brute force is meant for small examples -- use the closed forms "
                         f"or raise limit")
    # all orderings as a matrix of position indices: the Cartesian product of each group's
    # permutations (itertools over one group at a time; this is the brute force by design)
    index = np.zeros((1, 0), dtype=np.int64)
    for b, n in zip(starts, lengths):
        perms = np.asarray(list(itertools.permutations(range(b, b + n))), dtype=np.int64)
        index = np.hstack([np.repeat(index, len(perms), axis=0), np.tile(perms, (len(index), 1))])
    matrix = gains[index]
    if vectorized:
        values = np.asarray(metric_fn(matrix), dtype=np.float64).reshape(-1)
        if len(values) != n_orderings:
            raise InputError(f"metric_fn returned {len(values)} values for {n_orderings} orderings")
    else:
        values = np.fromiter((metric_fn(row) for row in matrix), dtype=np.float64, count=n_orderings)
    return TieRange(math.fsum(values) / n_orderings, float(values.min()), float(values.max()))


