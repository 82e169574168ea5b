"""The record of one reproduction: the paper's headline claims, rows of (quantity, the paper's number, ours,
verdict) and the checks of the package, stored as JSON.

A :class:`Reproduction` is what :func:`pyterrier_noise.reproduce.run` returns and what
``pyterrier-noise reproduce`` writes.  Its rows come in three blocks:

* ``paper``: a number the paper prints, quoted exactly as printed (``paper_text``) with its table,
  figure or section (``source``), or ``"derived: <arithmetic on printed numbers> = <value>"``; ours
  beside it and a verdict judged with a stated tolerance (:func:`judge`);
* ``validation``: checks of the package (coverage of its intervals, agreement with a reference
  fit, numbers the paper does not print); never called reproduced;
* ``simulation``: consistency checks of a simulation (e.g. a simulated second assessor whose model
  makes the check true by construction); never called reproduced.

``claims`` lists the paper's headline claims (abstract and conclusion), each with the rows that test
it and a verdict.  Analyses not run are listed in ``not_yet`` with the reason.  ``tables`` holds extra
tables in the layout a docs page shows them (``columns`` and ``rows``), so that
``tests/docs/test_docs_numbers.py`` can check the page against them.
"""
from __future__ import annotations

import json
import math
import textwrap
from dataclasses import asdict, dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

import pandas as pd

from .._validation import InputError

#: verdicts of a row quoting the paper
REPRODUCED = "reproduced"
DATA_DIFFERS = "differs because our data differs"
NOT_COMPARABLE = "not comparable"
NOT_REPRODUCED = "does not reproduce"
REVERSED = "does not reproduce: the direction is reversed"
PAPER_VERDICTS = (REPRODUCED, DATA_DIFFERS, NOT_COMPARABLE, NOT_REPRODUCED, REVERSED)
#: verdicts of a check of the package or of a simulation (never "reproduced")
HOLDS = "holds"
FAILS = "fails"
REFERENCE = "for reference"
CHECK_VERDICTS = (HOLDS, FAILS, REFERENCE)
VERDICTS = PAPER_VERDICTS + CHECK_VERDICTS
#: the blocks of rows
PAPER_BLOCK = "paper"
VALIDATION_BLOCK = "validation"
SIMULATION_BLOCK = "simulation"
BLOCKS = {PAPER_BLOCK: "the paper's printed numbers",
          VALIDATION_BLOCK: "validation of the package (no printed number: never called reproduced)",
          SIMULATION_BLOCK: "consistency checks of the simulation (true by construction: never called reproduced)"}
#: verdicts of a headline claim
SUPPORTED = "supported"
CONTRADICTED = "contradicted"
NOT_TESTABLE = "not testable"
MIXED = "mixed"
CLAIM_VERDICTS = (SUPPORTED, CONTRADICTED, MIXED, NOT_TESTABLE)
#: the width of the command's text
WIDTH = 120

__all__ = ["Row", "Claim", "Reproduction", "judge", "VERDICTS", "PAPER_VERDICTS", "CHECK_VERDICTS",
           "CLAIM_VERDICTS", "MIXED", "REPRODUCED", "DATA_DIFFERS", "NOT_COMPARABLE", "NOT_REPRODUCED", "REVERSED", "HOLDS",
           "FAILS", "REFERENCE", "SUPPORTED", "CONTRADICTED", "NOT_TESTABLE", "PAPER_BLOCK", "VALIDATION_BLOCK",
           "SIMULATION_BLOCK", "BLOCKS", "format_number", "derived", "plain", "md"]


