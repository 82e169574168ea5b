"""The HTML report (html.py: one self-contained interactive page), its sections with computed
conclusions (sections.py), its interactive Plotly figures (interactive.py), its static matplotlib
figures (figures.py) and its words (words.py)."""
from .._lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "html": "Report",
    "sections": "write_report build_report correction_section robustness_section scores_section selection_section "
                "tie_stats_section ties_section",
    "figures": "plot_rbp_ranges",
    "versions": "versions_section",
})
