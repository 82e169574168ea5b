"""Pairwise crowd judgments (Yang 2019 PhD thesis, ch. 5): reading, aggregation, quality, agreement, simulation.

Yang, Moffat & Turpin, "Pairwise Crowd Judgments: Preference, Absolute, and Ratio" (ADCS 2018);
Yang (2019) thesis, Ch. 5.

==================  ==========================================================================
module              what it holds
==================  ==========================================================================
``read``            :data:`COLUMNS`, :func:`read_pairwise` and its validators
``aggregation``     :func:`document_scores`, :func:`aggregate`, :func:`ratio_matrix_scores`,
                    :func:`to_categories` (preference / absolute / ratio / combined scores)
``quality``         transitivity and absolute inconsistency, gold accuracy, position bias,
                    :func:`worker_quality`, :func:`workers_path`
``agreement``       :func:`document_agreement`, :func:`document_tau`, :func:`judgment_alpha`,
                    :func:`system_agreement`
``simulate``        :func:`design_partitions`, :func:`simulate_crowd`
==================  ==========================================================================

"""
from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "read": "COLUMNS COLUMN_ALIASES read_pairwise",
    "aggregation": "METHODS document_scores aggregate ratio_matrix_scores to_categories",
    "quality": "transitivity_inconsistency absolute_inconsistency gold_accuracy position_bias PositionBias "
               "worker_quality workers_path",
    "agreement": "document_agreement document_tau judgment_alpha system_agreement SystemAgreement",
    "simulate": "design_partitions simulate_crowd",
})
