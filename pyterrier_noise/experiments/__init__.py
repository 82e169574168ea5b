"""Experiments over replicate judgments: robustness, phi matching, depth and AP bounds."""
from .robustness import (PerturbationModel, RobustnessResult, robustness_experiment, RobustnessExperiment, DEFAULT_P_BANDS, CONCLUSIONS)
from .uncertainty import (DEFAULT_GRID, FINE_GRID, DEPTH_GRID, MAX_UNJUDGED, PhiMatch, match_phi, match_phi_many, plot_phi_match, scores_with_residuals, add_residual_columns, APBounds, ap_bounds, pool_entry_depth, pool_multiplicity, multiplicity_table, depth_labels, DepthExperiment, depth_experiment)

__all__ = ['PerturbationModel', 'RobustnessResult', 'robustness_experiment', 'RobustnessExperiment', 'DEFAULT_P_BANDS', 'CONCLUSIONS', 'DEFAULT_GRID', 'FINE_GRID', 'DEPTH_GRID', 'MAX_UNJUDGED', 'PhiMatch', 'match_phi', 'match_phi_many', 'plot_phi_match', 'scores_with_residuals', 'add_residual_columns', 'APBounds', 'ap_bounds', 'pool_entry_depth', 'pool_multiplicity', 'multiplicity_table', 'depth_labels', 'DepthExperiment', 'depth_experiment']
