"""The aligned engine: runs aligned to a judgment table once, every measure value computed here.

Modules: :mod:`.spec` (MeasureSpec and the constants), :mod:`.registry` (the kernel registry: one
kernel per measure family), :mod:`.table` (JudgmentTable), :mod:`.kernels` (the kernels, tie
handling included) and :mod:`.align` (AlignedRuns: building and evaluating).
"""
from .spec import (TIE_POLICIES, GROUPED_POLICIES, CWL_DEPTH, MeasureSpec)
from .registry import Kernel, KERNELS, kernel_for, register_kernel
from .table import JudgmentTable, TOPICS_ATTR, qrels_topics, declare_topics
from .kernels import (gains, rbp_weights, position_weights, inst_utility, evaluate_tied, expected_ap,
                      INST_MAX_ORDERINGS, MODES)
from .align import (are_run_paths, AlignedRuns)

__all__ = ['TIE_POLICIES', 'GROUPED_POLICIES', 'CWL_DEPTH', 'are_run_paths', 'inst_utility', 'MeasureSpec',
           'Kernel', 'KERNELS', 'kernel_for', 'register_kernel',
           'JudgmentTable', 'TOPICS_ATTR', 'qrels_topics', 'declare_topics', 'gains', 'rbp_weights', 'position_weights',
           'AlignedRuns', 'evaluate_tied', 'expected_ap', 'INST_MAX_ORDERINGS', 'MODES']
