"""A person at the terminal as the oracle of the selection loop, and the readers of the topic and
document texts it shows."""
from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Optional, TextIO, Union

import pandas as pd

from .._validation import InputError, check_int
from ..io.topics import read_text, read_topics_file
from .oracles import Label, Oracle, QuitJudging, check_label, format_label

__all__ = ["TerminalOracle", "read_topics_file", "read_docs_file"]

PathLike = Union[str, os.PathLike]


class TerminalOracle(Oracle):
    """A person at the terminal: the human in the selection loop.

    Shows the judgment number, the topic id and text, the docno, the selection weight and the
    document text, then reads a label.  Accepted answers: one of ``labels``, ``s`` (skip: the
    session bypasses the document), ``q`` (quit: :class:`QuitJudging`, every judgment so far is
    saved; end of input counts as quit).  Anything else is refused with a message and asked again.

    Args:
        labels: the allowed labels (numbers), e.g. ``(0, 1)`` or ``(0, 1, 2)``.
        topics: topic texts: a mapping ``qid -> text`` or a frame with ``qid`` and ``query``
            (PyTerrier's topics frame; ``title`` or ``text`` also work).
        text: the document text: a mapping ``docno -> text`` or a function ``fn(docno)``.
        max_chars: the document text is cut after this many characters.
        input_fn: reads an answer given a prompt (default: the built-in ``input``).
        output: where to write (default: ``sys.stdout``).
    """

    def __init__(self, labels: Sequence[float] = (0, 1), topics: Any = None,
                 text: Mapping[str, str] | Callable[[str], Optional[str]] | None = None, max_chars: int = 2000,
                 input_fn: Callable[[str], str] | None = None, output: TextIO | None = None) -> None:
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence) or len(labels) == 0:
            raise InputError(f"argument 'labels': expected a non-empty sequence of numbers, got {labels!r}")
        labs = [check_label(v, "argument 'labels'") for v in labels]
        if len(set(labs)) != len(labs):
            raise InputError(f"argument 'labels': the labels must be distinct, got {list(labels)}")
        self.labels = labs
        self._answers = {format_label(v): v for v in labs}
        self.topics = _topic_texts(topics)
        if text is not None and not (isinstance(text, Mapping) or callable(text)):
            raise InputError(f"argument 'text': expected a mapping docno -> text or a function fn(docno), got {text!r}")
        self.text = text
        self.max_chars = check_int("max_chars", max_chars)
        self.input_fn = input_fn
        self.output = output

    def _parse(self, answer: str) -> tuple[str, Label]:
        a = answer.strip().lower()
        if a in ("s", "skip"):
            return "skip", None
        if a in ("q", "quit", "exit"):
            return "quit", None
        if a in self._answers:
            return "label", self._answers[a]
        try:
            v = float(a)
        except ValueError:
            return "bad", None
        return ("label", v) if v in self.labels else ("bad", None)

    def judge(self, qid: str, docno: str, weight: float | None = None, n_judged: int | None = None,
              budget: int | None = None, **context: Any) -> Label:
        out = self.output if self.output is not None else sys.stdout
        read = self.input_fn if self.input_fn is not None else builtins.input
        head = []
        if n_judged is not None:
            head.append(f"judgment {n_judged + 1}" + (f" of {budget}" if budget is not None else ""))
        head.append(f"topic {qid}")
        head.append(f"document {docno}")
        if weight is not None:
            head.append(f"weight {weight:.4g}")
        lines = ["", "-" * 72, " | ".join(head)]
        topic = self.topics.get(str(qid))
        if topic:
            lines.append(f"topic:    {topic}")
        body = self._document(str(docno))
        if body:
            body = body if len(body) <= self.max_chars else body[:self.max_chars] + " [...]"
            lines.append(f"document: {body}")
        out.write("\n".join(lines) + "\n")
        choices = "/".join(self._answers)
        prompt = f"label [{choices}], s = skip, q = quit > "
        while True:
            try:
                answer = read(prompt)
            except EOFError:
                out.write("\n")
                raise QuitJudging("end of input") from None
            kind, value = self._parse(answer)
            if kind == "label":
                return value
            if kind == "skip":
                return None
            if kind == "quit":
                raise QuitJudging("quit at the prompt")
            out.write(f"  {answer.strip()!r} is not an answer: type one of the labels "
                      f"{', '.join(self._answers)}, or s to skip this document, or q to quit\n")
        # unreachable

    def _document(self, docno: str) -> str | None:
        if self.text is None:
            return None
        t = self.text.get(docno) if isinstance(self.text, Mapping) else self.text(docno)
        return None if t is None else " ".join(str(t).split())

    def __repr__(self) -> str:
        return f"TerminalOracle(labels={self.labels})"


def _topic_texts(topics: Any) -> dict[str, str]:
    if topics is None:
        return {}
    if isinstance(topics, pd.DataFrame):
        col = next((c for c in ("query", "title", "text") if c in topics.columns), None)
        if "qid" not in topics.columns or col is None:
            raise InputError(f"argument 'topics': a topics frame needs columns 'qid' and 'query', found "
                             f"{list(topics.columns)}")
        return dict(zip(topics["qid"].astype(str), topics[col].astype(str)))
    if isinstance(topics, Mapping):
        return {str(k): str(v) for k, v in topics.items()}
    raise InputError(f"argument 'topics': expected a frame (qid, query) or a mapping qid -> text, got {topics!r}")


def read_docs_file(path: PathLike) -> dict[str, str]:
    """Read document texts for the judging prompt: TREC ``<DOC><DOCNO>...`` (plain or gzip) or TSV.

    TSV lines are ``docno<TAB>text``.  Returns ``{docno: text}`` (the whole file is held in memory).
    """
    import re
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such document file")
    raw = read_text(p)
    if "<DOC>" in raw[:10000] or "<doc>" in raw[:10000]:
        docs = {}
        for m in re.finditer(r"<DOC>(.*?)</DOC>", raw, flags=re.S | re.I):
            body = m.group(1)
            d = re.search(r"<DOCNO>\s*(.*?)\s*</DOCNO>", body, flags=re.S | re.I)
            if d is None:
                continue
            text = re.sub(r"<[^>]+>", " ", body[:d.start()] + body[d.end():])
            docs[d.group(1)] = " ".join(text.split())
        if not docs:
            raise InputError(f"{p}: found no <DOC> with a <DOCNO>")
        return docs
    docs = {}
    for i, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        docno, tab, text = line.partition("\t")
        if not tab:
            raise InputError(f"{p} line {i}: expected 'docno<TAB>text', got {line[:80]!r}")
        docs[docno.strip()] = text
    return docs
