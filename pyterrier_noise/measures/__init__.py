"""ir_measures measures (RBP / INST / INSQ with residuals, trec_eval's measures under tie
policies), the capability table of every measure the engine computes, measure parsing, the
ir_measures provider and evaluate().

Modules: :mod:`.base` (NoiseMeasure, parameter checks), :mod:`.rbp`, :mod:`.cwl` and :mod:`.ties`
(the package's measures, one class each), :mod:`.table` (the capability table), :mod:`.parse`
(:func:`parse_measure`, :func:`to_spec`), :mod:`.provider` (the ir_measures provider and
:func:`register`) and :mod:`.evaluate` (:func:`evaluate`, :func:`with_residuals`).
Importing this subpackage registers the measures with ir_measures (idempotent).
"""
from .._lazy import attach
from .provider import register

__getattr__, __dir__, __all__ = attach(__name__, {
    "rbp": "RBPBase RBPResidual RBPUpper RBPProjected",
    "cwl": "INSTBase INSTResidual INSTUpper INSQBase INSQResidual INSQUpper",
    "ties": "APTies nDCGTies PTies RRTies TIE_AWARE",
    "base": "NoiseMeasure check_params",
    "table": "CAPABILITIES Capability",
    "parse": "parse_measure to_spec",
    "evaluation": "evaluate with_residuals evaluate_arrays EvaluationArrays judgment_table check_judgments",
    "provider": "NoiseProvider NoiseEvaluator PROVIDER ALL_MEASURES register",
})

register()
