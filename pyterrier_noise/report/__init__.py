"""The HTML report (html.py) and its figures (figures.py)."""
from .figures import plot_rbp_ranges
from .html import Report, write_report

__all__ = ['Report', 'plot_rbp_ranges', 'write_report']
