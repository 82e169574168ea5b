"""The HTML report (html.py: one self-contained interactive page), its sections with computed
conclusions (sections.py), its interactive Plotly figures (interactive.py), its static matplotlib
figures (figures.py) and its words (words.py)."""
from .figures import plot_rbp_ranges
from .html import Report
from .sections import (build_report, correction_section, robustness_section, scores_section, selection_section, tie_stats_section,
                       ties_section, write_report)
from .versions import versions_section

__all__ = ['Report', 'build_report', 'correction_section', 'plot_rbp_ranges', 'robustness_section', 'scores_section',
           'selection_section', 'tie_stats_section', 'ties_section', 'versions_section', 'write_report']
