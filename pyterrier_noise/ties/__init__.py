"""Tied scores: banding, rounding and tie-breaking transformers, tie statistics, worst cases and
the brute-force reference over orderings (Yang 2019 thesis, Ch. 3)."""
from .banding import (BAND_ORDER_ALIASES, BAND_ORDERS, band_boundaries, first_multi_doc_band, rho_label,
                      worst_case_delta_rbp, worst_case_delta_rr, worst_case_table)
from .expected import MAX_ORDERINGS, TieRange, expected_by_enumeration
from .rounding import round_scores
from .stats import PRECISIONS, TieStats, tie_stats, tie_stats_in_chunks
from .transformers import TIE_BREAK_ALIASES, TIE_BREAK_STRATEGIES, ScoreRounding, TieBanding, TieBreaker

__all__ = [
    "TieBanding", "ScoreRounding", "TieBreaker", "TIE_BREAK_STRATEGIES", "TIE_BREAK_ALIASES",
    "band_boundaries", "first_multi_doc_band", "worst_case_delta_rr", "worst_case_delta_rbp", "worst_case_table",
    "rho_label", "BAND_ORDERS", "BAND_ORDER_ALIASES",
    "round_scores",
    "tie_stats", "TieStats", "tie_stats_in_chunks", "PRECISIONS",
    "expected_by_enumeration", "TieRange", "MAX_ORDERINGS",
]
