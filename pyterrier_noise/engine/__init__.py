"""The aligned engine: runs aligned to a judgment table once, every measure value computed here."""
from .align import (TIE_POLICIES, GROUPED_POLICIES, NONLINEAR, CWL_DEPTH, are_run_paths, inst_utility, MeasureSpec, JudgmentTable, gains, rbp_weights, position_weights, AlignedRuns)
from .tie_kernels import (evaluate_tied, expected_ap, INST_MAX_ORDERINGS, MODES)

__all__ = ['TIE_POLICIES', 'GROUPED_POLICIES', 'NONLINEAR', 'CWL_DEPTH', 'are_run_paths', 'inst_utility', 'MeasureSpec', 'JudgmentTable', 'gains', 'rbp_weights', 'position_weights', 'AlignedRuns', 'evaluate_tied', 'expected_ap', 'INST_MAX_ORDERINGS', 'MODES']