def format_number(value: float | None, decimals: int) -> str:
    """``value`` with ``decimals`` decimal places and thousands separators; an empty cell for None/NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:,.{decimals}f}"


def plain(value: float | None) -> str:
    """``value`` in plain decimals, at most three significant digits (no exponent); empty for None."""
    if value is None:
        return ""
    if value == 0:
        return "0"
    text = f"{value:.{max(0, 2 - math.floor(math.log10(abs(value))))}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def md(value: Any) -> Any:
    """A string cell escaped for a markdown table (``|`` and ``*``); other values unchanged."""
    return value.replace("|", "\\|").replace("*", "\\*") if isinstance(value, str) else value


def derived(expression: str, decimals: int) -> tuple[float, str]:
    """``(value, "derived: <expression> = <value>")`` of arithmetic on printed numbers (digits, ``.``,
    ``+ - * /`` and brackets only)."""
    if not set(expression) <= set("0123456789.+-*/() "):
        raise InputError(f"derived({expression!r}): only printed numbers and + - * / ( ) are allowed")
    value = float(eval(expression, {"__builtins__": {}}, {}))   # noqa: S307 - digits and operators only
    return value, f"derived: {expression} = {value:.{decimals}f}"


def _signs_differ(a: float, b: float) -> bool:
    return a * b < 0


def _passes(ours: float, paper: float, tolerance: float | None, bound: str) -> bool:
    """The rule a row is judged by: within ``tolerance`` of the paper's number, or (``bound``) on the
    paper's side of a printed bound ("over 90%": ``above``; "less than 10^-6": ``below``)."""
    slack = (tolerance or 0.0) + 1e-12
    if bound == "above":
        return ours > paper - slack
    if bound == "below":
        return ours < paper + slack
    return tolerance is not None and abs(ours - paper) <= slack


def judge(ours: float | None, paper: float | None, tolerance: float | None, *, same_data: bool,
          signed: bool = False, bound: str = "") -> str:
    """The verdict of a row by its stated rule: ``reproduced`` when ``|ours - paper| <= tolerance`` (or, for a
    printed bound, when ours is on its side); otherwise ``the direction is reversed`` when ``signed`` (the
    sign is the paper's claim) and the signs differ; otherwise ``does not reproduce`` on the paper's own
    data (``same_data``) and ``differs because our data differs`` on other data."""
    if ours is None or paper is None or not math.isfinite(ours):
        return NOT_REPRODUCED if same_data else DATA_DIFFERS
    if _passes(ours, paper, tolerance, bound):
        return REPRODUCED
    if signed and _signs_differ(ours, paper):
        return REVERSED
    return NOT_REPRODUCED if same_data else DATA_DIFFERS


