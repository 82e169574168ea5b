"""pyterrier-noise: honest IR evaluation for PyTerrier.

How far can incomplete judgments, noisy judges and tied scores move your scores and your
conclusions, and which documents should you judge next?  One subpackage per capability:

=============== ===============================================================================
``io``          readers and writers of runs and qrels
``engine``      runs aligned to the judgments once; every measure value is computed here
``measures``    RBP / INST / INSQ with residuals as ir_measures measures; ``evaluate``
``judges``      judge-error models that draw seeded replicate qrels
``experiments`` robustness of conclusions, phi matching, depth experiments, AP bounds
``selection``   which documents to judge next, oracles and durable judging sessions
``correction``  noisy-judge metric correction (Goldberg et al. 2017)
``ties``        tie banding, rounding and breaking; tie statistics
``stats``       significance tests, corrections, intervals, rank agreement
``crowd``       pairwise crowd judgments
``report``      the HTML report and its figures
``web``         judging in the browser: several assessors over one durable session
=============== ===============================================================================

The user-facing names are also at the top (``pyterrier_noise.RandomFlips``); constants and
specialist helpers are in their subpackage (``pyterrier_noise.experiments.DEFAULT_GRID``).  After
``import pyterrier as pt`` both are at ``pt.noise``.  Names and subpackages are imported on first use
(PEP 562, :mod:`._lazy`), so ``import pyterrier_noise`` stays quick.
"""
from __future__ import annotations

import importlib
import sys

from ._lazy import attach

__version__ = "0.2.0"

SUBPACKAGES = ("io", "engine", "measures", "judges", "experiments", "selection", "correction", "ties",
               "stats", "crowd", "report", "synthetic", "cli", "web", "reproduce")

# the user-facing names, by the subpackage that defines them (a test keeps this table in step with
# the subpackages' __all__ and docs/api.md); everything else is reached through its subpackage
__getattr__, __dir__, __all__ = attach(__name__, {
    "_validation": "InputError",
    "_warnings": "NoiseWarning",
    "io": "read_qrels read_run read_runs write_trec_qrels write_trec_run",
    "engine": "AlignedRuns MeasureSpec",
    "measures": "evaluate RBPBase RBPResidual RBPUpper RBPProjected INSTBase INSTResidual INSTUpper "
                "INSQBase INSQResidual INSQUpper APTies nDCGTies PTies RRTies",
    "ties": "TieBanding ScoreRounding TieBreaker tie_stats",
    "judges": "RandomFlips RankBiasedFlips FlipRateModel MetarankLogisticModel ConfusionJudge "
              "PoolDepthReduction RandomRemoval Chain",
    "experiments": "robustness_experiment depth_experiment match_phi ap_bounds versions_experiment",
    "selection": "JudgmentSelector StopRule JudgingSession simulate",
    "correction": "JudgeCalibration correct_experiment cheap_experiment",
    "report": "Report write_report",
}, submodules=SUBPACKAGES)

if "ir_measures" in sys.modules:
    # ir_measures is in use (PyTerrier imports it): make the package's measure names known to
    # ir_measures.parse_measure and pt.Experiment, as importing pyterrier_noise.measures does
    importlib.import_module(f"{__name__}.measures")
