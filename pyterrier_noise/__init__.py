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
=============== ===============================================================================

Every public name is also at the top (``pyterrier_noise.RandomFlips``) and, after ``import
pyterrier as pt``, at ``pt.noise``.  Subpackages are imported on first use (PEP 562), so
``import pyterrier_noise`` stays quick.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

SUBPACKAGES = ("io", "engine", "measures", "judges", "experiments", "selection", "correction", "ties",
               "stats", "crowd", "report", "synthetic", "cli")

# public name -> the subpackage that defines it (kept in step with each subpackage's __all__ by a test)
_NAMES: dict[str, str] = {}


def _register(sub: str, names: str) -> None:
    for n in names.split():
        _NAMES[n] = sub


_register("_validation", "InputError")
_register("_warnings", "NoiseWarning CoercionWarning PerturbationWarning CorrectionWarning")
_register("io", "read_qrels read_run read_runs read_trec_qrels read_trec_run write_trec_qrels write_trec_run")
_register("engine", "AlignedRuns JudgmentTable MeasureSpec TIE_POLICIES")
_register("measures", "RBPBase RBPResidual RBPUpper RBPProjected INSTBase INSTResidual INSTUpper "
                      "INSQBase INSQResidual INSQUpper evaluate to_spec with_residuals")

# old flat module names -> where they live now (deprecated aliases, one release)
_OLD_MODULES = {"perturbation": "judges", "robustness": "experiments", "uncertainty": "experiments",
                "session": "selection", "tie_kernels": "engine", "pairwise": "crowd", "agreement": "stats",
                "errors": "_validation"}

__all__ = sorted(_NAMES)  # noqa: PLE0605 (built from the table above)


def __getattr__(name: str) -> Any:
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
        globals()[name] = value
        return value
    if name in _OLD_MODULES:
        from ._warnings import deprecated
        deprecated(f"pyterrier_noise.{name}", f"pyterrier_noise.{_OLD_MODULES[name]}")
        return importlib.import_module(f"{__name__}.{_OLD_MODULES[name]}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(SUBPACKAGES))
