"""The HTML report and its figures."""
from .html import (Report, plot_rbp_ranges, write_report)

__all__ = ['Report', 'plot_rbp_ranges', 'write_report']
