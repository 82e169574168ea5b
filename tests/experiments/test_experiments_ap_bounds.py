"""Tests for pyterrier_noise.experiments.ap_bounds: exact AP bounds (Yang 2019 thesis Sec. 4.1).

Reference values: the worked AP example of thesis Sec. 4.1 (seed004b Sec. 1.2), checked against
brute force.
"""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from pyterrier_noise import InputError
from pyterrier_noise.experiments import MAX_UNJUDGED, ap_bounds


# ---------------------------------------------------------------------------------------------
# exact AP bounds

def _ap(rels, R):
    """AP of a fully judged binary ranking with R relevant documents in the collection (trec_eval)."""
    hits, total = 0, Fraction(0)
    for i, r in enumerate(rels, start=1):
        if r:
            hits += 1
            total += Fraction(hits, i)
    return total / R if R else Fraction(0)


def test_ap_bounds_thesis_example():
    # Yang (2019) Sec. 4.1: ranking 1, 0, ?, 1, ?; only these five documents; R = 2 known
    b = ap_bounds([1, 0, None, 1, None])
    assert b.current == pytest.approx(0.75)
    # completion i: bit j = j-th unjudged document (ranks 3, 5) relevant
    assert b.values[0] == pytest.approx(0.75)
    assert b.values[1] == pytest.approx(float(Fraction(29, 36)))      # (1 + 2/3 + 3/4)/3 = 0.8056
    assert b.values[2] == pytest.approx(0.70)                         # (1 + 2/4 + 3/5)/3
    assert b.values[3] == pytest.approx(float(Fraction(193, 240)))    # (1 + 2/3 + 3/4 + 4/5)/4 = 0.8042
    assert [round(v, 2) for v in b.values[1:]] == [0.81, 0.70, 0.80]  # as the issue quotes them
    assert b.low == pytest.approx(0.70) and b.high == pytest.approx(float(Fraction(29, 36)))
    assert b.low_completion.tolist() == [False, True]
    assert b.high_completion.tolist() == [True, False]
    assert b.unjudged_ranks.tolist() == [3, 5]
    # NaN marks unjudged as well as None
    assert ap_bounds([1, 0, np.nan, 1, np.nan]).values == pytest.approx(b.values)


def test_ap_bounds_outside_documents_only_lower_the_minimum():
    b = ap_bounds([1, 0, None, 1, None], n_unjudged_outside=3)
    assert b.high == pytest.approx(float(Fraction(29, 36)))
    # minimum: every unjudged document relevant, in and outside the ranking
    brute = min(float(_ap([1, 0, a, 1, c], 2 + a + c + 3)) for a in (0, 1) for c in (0, 1))
    assert b.low == pytest.approx(brute)


@settings(max_examples=60, deadline=None)
@given(hst.lists(hst.sampled_from([0, 1, 2, None]), min_size=1, max_size=12),
       hst.integers(0, 3), hst.integers(0, 2))
def test_ap_bounds_match_brute_force(labels, extra_R, outside):
    labels = labels[:]
    unj = [i for i, v in enumerate(labels) if v is None]
    if len(unj) > 8:
        return
    known = sum(1 for v in labels if v is not None and v >= 1)
    R = known + extra_R
    b = ap_bounds(labels, n_relevant=R, n_unjudged_outside=outside)
    values, lows = [], []
    for bits in itertools.product([0, 1], repeat=len(unj)):          # loop over completions (reference)
        rels = [(v is not None and v >= 1) for v in labels]
        for pos, bit in zip(unj, reversed(bits)):                     # itertools: last bit varies fastest
            rels[pos] = bool(bit)
        k = sum(bits)
        values.append(float(_ap(rels, R + k)))
        lows.append(float(_ap(rels, R + k + outside)))
    # (the order of completions is checked in test_ap_bounds_completion_order)
    assert np.sort(b.values) == pytest.approx(np.sort(values))
    assert b.high == pytest.approx(max(values))
    assert b.low == pytest.approx(min(lows))
    assert b.current == pytest.approx(float(_ap([(v is not None and v >= 1) for v in labels], R)))
    assert b.values[0] == pytest.approx(b.current)           # completion 0: every unjudged non-relevant
    if outside == 0:
        assert b.low - 1e-12 <= b.current <= b.high + 1e-12


def test_ap_bounds_completion_order():
    b = ap_bounds([None, 1, None, None])
    for i in range(8):
        rels = [bool(i & 1), True, bool(i & 2), bool(i & 4)]
        assert b.values[i] == pytest.approx(float(_ap(rels, sum(rels))))


def test_ap_bounds_refuses_too_many_unjudged():
    with pytest.raises(InputError, match=r"2\^21 completions"):
        ap_bounds([None] * (MAX_UNJUDGED + 1) + [1])
    with pytest.raises(InputError, match="more than the limit of 3"):
        ap_bounds([1, None, None, None, None], max_unjudged=3)
    assert ap_bounds([1, None, None, None], max_unjudged=3).high == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(labels=["x", 1]), r"labels\[0\]"),
    (dict(labels=[]), "non-empty"),
    (dict(labels=[1, np.inf]), r"labels\[1\] is infinite"),
    (dict(labels=[1, 1, 0], n_relevant=1), "n_relevant must be an integer >= 2"),
    (dict(labels=[1, None], n_unjudged_outside=-1), "n_unjudged_outside"),
    (dict(labels=[1, None], max_unjudged=0), "max_unjudged"),
])
def test_ap_bounds_bad_input(kwargs, message):
    labels = kwargs.pop("labels")
    with pytest.raises(InputError, match=message):
        ap_bounds(labels, **kwargs)


def test_ap_bounds_nothing_relevant():
    b = ap_bounds([0, None, 0])
    assert b.current == 0.0 and b.low == 0.0 and b.high == pytest.approx(0.5)


# ---------------------------------------------------------------------------------------------
