"""ir_measures measures (RBP / INST / INSQ with residuals), the provider and evaluate().

Modules: :mod:`.classes` (the measure classes), :mod:`.provider` (the ir_measures provider and
:func:`register`) and :mod:`.evaluate` (:func:`evaluate`, :func:`to_spec`, :func:`with_residuals`).
Importing this subpackage registers the measures with ir_measures (idempotent).
"""
from .classes import (RBPBase, RBPResidual, RBPUpper, RBPProjected, INSTBase, INSTResidual, INSTUpper, INSQBase, INSQResidual, INSQUpper, APTies, nDCGTies, PTies, RRTies, TIE_AWARE, ALL_MEASURES, check_params)
from .evaluate import (with_residuals, to_spec, evaluate, evaluate_arrays, EvaluationArrays, judgment_table,
                       check_judgments)
from .provider import (NoiseProvider, NoiseEvaluator, PROVIDER, register)

register()

__all__ = ['RBPBase', 'RBPResidual', 'RBPUpper', 'RBPProjected', 'INSTBase', 'INSTResidual', 'INSTUpper', 'INSQBase', 'INSQResidual', 'INSQUpper', 'APTies', 'nDCGTies', 'PTies', 'RRTies', 'TIE_AWARE', 'check_params', 'judgment_table', 'check_judgments', 'ALL_MEASURES', 'with_residuals', 'to_spec', 'NoiseProvider', 'NoiseEvaluator', 'PROVIDER', 'evaluate', 'evaluate_arrays', 'EvaluationArrays', 'register']
