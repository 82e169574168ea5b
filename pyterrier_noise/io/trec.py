"""Reading runs and qrels from every form the ecosystem uses, with validation.

Runs come back as PyTerrier result frames ``qid, docno, score, rank`` (``rank`` 0-based, as in
PyTerrier; TREC files are 1-based and converted here), qrels as ``qid, docno, label`` frames.

Accepted inputs
---------------
* PyTerrier frames (``qid, docno, score[, rank]`` / ``qid, docno, label``);
* ir_measures frames (``query_id, doc_id, score`` / ``query_id, doc_id, relevance``) and iterables
  of ir_measures / ir_datasets namedtuples (``ScoredDoc``, ``Qrel``, ``TrecQrel``);
* TREC files, plain or gzip, columns separated by spaces or tabs (the qrels iteration column may
  hold anything, e.g. ``0.5``);
* directories of run files (a run's name is its file name without ``.gz``);
* ``ir_datasets`` datasets (anything with ``qrels_iter()``, including
  ``ir_datasets.create_dataset(qrels_trec=...)``) and ``pt.get_dataset(...).get_qrels()``;
* pytrec_eval-style dicts ``{qid: {docno: value}}``.

Bad input raises :class:`~pyterrier_noise.errors.InputError` naming the file and line (or column
and row) and what was expected; coercions (duplicate judgments, negative labels) are announced
with counts.
"""
from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd

from .._validation import InputError, announce

PathLike = Union[str, os.PathLike]
RunsInput = Any  # a frame, a path, a directory, a list of those, or a mapping name -> any of those
QrelsInput = Any

RUN_COLUMNS = ["qid", "docno", "score", "rank"]
QRELS_COLUMNS = ["qid", "docno", "label"]

_RUN_ALIASES = {"query_id": "qid", "doc_id": "docno"}
_QRELS_ALIASES = {"query_id": "qid", "doc_id": "docno", "relevance": "label"}


# --------------------------------------------------------------------------------------------
# file helpers

def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a file") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InputError(f"{path}: looks like gzip but cannot be decompressed ({exc})") from None
    return raw


def run_name(path: Path) -> str:
    name = path.name
    return name[:-3] if name.endswith(".gz") else name


def _scan_lines(data: bytes, path: Path, n_fields: int, what: str, numeric: dict[int, str]) -> None:
    """Slow, exact scan used only to locate a problem the fast parser reported.

    Raises InputError naming the first bad line; returns if every line is fine.
    """
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != n_fields:
            raise InputError(
                f"{path} line {lineno}: expected {n_fields} whitespace-separated fields ({what}), "
                f"found {len(fields)}: {line[:120].decode(errors='replace')!r}")
        for col, colname in numeric.items():
            tok = fields[col].decode(errors="replace")
            try:
                val = float(tok)
            except ValueError:
                raise InputError(f"{path} line {lineno}: {colname} {tok!r} is not a number") from None
            if not np.isfinite(val):
                raise InputError(f"{path} line {lineno}: {colname} {tok!r} is not a finite number")


