"""TREC text files: reading runs and qrels (plain or gzip, spaces or tabs) with file-and-line
errors, naming and listing run files, and writing runs and qrels.

Runs come back as PyTerrier result frames ``qid, docno, score, rank`` (``rank`` 0-based, as in
PyTerrier; TREC files are 1-based and converted here), qrels as ``qid, docno, label`` frames.
Bad input raises :class:`~pyterrier_noise._validation.InputError` naming the file and line.
"""
from __future__ import annotations

import csv
import gzip
import io
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import InputError, announce
from .._warnings import warn
from .._vocab import Fractional
from .frames import QRELS_COLUMNS, RUN_COLUMNS, SOURCE_KEY, clean_qrels, clean_run

from .files import TREC_RUN_FIELDS, PathLike, list_run_files, run_file_arguments, run_name  # noqa: F401
from .reader import announce_zero_based, file_bytes, rank_problem, zero_based


# --------------------------------------------------------------------------------------------
# file helpers

def _read_bytes(path: Path) -> bytes:
    """A TREC file's bytes (inflated; :func:`~.reader.file_bytes`), refused at its first NUL byte."""
    raw = file_bytes(path)   # a device, or a binary head, refused before the whole file is read
    nul = raw.find(b"\0")   # one memchr: trec_eval's C strings would end a field there
    if nul >= 0:
        line, col = _position(raw, nul)
        raise InputError(f"{path} line {line}: a NUL byte at character {col} (TREC files are text; "
                         f"a field cannot hold NUL)")
    return raw


def _position(data: bytes, offset: int) -> tuple[int, int]:
    """(1-based line, 1-based column) of byte ``offset``."""
    start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - start + 1


def _check_utf8(data: bytes, path: Path) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        raise InputError(f"{path} line {line}: byte 0x{data[exc.start]:02x} at character {col} is not UTF-8 "
                         f"text (re-encode the file as UTF-8, e.g. iconv -f latin1 -t utf-8)") from None


