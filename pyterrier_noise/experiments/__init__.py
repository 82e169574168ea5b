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
============== ==================================================================================
"""
from ._common import RBO_P
from .ancova import depth_ancova
from .ap_bounds import MAX_UNJUDGED, APBounds, ap_bounds
from .assessors import AssessorSignificance, SimulationFidelity, assessor_significance, simulation_fidelity
from .depth import (DepthExperiment, depth_experiment, depth_labels, multiplicity_table, pool_entry_depth,
                    pool_multiplicity, unjudged_depth)
from .overlap import judgment_overlap
from .phi_match import (CORRELATIONS, DEFAULT_GRID, DEPTH_GRID, FINE_GRID, PhiMatch, add_residual_columns,
                        match_phi, match_phi_many, phi_grid, plot_phi_match, scores_with_residuals)
from .plots import plot_distributions, plot_ranks
from .result import CONCLUSIONS, DEFAULT_P_BANDS, RobustnessResult
from .robustness import PerturbationModel, RobustnessExperiment, robustness_experiment
from .stability import PAPER_RBO, compare_stability, consensus_run, consensus_similarity, ordering_agreement

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
]
