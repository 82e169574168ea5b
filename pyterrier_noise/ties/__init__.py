"""Tied scores: banding, rounding and tie-breaking transformers, tie statistics, worst cases and
the brute-force reference over orderings (Yang 2019 thesis, Ch. 3)."""
from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "transformers": "TieBanding ScoreRounding TieBreaker TIE_BREAK_STRATEGIES",
    "banding": "band_boundaries first_multi_doc_band worst_case_delta_rr worst_case_delta_rbp worst_case_table "
               "rho_label BAND_ORDERS",
    "rounding": "round_scores",
    "stats": "tie_stats TieStats tie_stats_in_chunks combine_tie_stats PRECISIONS",
    "expected": "expected_by_enumeration TieRange MAX_ORDERINGS",
})
