"""Where the judge-error models lived before the split (kept for one release).

Import from :mod:`pyterrier_noise.judges` instead; every name here is the same object as there.
"""
from . import (JUDGES, META_AP_DEPTH, RUN_ORDERS, WEBBER_TREC6, Chain, ConfusionJudge,  # noqa: F401
               FlipRateModel, JudgmentPerturbation, MetarankLogisticModel, PerturbationWarning, PoolDepthReduction,
               RandomFlips, RandomRemoval, RankBiasedFlips, ReplicateSet, deeply_judged_runs,
               inclusion_probabilities, meta_ap, meta_ap_weight, sample_for_dual_assessment, sdt_params, sdt_rates,
               weighted_subset)
from . import __all__  # noqa: F401
