"""Self-contained, interactive HTML reports (``pyterrier-noise report``, the demo, and
:func:`~pyterrier_noise.report.build_report` of the results).

A :class:`Report` collects sections of text, conclusions, tables and figures and writes ONE HTML
file that works offline: Plotly's JavaScript is embedded in the page (no CDN), so the interactive
figures (hover, zoom, pan) need nothing but a browser; matplotlib figures are embedded as PNG.
Tables are sortable (click a heading) and filterable (type in the box above them) by a few lines
of embedded JavaScript; every text is HTML-escaped.  Every column is explained once, where it
first appears; a column that is 0 in every row is explained (when the package knows why) or left
out with a note.  The page ends with the command and the package versions that produced it.

Why Plotly: it is well kept, hover, zoom and pan come built in, and ``include_plotlyjs`` embeds
its library so that the report stays one self-contained file.
"""
from __future__ import annotations

import base64
import html
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .figures import plot_rbp_ranges
from .words import COLUMN_HELP, ZERO_HELP, provenance

_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; max-width: 1400px; margin: 1.5em auto;
       color: #222; line-height: 1.45; padding: 0 1.5em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
.tablewrap { display: inline-block; max-width: 100%; max-height: 32em; overflow: auto; border: 1px solid #eee; margin: .4em 0 1em; }
table { border-collapse: collapse; font-size: .85em; }
th, td { border: 1px solid #e4e4e4; padding: .25em .6em; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; position: sticky; top: 0; cursor: pointer; user-select: none; }
th.asc::after { content: " \\25B2"; } th.desc::after { content: " \\25BC"; }
td.text, th.text { text-align: left; }
input.filter { margin: .6em 0 .1em; padding: .25em .5em; width: 22em; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
.plot { width: 100%; }
figcaption, .caption { color: #555; font-size: .9em; }
.conclusion { background: #f3f8f5; border-left: 4px solid #1b9e77; padding: .4em .8em; }
.note { color: #555; font-style: italic; }
dl.columns { font-size: .85em; color: #444; display: grid; grid-template-columns: max-content auto; gap: .1em 1em; }
dl.columns dt { font-family: monospace; } dl.columns dd { margin: 0; }
footer { margin-top: 3em; font-size: .85em; color: #555; border-top: 1px solid #ddd; padding-top: .5em; }
footer code { background: #f4f4f4; padding: .1em .3em; }
"""

# sort on a click of a heading (numbers by value, the rest as text), filter rows by the box above
_JS = """
document.querySelectorAll('table.report-table').forEach(function (table) {
  var body = table.tBodies[0];
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var asc = !th.classList.contains('asc');
      table.querySelectorAll('th').forEach(function (h) { h.classList.remove('asc', 'desc'); });
      th.classList.add(asc ? 'asc' : 'desc');
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[col], y = b.cells[col];
        var u = x.getAttribute('data-v'), v = y.getAttribute('data-v'), r;
        if (u !== null && v !== null) { r = parseFloat(u) - parseFloat(v); if (isNaN(r)) { r = isNaN(parseFloat(u)) ? 1 : -1; } }
        else { r = x.textContent.localeCompare(y.textContent, undefined, {numeric: true}); }
        return asc ? r : -r;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
document.querySelectorAll('input.filter').forEach(function (box) {
  box.addEventListener('input', function () {
    var needle = box.value.toLowerCase();
    var table = document.getElementById(box.getAttribute('data-table'));
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      row.style.display = row.textContent.toLowerCase().indexOf(needle) >= 0 ? '' : 'none';
    });
  });
});
"""


def _is_count(col: pd.Series) -> bool:
    """Integer column, or a float column holding whole numbers only (a count stored as float)."""
    if pd.api.types.is_bool_dtype(col):
        return False
    if pd.api.types.is_integer_dtype(col):
        return True
    if pd.api.types.is_float_dtype(col):
        v = col.to_numpy(float)
        v = v[np.isfinite(v)]
        return len(v) > 0 and bool((v == np.round(v)).all()) and bool((np.abs(v) >= 2).any())
    return False


def _cell(value: Any, count: bool, float_format: str) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return '<td data-v="NaN"></td>'
    if isinstance(value, (bool, np.bool_)):
        return f'<td class="text">{"yes" if value else "no"}</td>'
    if isinstance(value, (int, float, np.integer, np.floating)):
        shown = f"{int(round(float(value))):,}" if count else float_format.format(float(value))
        return f'<td data-v="{float(value)!r}">{html.escape(shown)}</td>'
    return f'<td class="text">{html.escape(str(value))}</td>'


@dataclass
class Report:
    """An HTML report built section by section.

    Example::

        report = Report("My evaluation")
        report.section("Scores", "RBP with residuals.")
        report.conclusion("3 of 20 runs could still move by more than 0.2.")
        report.table(frame, caption="Mean scores")
        report.figure(fig, caption="RBP ranges", name="rbp-ranges")   # plotly or matplotlib
        report.write("out/report.html")
    """

    title: str
    parts: list[str] = field(default_factory=list)
    n_figures: int = 0
    n_tables: int = 0
    command: str | None = None
    explained: set = field(default_factory=set)
    uses_plotly: bool = False

    def section(self, heading: str, text: str | None = None) -> "Report":
        """A new section with its heading (and an opening paragraph)."""
        self.parts.append(f"<h2>{html.escape(heading)}</h2>")
        if text:
            self.text(text)
        return self

    def text(self, text: str, note: bool = False) -> "Report":
        cls = ' class="note"' if note else ""
        self.parts.append(f"<p{cls}>{html.escape(text)}</p>")
        return self

    def conclusion(self, text: str) -> "Report":
        """What a reader should conclude, computed from the data, set apart from the description."""
        self.parts.append(f'<p class="conclusion">{html.escape(text)}</p>')
        return self

    def table(self, frame: pd.DataFrame, caption: str | None = None, float_format: str = "{:.4f}",
              index: bool = True, explain: Mapping[str, str] | None = None,
              zero_help: Mapping[str, str] | None = None) -> "Report":
        """A sortable, filterable table.  A named or non-default index becomes the first
        column(s) (no extra header row); whole-number columns print as integers; columns not yet
        explained in this report are explained under the table (``explain`` adds or overrides
        words, else :data:`COLUMN_HELP`); a column that is 0 in every row is explained by
        ``zero_help`` / :data:`ZERO_HELP` or left out with a note saying so."""
        t = frame.copy()
        if isinstance(t.columns, pd.MultiIndex):
            t.columns = [" ".join(str(x) for x in c if str(x)) for c in t.columns]
        t.columns = [str(c) for c in t.columns]
        if index and not (isinstance(t.index, pd.RangeIndex) and t.index.name is None):
            names = [n if n is not None else ("system" if i == 0 else f"level {i}") for i, n in enumerate(t.index.names)]
            t.index = t.index.set_names(names)
            t = t.reset_index()
        words = {**COLUMN_HELP, **(explain or {})}
        zeros = {**ZERO_HELP, **(zero_help or {})}
        notes, dropped, empty = [], [], []
        for c in list(t.columns):
            col = t[c]
            if not len(col) or not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
                continue
            if col.isna().all():
                empty.append(c)
            elif (col.dropna() == 0).all():
                if c in zeros:
                    notes.append(f"{c} is 0 in every row: {zeros[c]}")
                else:
                    dropped.append(c)
        t = t.drop(columns=dropped + empty)
        if caption:
            self.parts.append(f'<p class="caption">{html.escape(caption)}</p>')
        self.n_tables += 1
        ident = f"table-{self.n_tables}"
        counts = {c: _is_count(t[c]) for c in t.columns}
        numeric = {c: pd.api.types.is_numeric_dtype(t[c]) and not pd.api.types.is_bool_dtype(t[c]) for c in t.columns}
        head = ""
        for c in t.columns:
            tip = f' title="{html.escape(words[c], quote=True)}"' if c in words else ""
            head += f'<th class="{"num" if numeric[c] else "text"}"{tip}>{html.escape(c)}</th>'
        rows = []
        for rec in t.itertuples(index=False, name=None):
            rows.append("<tr>" + "".join(_cell(v, counts[c], float_format) for v, c in zip(rec, t.columns)) + "</tr>")
        if len(t) > 8:
            self.parts.append(f'<div><input class="filter" type="search" data-table="{ident}" '
                              f'placeholder="filter rows (e.g. a run name)" aria-label="filter the rows of the table">'
                              '</div>')
        self.parts.append(f'<div class="tablewrap"><table class="report-table" id="{ident}"><thead><tr>{head}</tr>'
                          f'</thead><tbody>{"".join(rows)}</tbody></table></div>')
        new = [c for c in t.columns if c in words and c not in self.explained]
        if new:
            self.parts.append('<dl class="columns">' + "".join(
                f"<dt>{html.escape(c)}</dt><dd>{html.escape(words[c])}</dd>" for c in new) + "</dl>")
            self.explained.update(new)
        for n in notes:
            self.text(n, note=True)
        if dropped:
            self.text(f"Left out: {', '.join(dropped)} (0 in every row).", note=True)
        if empty:
            self.text(f"Left out: {', '.join(empty)} (no value in any row).", note=True)
        return self

    def figure(self, fig: Any, caption: str, name: str | None = None, conclusion: str | None = None) -> "Report":
        """Embed a figure: a Plotly figure stays interactive; a matplotlib Figure (or Axes) is
        embedded as a PNG (a figure that pyplot manages is released from pyplot afterwards;
        pyplot is never imported here).  ``conclusion``: what the reader should take from it."""
        self.n_figures += 1
        ident = html.escape(name or f"figure-{self.n_figures}", quote=True)
        if hasattr(fig, "to_plotly_json"):
            self.uses_plotly = True
            div = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"{ident}-plot",
                              config={"responsive": True, "displaylogo": False,
                                      "toImageButtonOptions": {"filename": ident}})
            body = f'<div class="plot plotly-figure">{div}</div>'
        else:
            if not hasattr(fig, "savefig"):   # an Axes
                fig = fig.figure
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
            plt = sys.modules.get("matplotlib.pyplot")
            if plt is not None and getattr(fig.canvas, "manager", None) is not None:
                plt.close(fig)
            data = base64.b64encode(buf.getvalue()).decode("ascii")
            body = f'<img class="plot" alt="{html.escape(caption, quote=True)}" src="data:image/png;base64,{data}">'
        self.parts.append(f'<figure id="{ident}">{body}<figcaption>{html.escape(caption)}</figcaption></figure>')
        if conclusion:
            self.conclusion(conclusion)
        return self

    def html(self) -> str:
        script = ""
        if self.uses_plotly:
            from plotly.offline import get_plotlyjs
            script = f'<script type="text/javascript">{get_plotlyjs()}</script>'
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                f"<title>{html.escape(self.title)}</title><style>{_CSS}</style>{script}</head><body>"
                f"<h1>{html.escape(self.title)}</h1>" + "\n".join(self.parts) +
                f"<footer>{provenance(self.command)}</footer><script>{_JS}</script></body></html>\n")

    def write(self, path: str | Path) -> Path:
        """Write the page to ``path``, a file or a directory that gets ``report.html`` (under a
        temporary name, then renamed into place).  Returns the path written."""
        from .._output import atomic_write
        path = Path(path)
        if path.suffix.lower() not in (".html", ".htm"):
            path = path / "report.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write(path, self.html().encode("utf-8"))


__all__ = ["Report", "plot_rbp_ranges"]
