"""Tied scores: banding, rounding and tie-breaking transformers, tie statistics."""
from .transformers import (TieBanding, ScoreRounding, TieBreaker, band_boundaries, first_multi_doc_band, worst_case_delta_rr, worst_case_delta_rbp, worst_case_table, round_scores, tie_stats, TieStats, expected_by_enumeration, TieRange, MAX_ORDERINGS, tie_stats_in_chunks)

__all__ = ['TieBanding', 'ScoreRounding', 'TieBreaker', 'band_boundaries', 'first_multi_doc_band', 'worst_case_delta_rr', 'worst_case_delta_rbp', 'worst_case_table', 'round_scores', 'tie_stats', 'TieStats', 'expected_by_enumeration', 'TieRange', 'MAX_ORDERINGS', 'tie_stats_in_chunks']
