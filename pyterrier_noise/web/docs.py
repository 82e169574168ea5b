"""Documents and topics to show an assessor, and query-term highlighting.

Documents come from TREC ``<DOC>`` files (plain or gzip; a file or a directory of them),
``docno<TAB>text`` lines, JSON lines (``{"docno": ..., "text": ..., "title": ...}``; ``doc_id`` /
``id`` and ``body`` / ``contents`` are accepted too) or an ir_datasets id (``irds:vaswani``).
Topics come from TREC ``<top>`` files (``<num>``, ``<title>``, ``<desc>``, ``<narr>``), TREC XML
``<topic number=...>`` files, JSON lines (``qid``, ``title``/``query``, ``description``,
``narrative``), ``qid<TAB>text`` lines, or the ir_datasets id's queries.

Lookups are by identifier in what was read (a mapping, or the ir_datasets document store): no
identifier is ever turned into a file name, so a ``docno`` such as ``../../etc/passwd`` finds
nothing and reads nothing.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .._validation import InputError
from ..io.topics import Topic, json_lines, read_text, read_topics

__all__ = ["Collection", "Topic", "open_collection", "read_topics", "read_documents", "highlight", "query_terms",
           "trec_text", "KNOWN_TAGS"]

STOPWORDS = frozenset("""a about an and are as at be by for from has have how in into is it its of on or over that the
their there these this to under use using was were what when where which who why will with""".split())


@dataclass
class Collection:
    """Documents and topics by identifier (``document(docno)``, ``topic(qid)``: None when absent)."""
    documents: dict[str, str] | None = None
    topics: dict[str, Topic] = field(default_factory=dict)
    lookup: Callable[[str], str | None] | None = None
    source: str = ""

    def document(self, docno: str) -> str | None:
        if not isinstance(docno, str):
            return None
        if self.documents is not None:
            return self.documents.get(docno)
        if self.lookup is not None:
            return self.lookup(docno)
        return None

    def topic(self, qid: str) -> Topic:
        return self.topics.get(qid) or Topic(qid)


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
        if not files:
            raise InputError(f"{path}: the document directory holds no files")
        return files
    if not path.is_file():
        raise InputError(f"{path}: no such document file or directory")
    return [path]


_DOC = re.compile(r"<DOC>(.*?)</DOC>", re.S | re.I)
_DOCNO = re.compile(r"<DOCNO>\s*(.*?)\s*</DOCNO>", re.S | re.I)
#: the tags of TREC's document collections (TREC disks 1-5, AP, WSJ, FT, LA Times, FBIS, FR, Congressional
#: Record, WT/GOV): only these are markup; any other ``<...>`` is text as its author wrote it ("a < b")
KNOWN_TAGS = frozenset("""DOC DOCNO DOCID DOCOLDNO TEXT HEADLINE HL HEAD HEADER TITLE TI H2 H3 H4 H5 H6 LEADPARA LP
DATELINE BYLINE SUMMARY ABSTRACT DATE DATE_TIME DD AUTHOR SECTION GRAPHIC CAPTION CORRECTION CORRECTION-DATE
DESCRIPT PUB PAGE PROFILE IN CO SO AN MS NS RE GV ST CN FILEID FIRST SECOND NOTE SUBJECT TYPE LENGTH P F FIG
TABLE TABLECELL TR TD TH ROW CELL HT PHRASE XX AGENCY ACTION SUPPLEM FOOTNOTE FOOTCITE FOOTNAME SIGNER SIGNJOB
FRFILING BILLING RINDOCK CFRNO USDEPT USBUREAU DOCTITLE IMPORT ADDRESS FURTHER DOCHDR DOCHDR""".split())
_MARKUP = re.compile(r"<!--.*?-->|</?([A-Za-z][A-Za-z0-9_-]*)(?:\s[^<>]*)?/?>", re.S)
_HEADINGS = frozenset({"HEADLINE", "HL", "HEAD", "TITLE", "TI", "H2", "H3", "H4", "H5", "H6", "DOCTITLE"})
_DROPPED = frozenset({"DOCNO", "DOCID", "DOCOLDNO", "FILEID", "DOCHDR"})
_BREAKS = frozenset({"P", "LP", "LEADPARA", "TR", "ROW", "TABLE", "F", "FIG", "CAPTION", "FOOTNOTE"})


def trec_text(body: str) -> str:
    """A TREC ``<DOC>``'s text as its author wrote it: the known tags (:data:`KNOWN_TAGS`) are markup,
    any other ``<`` or ``>`` is text; entities decoded (``&amp;`` -> ``&``); headline fields first, then
    the others in order; paragraphs (``<P>``, blank lines, fields) kept, separated by a blank line,
    and the lines of a paragraph joined.  The result is plain text: the page escapes it."""
    import html
    heads: list[str] = []
    parts: list[str] = []
    stack: list[str] = []
    pos = 0
    buf: list[str] = []

    def flush() -> None:
        text = "".join(buf)
        buf.clear()
        if text.strip() and not any(t in _DROPPED for t in stack):
            (heads if any(t in _HEADINGS for t in stack) else parts).append(text)

    for m in _MARKUP.finditer(body):
        name = (m.group(1) or "").upper()
        if m.group(0).startswith("<!--"):
            buf.append(body[pos:m.start()])
            pos = m.end()
            continue
        if name not in KNOWN_TAGS:
            continue
        buf.append(body[pos:m.start()])
        pos = m.end()
        closing = m.group(0).startswith("</")
        if name in _BREAKS or name in _HEADINGS or name in _DROPPED or len(stack) <= 1 or closing:
            flush()
        if closing:
            if name in stack:
                del stack[len(stack) - 1 - stack[::-1].index(name):]
        elif name not in _BREAKS and not m.group(0).endswith("/>"):
            stack.append(name)
    buf.append(body[pos:])
    flush()
    paragraphs: list[str] = []
    for chunk in heads + parts:      # each a paragraph or more (blank lines inside)
        for para in re.split(r"\n\s*\n", chunk):
            text = " ".join(html.unescape(para).split())
            if text:
                paragraphs.append(text)
    return "\n\n".join(paragraphs)


def read_documents(path: str | os.PathLike) -> dict[str, str]:
    """``{docno: text}`` from TREC ``<DOC>`` files, ``docno<TAB>text`` lines or JSON lines."""
    docs: dict[str, str] = {}
    for f in _files(Path(path)):
        raw = read_text(f)
        head = raw.lstrip()[:1]
        if re.search(r"<DOC>", raw[:10000], re.I):
            for i, m in enumerate(_DOC.finditer(raw), 1):
                body = m.group(1)
                d = _DOCNO.search(body)
                if d is None:
                    raise InputError(f"{f}: <DOC> number {i} has no <DOCNO>")
                docs[d.group(1)] = trec_text(body)
        elif head == "{":
            for i, rec in json_lines(f, raw):
                docno = next((rec[k] for k in ("docno", "doc_id", "id") if k in rec), None)
                text = next((rec[k] for k in ("text", "body", "contents") if k in rec), None)
                if docno is None or text is None:
                    raise InputError(f"{f} line {i}: expected keys 'docno' and 'text', found {sorted(rec)[:6]}")
                title = rec.get("title")
                docs[str(docno)] = (f"{title}\n\n{text}" if title else str(text))
        else:
            for i, line in enumerate(raw.splitlines(), 1):
                if not line.strip():
                    continue
                docno, tab, text = line.partition("\t")
                if not tab:
                    raise InputError(f"{f} line {i}: expected 'docno<TAB>text', a TREC <DOC> file or JSON lines, "
                                     f"got {line[:60]!r}")
                docs[docno.strip()] = text
    if not docs:
        raise InputError(f"{path}: no documents found")
    return docs


def _irds(ident: str) -> tuple[Callable[[str], str | None], dict[str, Topic]]:
    try:
        import ir_datasets
    except ImportError:
        raise InputError(f"{ident}: reading an ir_datasets id needs the ir_datasets package "
                         f"(pip install ir_datasets)") from None
    name = ident[len("irds:"):]
    try:
        ds = ir_datasets.load(name)
    except KeyError:
        raise InputError(f"{ident}: ir_datasets knows no dataset {name!r}") from None
    store = ds.docs_store() if ds.has_docs() else None

    def lookup(docno: str) -> str | None:
        if store is None:
            return None
        try:
            doc = store.get(docno)
        except KeyError:
            return None
        parts = [str(getattr(doc, f)) for f in ("title", "text", "body", "abstract") if getattr(doc, f, None)]
        return "\n\n".join(parts) if parts else None

    topics: dict[str, Topic] = {}
    if ds.has_queries():
        for q in ds.queries_iter():
            title = getattr(q, "title", None) or getattr(q, "text", "") or ""
            topics[str(q.query_id)] = Topic(str(q.query_id), str(title), str(getattr(q, "description", "") or ""),
                                            str(getattr(q, "narrative", "") or ""))
    return lookup, topics


def open_collection(docs: str | os.PathLike | None = None, topics: str | os.PathLike | None = None) -> Collection:
    """The collection to show: ``docs`` a file, a directory or ``irds:ID``; ``topics`` a file or ``irds:ID``
    (left out with an ``irds:`` ``docs``: that dataset's queries)."""
    col = Collection(source=str(docs or ""))
    if docs is not None:
        if str(docs).startswith("irds:"):
            col.lookup, irds_topics = _irds(str(docs))
            if topics is None:
                col.topics = irds_topics
        else:
            col.documents = read_documents(docs)
    if topics is not None:
        col.topics = _irds(str(topics))[1] if str(topics).startswith("irds:") else read_topics(topics)
    return col


def query_terms(topic: Topic) -> set[str]:
    """The title's words, lower-cased, without stop words or one-letter words."""
    return {w for w in re.findall(r"\w+", topic.title.lower()) if len(w) > 1 and w not in STOPWORDS}


_WORDS = re.compile(r"(\w+)")


def _stem(word: str) -> str:
    """A plural's singular, crudely: one final 's' dropped (not from '-ss' or short words)."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def highlight(text: str, terms: set[str]) -> list[tuple[str, bool]]:
    """``text`` as ``(piece, is_query_term)`` pieces: a word matches a term case-insensitively, with or
    without a final 's' on either ("variation" matches "variations").

    The pieces are plain text: the page template escapes every one of them."""
    stems = {_stem(t) for t in terms}
    out: list[tuple[str, bool]] = []
    for i, piece in enumerate(_WORDS.split(text)):
        if not piece:
            continue
        low = piece.lower()
        hit = bool(i % 2) and (low in terms or _stem(low) in stems)
        if out and out[-1][1] == hit:
            out[-1] = (out[-1][0] + piece, hit)
        else:
            out.append((piece, hit))
    return out


def describe(col: Collection) -> dict[str, Any]:
    return {"documents": None if col.documents is None else len(col.documents), "topics": len(col.topics),
            "source": col.source}
