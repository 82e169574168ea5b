"""Experiments over replicate judgments: robustness, phi matching, pool depth and AP bounds.

============== ==================================================================================
``robustness`` :func:`robustness_experiment`: ``pt.Experiment`` over perturbed replicate qrels
``result``     :class:`RobustnessResult`: its analyses (rankings, conclusions, reverse protocol)
``plots``      :func:`plot_distributions`, :func:`plot_ranks` of a robustness result
``phi_match``  :func:`match_phi`: the RBP persistence most like AP / nDCG, and its residual
``depth``      Depth@k reduced qrels and :func:`depth_experiment` (Yang 2019, Ch. 4)
``bounds``     :func:`ap_bounds`: exact AP range over the completions of unjudged documents
``assessors``  :func:`simulation_fidelity`, :func:`assessor_significance` (Webber et al. 2012)
``stability``  :func:`ordering_agreement`, :func:`compare_stability`, :func:`consensus_similarity`
``ancova``     :func:`depth_ancova` (Yang 2019, Table 4.9)
``overlap``    :func:`judgment_overlap` (Moffat, Webber and Zobel 2007, Table 3)
``versions``   :func:`versions_experiment`: ``pt.Experiment`` over several label versions
============== ==================================================================================
"""
from __future__ import annotations

from .._lazy import attach

# the modules are imported on first use: the robustness command needs neither the depth
# experiments (scipy.stats, statsmodels) nor phi matching
__getattr__, __dir__, __all__ = attach(__name__, {
    # robustness of conclusions under judging error
    "robustness": "PerturbationModel robustness_experiment RobustnessExperiment",
    "result": "RobustnessResult DEFAULT_P_BANDS CONCLUSIONS",
    "_common": "RBO_P",
    "plots": "plot_distributions plot_ranks",
    # phi matching
    "phi_match": "DEFAULT_GRID FINE_GRID DEPTH_GRID CORRELATIONS phi_grid PhiMatch match_phi match_phi_many "
                 "plot_phi_match scores_with_residuals add_residual_columns",
    # exact AP bounds
    "bounds": "MAX_UNJUDGED APBounds ap_bounds",
    # pool depth
    "depth": "pool_entry_depth pool_multiplicity multiplicity_table depth_labels DepthExperiment depth_experiment "
             "unjudged_depth",
    # fidelity of simulated assessors
    "assessors": "SimulationFidelity simulation_fidelity AssessorSignificance assessor_significance",
    # stability of orderings (Rashidi, Zobel and Moffat 2023)
    "stability": "PAPER_RBO ordering_agreement compare_stability consensus_run consensus_similarity",
    # pool depth: ANCOVA (Yang 2019); judgment-set overlap (Moffat et al. 2007)
    "ancova": "depth_ancova",
    "overlap": "judgment_overlap",
    # label versions: whose judgments? (agreement tables, judgment noise, noise floor)
    "versions": "UNJUDGED_POLICIES VersionsResult versions_experiment VersionsExperiment",
    "version_noise": "judgment_noise noise_floor",
}, submodules=("ancova", "assessors", "bounds", "depth", "overlap", "phi_match", "plots", "result", "robustness",
               "stability", "versions", "version_agreement", "version_noise"))
