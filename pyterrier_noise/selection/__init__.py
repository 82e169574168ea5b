"""Which documents to judge next: pooling and Methods A, B, C, stopping rules, oracles and durable sessions."""
from .selector import (METHODS, JudgmentSelector, StopRule, depth_pool, rbp_pool, qrels_oracle, simulate, SimulationResult, compare_methods, separation, plot_ranges, plot_curves)
from .session import (Oracle, QrelsOracle, NoisyOracle, CallableOracle, TerminalOracle, QuitJudging, JudgingSession, JudgingEvent, RunReport, SessionError, SessionLockedError, fingerprint_runs, fingerprint_qrels, read_topics_file, read_docs_file)

__all__ = ['METHODS', 'JudgmentSelector', 'StopRule', 'depth_pool', 'rbp_pool', 'qrels_oracle', 'simulate', 'SimulationResult', 'compare_methods', 'separation', 'plot_ranges', 'plot_curves', 'Oracle', 'QrelsOracle', 'NoisyOracle', 'CallableOracle', 'TerminalOracle', 'QuitJudging', 'JudgingSession', 'JudgingEvent', 'RunReport', 'SessionError', 'SessionLockedError', 'fingerprint_runs', 'fingerprint_qrels', 'read_topics_file', 'read_docs_file']