@dataclass
class Row:
    """One quantity of a reproduction.

    Attributes:
        quantity: what is measured, in words.
        paper: the paper's number (None in the validation and simulation blocks).
        source: where the paper prints it (table, figure, equation, section).
        ours: our number.
        decimals: decimal places used to show ``ours``.
        data: the data our number was computed on.
        verdict: one of :data:`PAPER_VERDICTS` (block ``paper``) or :data:`CHECK_VERDICTS`.
        note: why the verdict (how our data differs, what the check shows).
        paper_text: the paper's number exactly as printed, or ``"derived: ... = ..."`` (see :func:`derived`).
        tolerance: the largest ``|ours - paper|`` (or, for a check, ``|ours - target|``) that passes.
        tolerance_why: why that tolerance (rounding of the printed value, Monte Carlo error, ...).
        block: ``paper``, ``validation`` or ``simulation`` (:data:`BLOCKS`).
        signed: the sign of the quantity is the paper's claim (a reversed sign is said in the verdict).
        bound: ``"above"`` or ``"below"`` when the paper prints a bound ("over 96%"), not a value.
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
    tolerance: float | None = None
    tolerance_why: str = ""
    block: str = PAPER_BLOCK
    signed: bool = False
    bound: str = ""

    def __post_init__(self) -> None:
        self.paper = None if self.paper is None else round(float(self.paper), 12)
        self.ours = None if self.ours is None or not math.isfinite(float(self.ours)) else float(self.ours)
        self.tolerance = None if self.tolerance is None else float(self.tolerance)
        if self.block not in BLOCKS:
            raise InputError(f"{self.quantity}: block {self.block!r} is not one of {list(BLOCKS)}")
        allowed = PAPER_VERDICTS if self.block == PAPER_BLOCK else CHECK_VERDICTS
        if self.verdict not in allowed:
            raise InputError(f"{self.quantity}: verdict {self.verdict!r} is not one of {allowed} (block {self.block})")
        if self.block != PAPER_BLOCK:
            return
        if not self.paper_text or not self.source:
            raise InputError(f"{self.quantity}: a row of the paper block quotes the paper (paper_text) and says "
                             "where it is printed (source)")
        if self.bound not in ("", "above", "below"):
            raise InputError(f"{self.quantity}: bound {self.bound!r} is not '', 'above' or 'below'")
        if self.verdict == REPRODUCED:
            if (self.paper is None or self.ours is None or (self.tolerance is None and not self.bound)
                    or not self.tolerance_why):
                raise InputError(f"{self.quantity}: 'reproduced' needs the paper's number, ours, a tolerance (or "
                                 "a printed bound) and why")
            if not _passes(self.ours, self.paper, self.tolerance, self.bound):
                rule = f"the bound ({self.bound} {self.paper!r})" if self.bound else f"the tolerance {self.tolerance!r}"
                raise InputError(f"{self.quantity}: ours {self.ours!r} against the paper's {self.paper!r} is outside "
                                 f"{rule}: it cannot be 'reproduced'")
        if (self.signed and self.paper is not None and self.ours is not None
                and _signs_differ(self.ours, self.paper) and self.verdict not in (REVERSED, NOT_COMPARABLE)):
            raise InputError(f"{self.quantity}: ours ({self.ours:g}) has the opposite sign of the paper's "
                             f"({self.paper:g}): the verdict must say the direction is reversed")

    @property
    def paper_shown(self) -> str:
        """The paper's value as the table shows it: the quotation, or empty outside the paper block."""
        return self.paper_text

    @property
    def ours_shown(self) -> str:
        """Our value as the table shows it."""
        return format_number(self.ours, self.decimals) if self.ours is not None else "(none)"

    @property
    def tolerance_shown(self) -> str:
        """The tolerance in plain decimals, three significant digits (empty when none)."""
        return plain(self.tolerance)

    @property
    def verdict_shown(self) -> str:
        """The verdict with its rule: the tolerance and why."""
        out = self.verdict
        if self.bound:
            out += f" (rule: ours {self.bound} {self.paper:g}" + (f": {self.tolerance_why})" if self.tolerance_why else ")")
        elif self.tolerance is not None:
            out += f" (tolerance {self.tolerance_shown}" + (f": {self.tolerance_why})" if self.tolerance_why else ")")
        return out


@dataclass
class Claim:
    """A headline claim of the paper (its abstract or conclusion) and what our rows say about it.

    Attributes:
        claim: the claim, quoted or closely paraphrased.
        source: where the paper makes it (Abstract, Sec. 8, ...).
        rows: the ``quantity`` of every row that tests it.
        verdict: one of :data:`CLAIM_VERDICTS`.
        why: the one-line reason for the verdict.
    """

    claim: str
    source: str
    rows: list[str]
    verdict: str
    why: str

    def __post_init__(self) -> None:
        if self.verdict not in CLAIM_VERDICTS:
            raise InputError(f"claim {self.claim[:40]!r}: verdict {self.verdict!r} is not one of {CLAIM_VERDICTS}")
        if not self.rows:
            raise InputError(f"claim {self.claim[:40]!r}: name the rows that test it")


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def _columns(cells: list[str], widths: list[int], indent: str = "  ") -> list[str]:
    """One table row laid out in columns of ``widths``, each cell wrapped within its column."""
    wrapped = [_wrap(c, w) for c, w in zip(cells, widths)]
    lines = []
    for parts in zip_longest(*wrapped, fillvalue=""):
        lines.append((indent + "  ".join(f"{p:{w}s}" for p, w in zip(parts, widths))).rstrip())
    return lines


def _paragraph(label: str, text: str, indent: str = "  ") -> list[str]:
    return textwrap.wrap(f"{label}{text}", WIDTH, initial_indent=indent, subsequent_indent=indent + "    ",
                         break_on_hyphens=False)


