"""Judge-error models: seeded replicate qrels from flips, disagreement models, confusion judges and pool reductions.

Each model turns one set of judgments into many *replicates* -- versions of the qrels that a
different (noisier, shallower, sparser) judging process could have produced: a
``(n_judgments, n_replicates)`` label matrix over the rows of a JudgmentTable (``NaN`` =
unjudged) that ``AlignedRuns.evaluate`` scores for every run, topic and replicate at once.

* :mod:`.flips` -- :class:`RandomFlips` (Li & Smucker 2014; Rashidi, Zobel & Moffat 2023,
  Sec. 3.1) and :class:`RankBiasedFlips` (Rashidi et al. 2023, Eq. 1, Figs 2-3), with
  :func:`sdt_rates` / :func:`sdt_params`; :mod:`.metaap` (meta-AP, Aslam et
  al. 2005) and :mod:`.sampling` (weighted subsets, Rashidi et al. 2023, Fig. 3) serve them;
* :mod:`.disagreement` -- :class:`FlipRateModel`, :class:`MetarankLogisticModel` and
  :func:`sample_for_dual_assessment` (Webber et al. 2012, Sec. 3.2-3.3); :mod:`.predictors` --
  :func:`compare_predictors` (their Eq. 2 and Table 3), with :func:`metarank`'s predictors;
* :mod:`.confusion` -- :class:`ConfusionJudge` (Goldberg et al. 2017, Table 1, Sec. 4.1);
* :mod:`.pools` -- :class:`PoolDepthReduction` (Yang 2019, Sec. 4.6), :class:`RandomRemoval`;
* :mod:`.base` -- :class:`JudgmentPerturbation` (the three forms every model offers) and
  :class:`Chain`; :mod:`.replicates` -- :class:`ReplicateSet`;
* :mod:`.stream` -- the one seeded random scheme, and what a replicate depends on;
* :mod:`.llm` -- :class:`LLMJudge`, an LLM relevance judge over any OpenAI-compatible endpoint (UMBRELA's
  prompt, Upadhyay et al. 2024), with its durable answer cache (:class:`LabelCache`).
"""
from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    ".._warnings": "PerturbationWarning",
    "flips": "JUDGES WEBBER_TREC6 sdt_rates sdt_params RandomFlips RankBiasedFlips",
    "metaap": "META_AP_DEPTH RUN_ORDERS PREDICTORS meta_ap_weight meta_ap metarank",
    "sampling": "inclusion_probabilities weighted_subset",
    "replicates": "ReplicateSet",
    "base": "JudgmentPerturbation Chain",
    "disagreement": "FlipRateModel MetarankLogisticModel sample_for_dual_assessment",
    "confusion": "ConfusionJudge",
    "pools": "PoolDepthReduction RandomRemoval deeply_judged_runs",
    "predictors": "compare_predictors",
    "llm": "LLMJudge LLMJudgeResult LabelCache PromptTemplate",
})