# A number as trec_eval's atof / atol would read all of it: decimal digits, an optional fraction and
# exponent.  Python's float() is more lenient ('1_000', 'infinity', ' 0x1p3' via fromhex no, but
# digit separators yes); trec_eval would stop at the first odd character and read '1_000' as 1, so
# anything else is refused with the line rather than read as either.
_NUMBER = re.compile(rb"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_NON_FINITE = re.compile(rb"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def _lines(data: bytes):
    """(line number, fields) of every non-blank line, numbered as the C parser counts lines."""
    for lineno, line in enumerate(data.splitlines(), start=1):
        fields = line.split()
        if fields:
            yield lineno, line, fields


def _line_of_row(data: bytes, row: int) -> int:
    """The line number of parsed row ``row`` (blank lines are skipped by the parser)."""
    for i, (lineno, _, _) in enumerate(_lines(data)):
        if i == row:
            return lineno
    return -1


def _scan_lines(data: bytes, path: Path, n_fields: int, what: str, numeric: dict[int, str]) -> None:
    """Slow, exact scan used only to locate a problem the fast parser reported.

    Raises InputError naming the first bad line and the reason; returns if every line is fine.
    """
    _check_utf8(data, path)
    for lineno, line, fields in _lines(data):
        if len(fields) != n_fields:
            raise InputError(
                f"{path} line {lineno}: expected {n_fields} whitespace-separated fields ({what}), "
                f"found {len(fields)}: {line[:120].decode(errors='replace')!r}")
        for col, colname in numeric.items():
            tok = fields[col]
            text = tok.decode(errors="replace")
            if _NON_FINITE.fullmatch(tok):
                raise InputError(f"{path} line {lineno}: {colname} {text!r} is not a finite number")
            if not _NUMBER.fullmatch(tok):
                why = " (digit separators such as '_' are not accepted)" if b"_" in tok else ""
                raise InputError(f"{path} line {lineno}: {colname} {text!r} is not a number{why}")
            if not np.isfinite(float(tok)):
                raise InputError(f"{path} line {lineno}: {colname} {text!r} is out of range (not a finite number)")


def _announce_mixed(data: bytes, path: Path) -> None:
    """Say, with a count, which lines mix tabs and spaces, and that they are split as trec_eval splits
    a line, at every run of whitespace: a docno written ``'d1 '`` between tabs is ``'d1'``."""
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    lines = np.intersect1d(np.searchsorted(newlines, np.flatnonzero(buf == 32)),
                           np.searchsorted(newlines, np.flatnonzero(buf == 9)))
    if len(lines):
        announce(f"{path}: {len(lines)} line(s) mix tabs and spaces (e.g. line {int(lines[0]) + 1}): read as trec_eval "
                 "reads them, every run of spaces and tabs separating two fields (so an identifier with a leading "
                 "or trailing space or tab loses it)")


def _parse_table(data: bytes, path: Path, names: list[str], usecols: list[int], dtype: dict,
                 what: str, numeric: dict[int, str]) -> pd.DataFrame:
    """Fast C-parser read; any irregularity sends the file to :func:`_scan_lines` for an exact
    file-and-line message.  Quotes are ordinary characters (trec_eval splits on whitespace only)."""
    first = data[: data.find(b"\n")] if b"\n" in data else data
    tabbed = first.count(b"\t") == len(names) - 1 and b" " not in first.strip()
    if b"\t" in data and b" " in data:   # fields split at any whitespace, as trec_eval splits them
        _announce_mixed(data, path)
        tabbed = False
    try:
        df = pd.read_csv(io.BytesIO(data), sep="\t" if tabbed else r"\s+", header=None, names=names,
                         usecols=usecols if tabbed else None, dtype=dtype, engine="c", skip_blank_lines=True,
                         quoting=csv.QUOTE_NONE)
    except (ValueError, pd.errors.ParserError, OverflowError):
        _scan_lines(data, path, len(names), what, numeric)
        raise InputError(f"{path}: cannot be parsed as {what}") from None
    # with usecols the parser does not see short lines: count the separators instead
    short = tabbed and data.count(b"\t") != (len(names) - 1) * len(df)
    bad_numbers = any(not np.isfinite(df[names[c]].to_numpy()).all() for c in numeric)
    numeric_names = {names[c] for c in numeric}
    missing = any(df[col].isna().any() for col in df.columns if col not in numeric_names)
    if short or bad_numbers or missing:
        _scan_lines(data.replace(b"\t", b" ") if tabbed else data, path, len(names), what, numeric)
        if tabbed:  # e.g. spaces inside a field of a tab-separated file: read it as whitespace-separated
            return _parse_table(data.replace(b"\t", b" "), path, names, usecols, dtype, what, numeric)
        raise InputError(f"{path}: cannot be parsed as {what}")
    return df[[names[c] for c in usecols]]


def read_trec_run(path: PathLike) -> pd.DataFrame:
    """Read one TREC run file (``qid Q0 docno rank score tag``; plain or gzip; spaces or tabs).

    Returns a PyTerrier frame ``qid, docno, score, rank`` with ``rank`` 0-based: TREC's 1-based
    ranks are shifted; a file whose ranks start at 0 (``pt.io.write_results``) is read as 0-based
    with a CoercionWarning counting those rankings.  A rank that is not a whole number >= 0 is an
    error naming the line (trec_eval ignores ranks; the package uses them for ``ties="given"``).
    """
    df, starts = _read_run(path)
    if len(starts):
        announce_zero_based([(path, starts)])
    return df


def _read_run(path: PathLike) -> tuple[pd.DataFrame, np.ndarray]:
    """:func:`read_trec_run` without its announcement: the frame, and the rankings that start at 0."""
    path = Path(path)
    data = _read_bytes(path)
    if not data.strip():
        raise InputError(f"{path}: the run is empty (expected lines 'qid Q0 docno rank score tag')")
    df = _parse_table(
        data, path, names=TREC_RUN_FIELDS, usecols=[0, 2, 3, 4],
        dtype={"qid": str, "docno": str, "rank": np.float64, "score": np.float64},
        what="a TREC run line 'qid Q0 docno rank score tag'", numeric={3: "rank", 4: "score"})
    df = df[RUN_COLUMNS]
    rank = df["rank"].to_numpy()
    bad = rank_problem(rank)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        lineno = _line_of_row(data, i)
        tok = next(f for n, _, f in _lines(data) if n == lineno)[3].decode()
        raise InputError(f"{path} line {lineno}: rank {tok!r} is not a whole number between 0 and 2**53 "
                         f"({int(bad.sum())} such line(s))")
    starts = zero_based(rank, df["qid"].to_numpy())
    df["rank"] = rank.astype(np.int64) - (0 if len(starts) else 1)
    df.attrs[SOURCE_KEY] = str(path)
    return df, starts


def _read_run_recorded(path: Path) -> tuple[pd.DataFrame, np.ndarray, list]:
    """:func:`_read_run` with the warnings it raised recorded, not shown (``(message, category)``
    each): a worker process cannot show them where the caller would see them."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df, starts = _read_run(path)
    return df, starts, [(str(w.message), w.category) for w in caught]


def read_trec_qrels(path: PathLike, fractional: Fractional = "truncate") -> pd.DataFrame:
    """Read a TREC qrels file (``qid iter docno label``; plain or gzip; spaces or tabs).

    The iteration column is ignored and may hold anything (TREC-COVID uses ``0.5``).  Labels are
    int64; ``fractional`` as in :func:`~pyterrier_noise.io.read_qrels`.
    """
    path = Path(path)
    data = _read_bytes(path)
    if not data.strip():
        raise InputError(f"{path}: the qrels file is empty (expected lines 'qid iter docno label')")
    df = _parse_table(
        data, path, names=["qid", "iter", "docno", "label"], usecols=[0, 2, 3],
        dtype={"qid": str, "iter": str, "docno": str, "label": np.float64},
        what="a TREC qrels line 'qid iter docno label'", numeric={3: "label"})
    return clean_qrels(df[QRELS_COLUMNS], str(path), fractional,
                        locate=lambda i: f"line {_line_of_row(data, i)}")


# --------------------------------------------------------------------------------------------
# run files


def check_run_names(files: list[Path]) -> list[str]:
    """The runs' names (file names without .gz); two files of the same name are an error."""
    names = [run_name(p) for p in files]
    dup = pd.Index(names)[pd.Index(names).duplicated()]
    if len(dup):
        raise InputError(f"two run files share the name {dup[0]!r} (a run's name is its file name without .gz)")
    return names


def read_run_files(files: list[Path], n_jobs: int | None) -> dict[str, pd.DataFrame]:
    names = check_run_names(files)
    n_jobs = n_jobs if n_jobs is not None else (os.cpu_count() or 1)
    if n_jobs > 1 and len(files) >= 8:
        from .._pool import worker_pool
        with worker_pool(n_jobs) as pool:   # workers die with this process, even by SIGKILL
            read = pool.map(_read_run_recorded, files, chunksize=max(1, len(files) // (4 * n_jobs)))
    else:
        read = [_read_run_recorded(p) for p in files]
    # the warnings of every file, shown here (blamed on the caller), and one for all 0-based files
    for _, _, caught in read:
        for message, category in caught:
            warn(message, category)
    announce_zero_based([(p, starts) for p, (_, starts, _) in zip(files, read) if len(starts)])
    return dict(zip(names, (df for df, _, _ in read)))


def write_trec_run(run: pd.DataFrame, path: PathLike, tag: str = "pyterrier_noise") -> None:
    """Write a PyTerrier results frame as a TREC run file (1-based ranks; gzip if the name ends in .gz)."""
    run = clean_run(run, str(path))
    order = np.lexsort((run["rank"].to_numpy(), run["qid"].to_numpy()))
    r = run.iloc[order]
    text = "".join(f"{q} Q0 {d} {k + 1} {s!r} {tag}\n" for q, d, k, s in
                   zip(r["qid"], r["docno"], r["rank"], r["score"]))
    _write_text(path, text)


def write_trec_qrels(qrels: pd.DataFrame, path: PathLike) -> None:
    """Write a ``qid, docno, label`` frame as TREC qrels (integral labels written as integers)."""
    q = qrels[QRELS_COLUMNS]
    labels = q["label"].to_numpy(dtype=np.float64)
    as_int = np.all(labels == np.round(labels))
    lab = [str(int(v)) if as_int else repr(float(v)) for v in labels]
    text = "".join(f"{a} 0 {b} {c}\n" for a, b, c in zip(q["qid"], q["docno"], lab))
    _write_text(path, text)


def _write_text(path: PathLike, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode()
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    from .._output import atomic_write, remove_dead_temporaries
    remove_dead_temporaries(path.parent)   # what a killed writer left beside it
    atomic_write(path, data)               # a temporary name beside it, renamed: never half written
