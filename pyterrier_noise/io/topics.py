"""Topic files: TREC ``<top>``, TREC XML ``<topic number=...>``, JSON lines, or one topic per line.

:func:`read_topics` gives each topic's title, description and narrative (what the judging page
shows an assessor); :func:`read_topics_file` gives PyTerrier's ``qid, query`` frame (the title as
the query).  Plain or gzip files; the parser is this module's own (no JVM is started).
"""
from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Union

from .._validation import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Topic", "read_topics", "read_topics_file", "read_text", "json_lines"]

PathLike = Union[str, os.PathLike]


@dataclass(frozen=True)
class Topic:
    """A topic's text for the assessor: title (the query), description and narrative (may be empty)."""
    qid: str
    title: str = ""
    description: str = ""
    narrative: str = ""


def read_text(path: PathLike) -> str:
    """The text of a file, inflated when it is gzip, decoded as UTF-8 (bad bytes replaced)."""
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8", errors="replace")


def json_lines(path: PathLike, raw: str) -> Iterator[tuple[int, dict]]:
    """``(line number, record)`` of each non-blank line of a JSON-lines text; an error names the line."""
    for i, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path} line {i}: not a JSON object ({exc.msg})") from None
        yield i, rec


def _field(body: str, tag: str) -> str:
    """The text after ``<tag>`` up to the next tag (TREC topics do not always close their tags)."""
    m = re.search(rf"<{tag}>(.*?)(?=<[a-z/]|\Z)", body, re.S | re.I)
    if m is None:
        return ""
    text = m.group(1)
    text = re.sub(r"^\s*(Number:|Description:|Narrative:|Topic:)", "", text.strip(), flags=re.I)
    return " ".join(text.split())


def read_topics(path: PathLike) -> dict[str, Topic]:
    """``{qid: Topic}`` from TREC ``<top>``, TREC XML ``<topic>``, JSON lines or one-per-line files.

    One-per-line files hold ``qid<TAB>text`` or ``qid text`` (PyTerrier's ``singleline``).  A file
    that does not exist, is empty or names no topic raises :class:`~pyterrier_noise.InputError`
    naming the file (and the line).
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such topics file")
    raw = read_text(p)
    out: dict[str, Topic] = {}
    if re.search(r"<top>", raw, re.I):
        for i, m in enumerate(re.finditer(r"<top>(.*?)</top>", raw, re.S | re.I), 1):
            body = m.group(1)
            num = _field(body, "num")
            if not num:
                raise InputError(f"{p}: topic number {i} has no <num>")
            out[num] = Topic(num, _field(body, "title"), _field(body, "desc"), _field(body, "narr"))
    elif re.search(r"<topic[ >]", raw, re.I):
        for i, m in enumerate(re.finditer(r"<topic\b([^>]*)>(.*?)</topic>", raw, re.S | re.I), 1):
            num = re.search(r"number\s*=\s*\"([^\"]+)\"", m.group(1))
            if num is None:
                raise InputError(f"{p}: <topic> number {i} has no number=\"...\" attribute")
            body = m.group(2)
            out[num.group(1)] = Topic(num.group(1), _field(body, "query") or _field(body, "title"),
                                      _field(body, "question") or _field(body, "description"),
                                      _field(body, "narrative"))
    elif raw.lstrip()[:1] == "{":
        for i, rec in json_lines(p, raw):
            qid = next((rec[k] for k in ("qid", "query_id", "id") if k in rec), None)
            if qid is None:
                raise InputError(f"{p} line {i}: expected a key 'qid', found {sorted(rec)[:6]}")
            out[str(qid)] = Topic(str(qid), str(rec.get("title") or rec.get("query") or rec.get("text") or ""),
                                  str(rec.get("description") or ""), str(rec.get("narrative") or ""))
    else:
        for i, line in enumerate(raw.splitlines(), 1):
            if not line.strip():
                continue
            sep = "\t" if "\t" in line else " "
            qid, _, text = line.strip().partition(sep)
            if not text:
                raise InputError(f"{p} line {i}: expected 'qid<TAB>text' or 'qid text', got {line[:60]!r}")
            out[qid] = Topic(qid, text.strip())
    if not out:
        raise InputError(f"{p}: no topics found")
    return out


def read_topics_file(path: PathLike) -> "pd.DataFrame":
    """Topics as PyTerrier's ``qid, query`` frame (the title is the query), from any file
    :func:`read_topics` reads: TREC (``<top>``), TREC XML (``<topic>``), JSON lines or one per line.
    """
    import pandas as pd
    topics = read_topics(path)
    return pd.DataFrame({"qid": list(topics), "query": [t.title for t in topics.values()]}, dtype=object)
