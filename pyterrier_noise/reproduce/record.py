"""The record of one reproduction: rows of (quantity, the paper's number, ours, verdict), stored as JSON.

A :class:`Reproduction` is what :func:`pyterrier_noise.reproduce.run` returns and what
``pyterrier-noise reproduce`` writes: one :class:`Row` per quantity, with the paper's printed
number and where it is printed (table or equation), our number, the data it ran on and a plain
verdict.  Analyses the package does not offer yet are listed as "not yet reproduced: ..." rather
than given invented numbers.  ``tables`` holds extra tables in the layout a docs page shows them
(``columns`` and ``rows``), so that ``tests/test_docs_numbers.py`` can check the page against them.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .._validation import InputError

#: the verdicts a row can carry
REPRODUCED = "reproduced"
DATA_DIFFERS = "differs because our data differs"
NOT_REPRODUCED = "does not reproduce"
NO_NUMBER = "no number printed (ours for reference)"
VERDICTS = (REPRODUCED, DATA_DIFFERS, NOT_REPRODUCED, NO_NUMBER)

__all__ = ["Row", "Reproduction", "VERDICTS", "REPRODUCED", "DATA_DIFFERS", "NOT_REPRODUCED", "NO_NUMBER",
           "format_number"]


def format_number(value: float | None, decimals: int) -> str:
    """``value`` with ``decimals`` decimal places and thousands separators; an empty cell for None/NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:,.{decimals}f}"


@dataclass
class Row:
    """One quantity of a reproduction.

    Attributes:
        quantity: what is measured, in words.
        paper: the paper's printed number (None when the paper prints none, e.g. a figure only).
        source: where the paper prints it (table, figure, equation, section) or states the claim.
        ours: our number.
        decimals: decimal places used to show ``paper`` and ``ours``.
        data: the data our number was computed on.
        verdict: one of :data:`VERDICTS`.
        note: why the verdict (e.g. how our data differs).
        paper_text: the paper's value when it is not one number (a range, a claim).
    """

    quantity: str
    paper: float | None
    source: str
    ours: float | None
    decimals: int
    data: str
    verdict: str
    note: str = ""
    paper_text: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise InputError(f"verdict {self.verdict!r} is not one of {VERDICTS}")
        self.paper = None if self.paper is None else round(float(self.paper), 12)
        self.ours = None if self.ours is None or not math.isfinite(float(self.ours)) else float(self.ours)

    @property
    def paper_shown(self) -> str:
        """The paper's value as the table shows it."""
        if self.paper_text:
            return self.paper_text
        return format_number(self.paper, self.decimals) if self.paper is not None else "(not printed)"

    @property
    def ours_shown(self) -> str:
        """Our value as the table shows it."""
        return format_number(self.ours, self.decimals) if self.ours is not None else "(none)"


@dataclass
class Reproduction:
    """The reproduction of one paper's headline experiment (see :mod:`pyterrier_noise.reproduce`).

    Attributes:
        paper: short name (``moffat2007``, ...).
        citation: authors and year, as the docs cite them.
        title: the paper's title.
        experiment: what was run, in one or two sentences.
        data: the data it ran on.
        data_differs: how our data differs from the paper's.
        command: the command that reproduces this record.
        quick: whether it ran with ``quick=True`` (fewer replicates or budgets).
        rows: the :class:`Row` list.
        not_yet: analyses of the paper the package does not offer yet.
        tables: extra tables ``{name: {"columns": [...], "rows": [[...], ...]}}`` in a docs page's layout.
        seconds: how long the run took (wall clock).
    """

    paper: str
    citation: str
    title: str
    experiment: str
    data: str
    data_differs: str
    command: str
    quick: bool
    rows: list[Row]
    not_yet: list[str] = field(default_factory=list)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def frame(self) -> pd.DataFrame:
        """One row per quantity: quantity, paper, source, ours, data, verdict, note (and not-yet rows)."""
        rows = [{"quantity": r.quantity, "paper": r.paper_shown, "source": r.source, "ours": r.ours,
                 "data": r.data, "verdict": r.verdict, "note": r.note} for r in self.rows]
        rows += [{"quantity": what, "paper": "", "source": "", "ours": None, "data": "",
                  "verdict": f"not yet reproduced: {what}", "note": ""} for what in self.not_yet]
        return pd.DataFrame(rows, columns=["quantity", "paper", "source", "ours", "data", "verdict", "note"])

    def summary_table(self) -> dict[str, Any]:
        """The rows as the docs page shows them: quantity, paper (a number, or its text), where printed,
        ours, data, verdict."""
        rows = [[r.quantity, r.paper_text or r.paper, r.source, r.ours, self.data_shown(r), r.verdict]
                for r in self.rows]
        return {"columns": ["quantity", "paper", "where printed", "ours", "data", "verdict"], "rows": rows}

    def data_shown(self, row: Row) -> str:
        """A row's data as the docs table shows it: what it adds to the record's ``data`` ("the data
        above" when nothing), or its own words when it ran on something else."""
        if row.data == self.data:
            return "the data above"
        if row.data.startswith(self.data):
            return "the data above" + row.data[len(self.data):]
        return row.data

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the inverse of :meth:`from_dict`); ``tables["summary"]`` is :meth:`summary_table`."""
        d = asdict(self)
        d["tables"] = {"summary": self.summary_table(), **{k: v for k, v in self.tables.items() if k != "summary"}}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Reproduction":
        d = dict(d)
        d["rows"] = [Row(**r) for r in d["rows"]]
        d["tables"] = {k: v for k, v in d.get("tables", {}).items() if k != "summary"}
        return cls(**d)

    def save(self, path: str | Path) -> Path:
        """Write the record as JSON (atomically); returns the path."""
        from .._output import atomic_file
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(path) as tmp:
            Path(tmp).write_text(json.dumps(self.to_dict(), indent=1, sort_keys=False) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Reproduction":
        """Read a record written by :meth:`save`."""
        return cls.from_dict(json.loads(Path(path).read_text()))

    def to_text(self) -> str:
        """The plain-text table the command prints."""
        lines = [f"{self.citation}: {self.title}", f"  ran: {self.experiment}", f"  data: {self.data}",
                 f"  our data differs: {self.data_differs}", f"  command: {self.command}", ""]
        w = max([len(r.quantity) for r in self.rows] + [8])
        lines.append(f"  {'quantity':{w}s}  {'paper':>14s}  {'ours':>10s}  verdict")
        for r in self.rows:
            lines.append(f"  {r.quantity:{w}s}  {r.paper_shown:>14s}  {r.ours_shown:>10s}  {r.verdict}"
                         + (f"  [{r.source}]" if r.source else ""))
        for what in self.not_yet:
            lines.append(f"  not yet reproduced: {what}")
        return "\n".join(lines) + "\n"
