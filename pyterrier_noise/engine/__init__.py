"""The aligned engine: runs aligned to a judgment table once, every measure value computed here.

Modules: :mod:`.spec` (MeasureSpec and the constants), :mod:`.registry` (the kernel registry: one
kernel per measure family), :mod:`.table` (JudgmentTable), :mod:`.kernels` (the kernels, tie
handling included), :mod:`.align` (AlignedRuns: building and evaluating) and :mod:`.chunked` (run
files a chunk of files at a time).
"""
from .._lazy import attach
from . import kernels  # noqa: F401  (registers every kernel: MeasureSpec.validate looks its family up)

__getattr__, __dir__, __all__ = attach(__name__, {
    "spec": "TIE_POLICIES GROUPED_POLICIES CWL_DEPTH MeasureSpec",
    "registry": "Kernel KERNELS kernel_for register_kernel",
    "table": "JudgmentTable TOPICS_ATTR qrels_topics declare_topics",
    "kernels": "gains rbp_weights position_weights inst_utility evaluate_tied expected_ap INST_MAX_ORDERINGS MODES",
    "align": "are_run_paths AlignedRuns",
    "chunked": "evaluate_in_chunks file_chunks table_with_unjudged",
})