def _parse_table(data: bytes, path: Path, names: list[str], usecols: list[int], dtype: dict,
                 what: str, numeric: dict[int, str]) -> pd.DataFrame:
    """Fast C-parser read; any irregularity sends the file to :func:`_scan_lines` for an exact
    file-and-line message."""
    first = data[: data.find(b"\n")] if b"\n" in data else data
    tabbed = first.count(b"\t") == len(names) - 1 and b" " not in first.strip()
    try:
        df = pd.read_csv(io.BytesIO(data), sep="\t" if tabbed else r"\s+", header=None, names=names,
                         usecols=usecols if tabbed else None, dtype=dtype, engine="c", skip_blank_lines=True)
    except (ValueError, pd.errors.ParserError):
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

    Returns a PyTerrier frame ``qid, docno, score, rank`` with ``rank`` converted to 0-based.
    """
    path = Path(path)
    data = _read_bytes(path)
    if not data.strip():
        raise InputError(f"{path}: the run is empty (expected lines 'qid Q0 docno rank score tag')")
    df = _parse_table(
        data, path, names=["qid", "q0", "docno", "rank", "score", "tag"], usecols=[0, 2, 3, 4],
        dtype={"qid": str, "docno": str, "rank": np.float64, "score": np.float64},
        what="a TREC run line 'qid Q0 docno rank score tag'", numeric={3: "rank", 4: "score"})
    df = df[RUN_COLUMNS]
    df["rank"] = df["rank"].astype(np.int64) - 1
    df.attrs["source"] = str(path)
    return df


def read_trec_qrels(path: PathLike) -> pd.DataFrame:
    """Read a TREC qrels file (``qid iter docno label``; plain or gzip; spaces or tabs).

    The iteration column is ignored and may hold anything (TREC-COVID uses ``0.5``).
    """
    path = Path(path)
    data = _read_bytes(path)
    if not data.strip():
        raise InputError(f"{path}: the qrels file is empty (expected lines 'qid iter docno label')")
    df = _parse_table(
        data, path, names=["qid", "iter", "docno", "label"], usecols=[0, 2, 3],
        dtype={"qid": str, "iter": str, "docno": str, "label": np.float64},
        what="a TREC qrels line 'qid iter docno label'", numeric={3: "label"})
    df.attrs["source"] = str(path)
    return _clean_qrels(df[QRELS_COLUMNS], str(path))


# --------------------------------------------------------------------------------------------
# frames and iterables

def _rename(df: pd.DataFrame, aliases: dict[str, str]) -> pd.DataFrame:
    ren = {a: b for a, b in aliases.items() if a in df.columns and b not in df.columns}
    return df.rename(columns=ren) if ren else df


def _require(df: pd.DataFrame, cols: list[str], source: str, kind: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise InputError(
            f"{source}: {kind} frame is missing column(s) {missing}; found {list(df.columns)} "
            f"(expected {cols}, or ir_measures' names)")


def _numeric_column(df: pd.DataFrame, col: str, source: str) -> np.ndarray:
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{source}: column {col!r}, row {i} (qid={df['qid'].iloc[i]!r}, docno={df['docno'].iloc[i]!r}): "
            f"expected a finite number, got {df[col].iloc[i]!r} ({int(bad.sum())} such row(s))")
    return values


def _as_str(series: pd.Series) -> pd.Series:
    if series.dtype == object or pd.api.types.is_string_dtype(series.dtype):
        return series.astype(str)
    return series.astype(str)


def _clean_qrels(df: pd.DataFrame, source: str) -> pd.DataFrame:
    df = _rename(df, _QRELS_ALIASES)
    _require(df, QRELS_COLUMNS, source, "qrels")
    out = pd.DataFrame({"qid": _as_str(df["qid"]).to_numpy(), "docno": _as_str(df["docno"]).to_numpy(),
                        "label": _numeric_column(df, "label", source)})
    if len(out) == 0:
        raise InputError(f"{source}: the qrels are empty (expected at least one judgment)")
    dup = out.duplicated(["qid", "docno"], keep="last")
    if dup.any():
        first = out[dup].iloc[0]
        announce(f"{source}: {int(dup.sum())} duplicate judgment(s) for the same (qid, docno), e.g. "
                 f"qid={first.qid!r} docno={first.docno!r}; kept the last of each, as pytrec_eval does")
        out = out[~dup].reset_index(drop=True)
    neg = out["label"].to_numpy() < 0
    if neg.any():
        announce(f"{source}: {int(neg.sum())} negative label(s) clipped to 0 (judged non-relevant), "
                 f"as trec_eval treats them")
        out.loc[neg, "label"] = 0.0
    out.attrs["source"] = source
    return out


def _clean_run(df: pd.DataFrame, source: str) -> pd.DataFrame:
    df = _rename(df, _RUN_ALIASES)
    _require(df, ["qid", "docno", "score"], source, "run")
    out = pd.DataFrame({"qid": _as_str(df["qid"]).to_numpy(), "docno": _as_str(df["docno"]).to_numpy(),
                        "score": _numeric_column(df, "score", source)})
    if "rank" in df.columns:
        rank = pd.to_numeric(df["rank"], errors="coerce").to_numpy(dtype=np.float64)
        if not np.isfinite(rank).all():
            i = int(np.flatnonzero(~np.isfinite(rank))[0])
            raise InputError(f"{source}: column 'rank', row {i}: expected an integer, got {df['rank'].iloc[i]!r}")
        out["rank"] = rank.astype(np.int64)
    else:
        out["rank"] = np.arange(len(out), dtype=np.int64)  # input order
    if len(out) == 0:
        raise InputError(f"{source}: the run is empty (expected at least one ranked document)")
    out.attrs["source"] = source
    return out


def _namedtuples_to_frame(items: Iterable, kind: str) -> pd.DataFrame:
    rows = list(items)
    if not rows:
        return pd.DataFrame(columns=QRELS_COLUMNS if kind == "qrels" else RUN_COLUMNS)
    first = rows[0]
    if hasattr(first, "_fields"):
        fields = list(first._fields)
        df = pd.DataFrame.from_records(rows, columns=fields)
    elif isinstance(first, Mapping):
        df = pd.DataFrame.from_records(rows)
    else:
        raise InputError(f"cannot read {kind} from an iterable of {type(first).__name__}; "
                         f"expected namedtuples with query_id/doc_id fields")
    return df


def _dict_of_dicts(d: Mapping, value_col: str) -> pd.DataFrame:
    records = [(str(q), str(doc), v) for q, docs in d.items() for doc, v in docs.items()]
    return pd.DataFrame.from_records(records, columns=["qid", "docno", value_col])


def read_qrels(source: QrelsInput) -> pd.DataFrame:
    """Read qrels from any supported form into a ``qid, docno, label`` frame.

    Example::

        qrels = read_qrels("../shared/data/trec-covid-round1/qrels-rnd1.txt")
    """
    if isinstance(source, pd.DataFrame):
        return _clean_qrels(source, source.attrs.get("source", "qrels frame"))
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            raise InputError(f"{path}: is a directory, expected a qrels file")
        return read_trec_qrels(path)
    if hasattr(source, "qrels_iter"):  # an ir_datasets dataset
        if hasattr(source, "has_qrels") and not source.has_qrels():
            raise InputError(f"{source!r}: this ir_datasets dataset provides no qrels")
        return _clean_qrels(_namedtuples_to_frame(source.qrels_iter(), "qrels"), "ir_datasets qrels")
    if hasattr(source, "get_qrels"):  # a PyTerrier dataset
        return read_qrels(source.get_qrels())
    if isinstance(source, Mapping):
        return _clean_qrels(_dict_of_dicts(source, "label"), "qrels dict")
    if isinstance(source, Iterable):
        return _clean_qrels(_namedtuples_to_frame(source, "qrels"), "qrels iterable")
    raise InputError(f"cannot read qrels from {type(source).__name__}; expected a frame, a TREC file, "
                     f"an ir_datasets dataset or an iterable of Qrel namedtuples")


def read_run(source: Any, name: str | None = None) -> pd.DataFrame:
    """Read one run from a frame, TREC file (plain or gzip), dict or iterable of ScoredDocs.

    Returns a PyTerrier frame ``qid, docno, score, rank`` (``rank`` 0-based).
    """
    if isinstance(source, pd.DataFrame):
        return _clean_run(source, name or source.attrs.get("source", "run frame"))
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            raise InputError(f"{path}: is a directory; use read_runs() for a directory of runs")
        return read_trec_run(path)
    if isinstance(source, Mapping):
        return _clean_run(_dict_of_dicts(source, "score"), name or "run dict")
    if isinstance(source, Iterable):
        return _clean_run(_namedtuples_to_frame(source, "run"), name or "run iterable")
    raise InputError(f"cannot read a run from {type(source).__name__}; expected a frame or a TREC run file")


def list_run_files(directory: Path) -> list[Path]:
    files = sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise InputError(f"{directory}: the directory holds no run files")
    return files


def read_runs(source: RunsInput, n_jobs: int | None = None) -> dict[str, pd.DataFrame]:
    """Read several runs into ``{name: frame}``.

    ``source`` may be a directory of TREC run files, a list of files, a mapping of names to
    frames or files, a single frame (with a ``name`` column for several systems) or one file.
    A run's name is its file name without ``.gz``. Files are parsed in parallel processes when
    there are many (``n_jobs``; default: all cores).
    """
    if isinstance(source, pd.DataFrame):
        if "name" in source.columns:
            return {str(n): read_run(g.drop(columns="name"), name=str(n))
                    for n, g in source.groupby("name", sort=False)}
        return {"run": read_run(source, name="run")}
    if isinstance(source, Mapping):
        return {str(k): read_run(v, name=str(k)) for k, v in source.items()}
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            return _read_run_files(list_run_files(path), n_jobs)
        return {run_name(path): read_trec_run(path)}
    if isinstance(source, Iterable):
        items = list(source)
        if all(isinstance(x, (str, os.PathLike)) for x in items):
            files: list[Path] = []
            for x in items:
                p = Path(x)
                files.extend(list_run_files(p) if p.is_dir() else [p])
            return _read_run_files(files, n_jobs)
        return {f"run{i}": read_run(x, name=f"run{i}") for i, x in enumerate(items)}
    raise InputError(f"cannot read runs from {type(source).__name__}")


def read_run_arguments(items: Iterable) -> dict[str, pd.DataFrame]:
    """Runs named on a command line: each item a run file or a directory of them.

    Two runs with the same name (file name without ``.gz``) are an error, never a silent overwrite.
    """
    return read_runs(run_file_arguments(items))


def run_file_arguments(items: Iterable) -> list[Path]:
    """The run files named on a command line (each item a run file or a directory of them), unread,
    for the engine to parse directly (:meth:`AlignedRuns.build` reads files faster than frames).

    A missing path or two runs with the same name (file name without ``.gz``) are errors."""
    files: list[Path] = []
    for item in items:
        path = Path(item)
        if not path.exists():
            raise InputError(f"{path}: no such file or directory (expected a run file or a directory of them)")
        files.extend(list_run_files(path) if path.is_dir() else [path])
    names = pd.Index([run_name(f) for f in files])
    if names.has_duplicates:
        raise InputError(f"two runs are named {names[names.duplicated()][0]!r} "
                         f"(a run's name is its file name without .gz)")
    if not files:
        raise InputError("no run files given")
    return files


def _read_run_files(files: list[Path], n_jobs: int | None) -> dict[str, pd.DataFrame]:
    names = [run_name(p) for p in files]
    dup = pd.Index(names)[pd.Index(names).duplicated()]
    if len(dup):
        raise InputError(f"two run files share the name {dup[0]!r} (a run's name is its file name without .gz)")
    n_jobs = n_jobs if n_jobs is not None else (os.cpu_count() or 1)
    if n_jobs > 1 and len(files) >= 8:
        import concurrent.futures as cf
        import multiprocessing as mp
        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
        with cf.ProcessPoolExecutor(max_workers=n_jobs, mp_context=ctx) as pool:
            frames = list(pool.map(read_trec_run, files, chunksize=max(1, len(files) // (4 * n_jobs))))
    else:
        frames = [read_trec_run(p) for p in files]
    return dict(zip(names, frames))


def write_trec_run(run: pd.DataFrame, path: PathLike, tag: str = "pyterrier_noise") -> None:
    """Write a PyTerrier results frame as a TREC run file (1-based ranks; gzip if the name ends in .gz)."""
    run = _clean_run(run, str(path))
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
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