@dataclass
class Reproduction:
    """The reproduction of one paper (see :mod:`pyterrier_noise.reproduce`).

    Attributes:
        paper: short name (``moffat2007``, ...).
        citation: authors and year, as the docs cite them.
        title: the paper's title.
        experiment: what was run, in one or two sentences.
        data: the data it ran on.
        data_differs: how our data differs from the paper's.
        command: the command that reproduces this record.
        quick: whether it ran with ``quick=True`` (fewer replicates or budgets).
        rows: the :class:`Row` list (blocks ``paper``, ``validation``, ``simulation``).
        not_yet: analyses of the paper not reproduced, each with the reason.
        tables: extra tables ``{name: {"columns": [...], "rows": [[...], ...]}}`` in a docs page's layout.
        seconds: how long the run took (wall clock).
        claims: the paper's headline claims (:class:`Claim`).
        ran_at: when the run started (UTC, to the minute).
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
    claims: list[Claim] = field(default_factory=list)
    ran_at: str = ""

    def __post_init__(self) -> None:
        names = [r.quantity for r in self.rows]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"{self.paper}: rows named twice: {twice}")
        for c in self.claims:
            unknown = [q for q in c.rows if q not in names]
            if unknown:
                raise InputError(f"{self.paper}: claim {c.claim[:40]!r} names rows that do not exist: {unknown}")

    def block(self, name: str) -> list[Row]:
        """The rows of one block (``paper``, ``validation``, ``simulation``)."""
        return [r for r in self.rows if r.block == name]

    @property
    def frame(self) -> pd.DataFrame:
        """One row per quantity: block, quantity, paper (as printed), source, ours, tolerance, data, verdict,
        note (and one row per analysis not yet reproduced)."""
        cols = ["block", "quantity", "paper", "source", "ours", "tolerance", "data", "verdict", "note"]
        rows = [{"block": r.block, "quantity": r.quantity, "paper": r.paper_shown, "source": r.source,
                 "ours": r.ours, "tolerance": r.tolerance, "data": r.data, "verdict": r.verdict, "note": r.note}
                for r in self.rows]
        rows += [{"block": "not yet", "quantity": what, "paper": "", "source": "", "ours": None, "tolerance": None,
                  "data": "", "verdict": "not yet reproduced", "note": ""} for what in self.not_yet]
        return pd.DataFrame(rows, columns=cols)

    def verdict_counts(self) -> dict[str, int]:
        """How many rows carry each verdict (``paper`` block), how many checks hold or fail, how many
        claims are supported, contradicted or not testable, and how many analyses are not yet reproduced."""
        out: dict[str, int] = {}
        for v in PAPER_VERDICTS:
            out[v] = sum(r.verdict == v for r in self.block(PAPER_BLOCK))
        checks = [r for r in self.rows if r.block != PAPER_BLOCK]
        for v in CHECK_VERDICTS:
            out[f"checks: {v}"] = sum(r.verdict == v for r in checks)
        for v in CLAIM_VERDICTS:
            out[f"claims: {v}"] = sum(c.verdict == v for c in self.claims)
        out["not yet reproduced"] = len(self.not_yet)
        return out

    def summary_table(self) -> dict[str, Any]:
        """The paper block as the docs page shows it."""
        rows = [[md(c) for c in (r.quantity, r.paper_text, r.source, r.ours, r.tolerance, self.data_shown(r),
                                 r.verdict)] for r in self.block(PAPER_BLOCK)]
        return {"columns": ["quantity", "paper (as printed)", "where printed", "ours", "tolerance", "data", "verdict"],
                "rows": rows}

    def checks_table(self) -> dict[str, Any]:
        """The validation and simulation blocks as the docs page shows them."""
        rows = [[md(c) for c in (BLOCKS[r.block].split(" (")[0], r.quantity, r.ours, r.tolerance, self.data_shown(r),
                                 r.verdict)] for r in self.rows if r.block != PAPER_BLOCK]
        return {"columns": ["block", "quantity", "ours", "tolerance", "data", "verdict"], "rows": rows}

    def verdicts_table(self) -> dict[str, Any]:
        """The verdict summary: one row per verdict with its count."""
        return {"columns": ["verdict", "count"], "rows": [[k, v] for k, v in self.verdict_counts().items()]}

    def data_shown(self, row: Row) -> str:
        """A row's data as the docs table shows it: what it adds to the record's ``data`` ("the data
        above" when nothing), or its own words when it ran on something else."""
        if row.data == self.data:
            return "the data above"
        if row.data.startswith(self.data):
            return "the data above" + row.data[len(self.data):]
        return row.data

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the inverse of :meth:`from_dict`); ``tables`` also holds ``summary``
        (:meth:`summary_table`), ``checks`` (:meth:`checks_table`) and ``verdicts`` (:meth:`verdicts_table`)."""
        d = asdict(self)
        d["tables"] = {"summary": self.summary_table(), "checks": self.checks_table(),
                       "verdicts": self.verdicts_table(),
                       **{k: v for k, v in self.tables.items() if k not in GENERATED}}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Reproduction":
        d = dict(d)
        d["rows"] = [Row(**r) for r in d["rows"]]
        d["claims"] = [Claim(**c) for c in d.get("claims", [])]
        d["tables"] = {k: v for k, v in d.get("tables", {}).items() if k not in GENERATED}
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
        """The plain text the command prints (lines of at most 120 characters)."""
        lines = [*_paragraph("", f"{self.citation}: {self.title}", indent=""),
                 *_paragraph("ran: ", self.experiment), *_paragraph("data: ", self.data),
                 *_paragraph("our data differs: ", self.data_differs),
                 *_paragraph("command: ", self.command + f"  ({self.seconds:.0f} s"
                             + (f", started {self.ran_at} UTC)" if self.ran_at else ")")), ""]
        if self.claims:
            lines.append("  Headline claims:")
            for k, c in enumerate(self.claims, 1):
                lines += _paragraph(f"{k}. ", f"{c.claim} [{c.source}]", indent="  ")
                lines += _paragraph("", f"-> {c.verdict.upper()}: {c.why}", indent="       ")
                names = c.rows if len(c.rows) <= 4 else [c.rows[0], "...", c.rows[-1] + f" ({len(c.rows)} rows)"]
                lines += _paragraph("", "rows: " + "; ".join(names), indent="       ")
            lines.append("")
        widths = [44, 26, 10, 32]
        notes: dict[str, int] = {}

        def ref(text: str) -> str:
            return f" [{notes.setdefault(text, len(notes) + 1)}]" if text else ""

        for block, words in BLOCKS.items():
            rows = self.block(block)
            if not rows:
                continue
            lines += _paragraph("", words[0].upper() + words[1:] + ":")
            head = ["quantity", "paper (as printed) [where]" if block == PAPER_BLOCK else "", "ours", "verdict [notes]"]
            lines += _columns(head, widths)
            for r in rows:
                paper = f"{r.paper_text} [{r.source}]" if block == PAPER_BLOCK else ""
                rule = (f", {r.bound} {r.paper:g}" if r.bound else
                        f", ±{r.tolerance_shown}" if r.tolerance is not None else "")
                verdict = r.verdict + rule + ref(r.tolerance_why) + ref(r.note)
                lines += _columns([r.quantity, paper, r.ours_shown, verdict], widths)
            lines.append("")
        if notes:
            lines.append("  Notes (tolerances and reasons):")
            for text, k in notes.items():
                lines += _paragraph(f"[{k}] ", text)
            lines.append("")
        if self.not_yet:
            lines.append("  Not yet reproduced:")
            for what in self.not_yet:
                lines += _paragraph("- ", what)
            lines.append("")
        counts = ", ".join(f"{k} {v}" for k, v in self.verdict_counts().items() if v)
        lines += _paragraph("Verdicts: ", counts)
        return "\n".join(lines) + "\n"


#: tables :meth:`Reproduction.to_dict` generates from the rows
GENERATED = ("summary", "checks", "verdicts")
