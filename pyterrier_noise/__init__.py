"""pyterrier-noise: honest IR evaluation for PyTerrier.

How far can incomplete judgments, noisy judges and tied scores move your scores and your
conclusions?  The package gives RBP with base / residual / upper / projected values and INST /
INSQ with residuals as ir_measures measures that work in ``pt.Experiment``, a fast aligned
evaluation engine (align runs to qrels once, evaluate any number of judgment versions), readers
for every run and qrels format of the ecosystem, and a command line (``pyterrier-noise``).

After ``import pyterrier as pt`` the package is also available as ``pt.noise``.
"""
from .engine import AlignedRuns, JudgmentTable, MeasureSpec, TIE_POLICIES
from .errors import CoercionWarning, InputError
from .io import read_qrels, read_run, read_runs, read_trec_qrels, read_trec_run, write_trec_qrels, write_trec_run
from .measures import (INSQBase, INSQResidual, INSQUpper, INSTBase, INSTResidual, INSTUpper, RBPBase,
                       RBPProjected, RBPResidual, RBPUpper, evaluate, to_spec, with_residuals)

__version__ = "0.1.0"

__all__ = [
    "AlignedRuns", "JudgmentTable", "MeasureSpec", "TIE_POLICIES",
    "CoercionWarning", "InputError",
    "read_qrels", "read_run", "read_runs", "read_trec_qrels", "read_trec_run", "write_trec_qrels", "write_trec_run",
    "RBPBase", "RBPResidual", "RBPUpper", "RBPProjected", "INSTBase", "INSTResidual", "INSTUpper",
    "INSQBase", "INSQResidual", "INSQUpper", "evaluate", "to_spec", "with_residuals",
]
