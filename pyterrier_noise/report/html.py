"""Self-contained HTML reports with embedded plots (``pyterrier-noise report``, and the demo).

A :class:`Report` collects sections of text, tables and matplotlib figures; :meth:`Report.write`
produces one HTML file with every figure embedded as a base64 PNG, so the page can be mailed or
archived as it is.  The figures themselves are drawn in :mod:`pyterrier_noise.report.figures`.
"""
from __future__ import annotations

import base64
import html
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from .figures import plot_rbp_ranges


_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 1100px; margin: 2em auto;
       color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: .85em; margin: .8em 0; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption, .caption { color: #555; font-size: .9em; }
.note { color: #555; font-style: italic; }
"""


@dataclass
class Report:
    """An HTML report built section by section.

    Example::

        report = Report("My evaluation")
        report.section("Scores", "RBP with residuals.")
        report.table(frame, caption="Mean scores")
        report.figure(fig, caption="RBP ranges", name="rbp-ranges")
        report.write("out/report.html")
    """

    title: str
    parts: list[str] = field(default_factory=list)
    n_figures: int = 0

    def section(self, heading: str, text: str | None = None) -> "Report":
        self.parts.append(f"<h2>{html.escape(heading)}</h2>")
        if text:
            self.text(text)
        return self

    def text(self, text: str, note: bool = False) -> "Report":
        cls = ' class="note"' if note else ""
        self.parts.append(f"<p{cls}>{html.escape(text)}</p>")
        return self

    def table(self, frame: pd.DataFrame, caption: str | None = None, float_format: str = "{:.4f}",
              index: bool = True) -> "Report":
        body = frame.to_html(index=index, float_format=lambda x: float_format.format(x), border=0,
                             classes="report-table", na_rep="")
        if caption:
            self.parts.append(f'<p class="caption">{html.escape(caption)}</p>')
        self.parts.append(body)
        return self

    def figure(self, fig: Any, caption: str, name: str | None = None) -> "Report":
        """Embed a matplotlib Figure (or the Figure of an Axes) as a PNG.

        A figure that pyplot manages is released from pyplot afterwards; pyplot is never imported here.
        """
        if not hasattr(fig, "savefig"):   # an Axes
            fig = fig.figure
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None and getattr(fig.canvas, "manager", None) is not None:
            plt.close(fig)
        self.n_figures += 1
        ident = name or f"figure-{self.n_figures}"
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        self.parts.append(f'<figure id="{html.escape(ident)}"><img class="plot" alt="{html.escape(caption)}" '
                          f'src="data:image/png;base64,{data}"><figcaption>{html.escape(caption)}</figcaption></figure>')
        return self

    def html(self) -> str:
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(self.title)}</title><style>{_CSS}</style></head><body>"
                f"<h1>{html.escape(self.title)}</h1>" + "\n".join(self.parts) +
                "<hr><p class=\"note\">Made by pyterrier-noise.</p></body></html>\n")

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.html(), encoding="utf-8")
        return path


def write_report(out: str | Path, scores: pd.DataFrame, highlight: Sequence[str] = (),
                 report: Report | None = None, title: str = "pyterrier-noise report") -> Path:
    """Write ``out/report.html`` for a frame of mean scores (index: system; columns include
    ``RBP(p=0.8)`` and ``RBP residual``), appending to ``report`` if one was started."""
    report = report or Report(title)
    if "RBP(p=0.8)" in scores.columns and "RBP residual" in scores.columns:
        fig = plot_rbp_ranges(scores["RBP(p=0.8)"], scores["RBP residual"], highlight=highlight,
                              title="RBP(p=0.8) ranges")
        report.figure(fig, "RBP(p=0.8) of each system, from its base (judged documents only) to its upper bound "
                           "(every unjudged document relevant). Orange: systems that did not contribute to the pool.",
                      name="rbp-ranges")
    report.table(scores, caption="Mean scores over all topics")
    return report.write(Path(out) / "report.html")
