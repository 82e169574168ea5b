"""ir_measures measures (RBP / INST / INSQ with residuals), the provider and evaluate()."""
from .classes import (RBPBase, RBPResidual, RBPUpper, RBPProjected, INSTBase, INSTResidual, INSTUpper, INSQBase, INSQResidual, INSQUpper, ALL_MEASURES, with_residuals, to_spec, NoiseProvider, NoiseEvaluator, PROVIDER, evaluate, register)

__all__ = ['RBPBase', 'RBPResidual', 'RBPUpper', 'RBPProjected', 'INSTBase', 'INSTResidual', 'INSTUpper', 'INSQBase', 'INSQResidual', 'INSQUpper', 'ALL_MEASURES', 'with_residuals', 'to_spec', 'NoiseProvider', 'NoiseEvaluator', 'PROVIDER', 'evaluate', 'register']
