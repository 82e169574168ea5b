"""Experiments over replicate judgments: robustness, phi matching, pool depth and AP bounds.

============== ==================================================================================
``robustness`` :func:`robustness_experiment`: ``pt.Experiment`` over perturbed replicate qrels
``result``     :class:`RobustnessResult`: its analyses (rankings, conclusions, reverse protocol)
``plots``      :func:`plot_distributions`, :func:`plot_ranks` of a robustness result
``phi_match``  :func:`match_phi`: the RBP persistence most like AP / nDCG, and its residual
``depth``      Depth@k reduced qrels and :func:`depth_experiment` (Yang 2019, Ch. 4)
``ap_bounds``  :func:`ap_bounds`: exact AP range over the completions of unjudged documents
``assessors``  :func:`simulation_fidelity`, :func:`assessor_significance` (Webber et al. 2012)
``stability``  :func:`ordering_agreement`, :func:`compare_stability`, :func:`consensus_similarity`
``ancova``     :func:`depth_ancova` (Yang 2019, Table 4.9)
``overlap``    :func:`judgment_overlap` (Moffat, Webber and Zobel 2007, Table 3)
``versions``   :func:`versions_experiment`: ``pt.Experiment`` over several label versions
============== ==================================================================================
"""
from __future__ import annotations

import importlib
from typing import Any

# public name -> the module of this package that defines it.  The modules are imported on first
# use (PEP 562): the robustness command needs neither the depth experiments (scipy.stats,
# statsmodels) nor phi matching, so importing this package costs only what is used.
_WHERE: dict[str, str] = {}
for _module, _names in {
    "_common": "RBO_P",
    "ancova": "depth_ancova",
    "assessors": "AssessorSignificance SimulationFidelity assessor_significance simulation_fidelity",
    "depth": "DepthExperiment depth_experiment depth_labels multiplicity_table pool_entry_depth "
             "pool_multiplicity unjudged_depth",
    "overlap": "judgment_overlap",
    "phi_match": "CORRELATIONS DEFAULT_GRID DEPTH_GRID FINE_GRID PhiMatch add_residual_columns match_phi "
                 "match_phi_many phi_grid plot_phi_match scores_with_residuals",
    "plots": "plot_distributions plot_ranks",
    "result": "CONCLUSIONS DEFAULT_P_BANDS RobustnessResult",
    "robustness": "PerturbationModel RobustnessExperiment robustness_experiment",
    "stability": "PAPER_RBO compare_stability consensus_run consensus_similarity ordering_agreement",
    "versions": "UNJUDGED_POLICIES VersionsExperiment VersionsResult versions_experiment",
    "version_noise": "judgment_noise noise_floor",
}.items():
    for _name in _names.split():
        _WHERE[_name] = _module
del _module, _names, _name
# the function ap_bounds shares its module's name: imported at once (numpy only), so that
# ``experiments.ap_bounds`` is the function whichever module is imported first
from .ap_bounds import MAX_UNJUDGED, APBounds, ap_bounds  # noqa: E402

#: the modules, reachable as attributes (``experiments.depth``) before anything imported them
_MODULES = ("ancova", "assessors", "depth", "overlap", "phi_match", "plots", "result", "robustness", "stability",
            "versions", "version_agreement", "version_noise")

__all__ = [
    # robustness of conclusions under judging error
    "PerturbationModel", "RobustnessResult", "robustness_experiment", "RobustnessExperiment",
    "DEFAULT_P_BANDS", "CONCLUSIONS", "RBO_P", "plot_distributions", "plot_ranks",
    # phi matching
    "DEFAULT_GRID", "FINE_GRID", "DEPTH_GRID", "CORRELATIONS", "phi_grid", "PhiMatch", "match_phi",
    "match_phi_many", "plot_phi_match", "scores_with_residuals", "add_residual_columns",
    # exact AP bounds
    "MAX_UNJUDGED", "APBounds", "ap_bounds",
    # pool depth
    "pool_entry_depth", "pool_multiplicity", "multiplicity_table", "depth_labels",
    "DepthExperiment", "depth_experiment",
    # fidelity of simulated assessors
    "SimulationFidelity", "simulation_fidelity", "AssessorSignificance", "assessor_significance",
    # stability of orderings (Rashidi, Zobel and Moffat 2023)
    "PAPER_RBO", "ordering_agreement", "compare_stability", "consensus_run", "consensus_similarity",
    # pool depth: ANCOVA and unjudged ranks (Yang 2019); judgment-set overlap (Moffat et al. 2007)
    "depth_ancova", "unjudged_depth", "judgment_overlap",
    # label versions: whose judgments? (agreement tables, judgment noise, noise floor)
    "UNJUDGED_POLICIES", "VersionsResult", "versions_experiment", "VersionsExperiment", "judgment_noise",
    "noise_floor",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
