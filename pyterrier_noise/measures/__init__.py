"""ir_measures measures (RBP / INST / INSQ with residuals, trec_eval's measures under tie
policies), the capability table of every measure the engine computes, measure parsing, the
ir_measures provider and evaluate().

Modules: :mod:`.base` (NoiseMeasure, parameter checks), :mod:`.rbp`, :mod:`.cwl` and :mod:`.ties`
(the package's measures, one class each), :mod:`.table` (the capability table), :mod:`.parse`
(:func:`parse_measure`, :func:`to_spec`), :mod:`.provider` (the ir_measures provider and
:func:`register`) and :mod:`.evaluate` (:func:`evaluate`, :func:`with_residuals`).
Importing this subpackage registers the measures with ir_measures (idempotent).
"""
from .base import NoiseMeasure, check_params
from .rbp import RBPBase, RBPResidual, RBPUpper, RBPProjected
from .cwl import INSTBase, INSTResidual, INSTUpper, INSQBase, INSQResidual, INSQUpper
from .ties import APTies, nDCGTies, PTies, RRTies
from .table import CAPABILITIES, Capability
from .parse import parse_measure, to_spec
from .evaluate import (with_residuals, evaluate, evaluate_arrays, EvaluationArrays, judgment_table,
                       check_judgments)
from .provider import NoiseProvider, NoiseEvaluator, PROVIDER, ALL_MEASURES, register

#: the tie-aware standard measures (trec_eval's definitions with a ``ties`` parameter)
TIE_AWARE = [APTies, nDCGTies, PTies, RRTies]

register()

__all__ = ['RBPBase', 'RBPResidual', 'RBPUpper', 'RBPProjected', 'INSTBase', 'INSTResidual', 'INSTUpper', 'INSQBase',
           'INSQResidual', 'INSQUpper', 'APTies', 'nDCGTies', 'PTies', 'RRTies', 'TIE_AWARE', 'NoiseMeasure',
           'check_params', 'CAPABILITIES', 'Capability', 'parse_measure', 'judgment_table', 'check_judgments',
           'ALL_MEASURES', 'with_residuals', 'to_spec', 'NoiseProvider', 'NoiseEvaluator', 'PROVIDER', 'evaluate',
           'evaluate_arrays', 'EvaluationArrays', 'register']
