"""An LLM relevance judge over any OpenAI-compatible chat-completions endpoint, durable and resumable.

:class:`LLMJudge` labels ``(qid, docno)`` pairs on UMBRELA's 0-3 scale (Upadhyay et al. 2024, after
Thomas et al. 2024) through the official ``openai`` client (``pip install 'pyterrier-noise[llm]'``):
vLLM, Ollama, llama.cpp's server and hosted APIs all speak the protocol.  Every answer (raw text,
parsed label, label distribution from the log-probabilities when the server returns them, model,
prompt hash, tokens, time) is committed to a SQLite cache (:class:`LabelCache`) keyed by
``(model, prompt hash, qid, docno)`` as soon as it arrives, so a rerun sends no request for a pair
already answered and a killed run resumes where it stopped.  Requests go out ``concurrency`` at a
time; 429, 408/409, 5xx, timeouts and connection errors are retried with exponential backoff (and
the server's ``Retry-After``); an answer without exactly one parsable label is kept as
``malformed`` and counted, never turned into a label.  The API key comes from the environment (or
the ``api_key`` argument) and is neither printed nor stored.  A refused key, an unknown model or an
endpoint that cannot be reached stops the run (:class:`LLMJudgeError`); the answers so far stay cached.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import random
import re
import sqlite3
import string
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd

from .._validation import InputError, check_int

__all__ = ["LLMJudge", "LLMJudgeResult", "LLMJudgeError", "LabelCache", "PromptTemplate", "UMBRELA_PROMPT",
           "parse_label", "label_distribution"]

#: the default user prompt: UMBRELA's zero-shot prompt (Upadhyay et al. 2024), which follows Thomas et al.
#: (2024)'s: the 0-3 scale with its meanings, the steps to weigh, and one line ``##final score: N``
UMBRELA_PROMPT = """\
Given a query and a passage, give a score on an integer scale of 0 to 3, where:
0 = the passage has nothing to do with the query,
1 = the passage seems related to the query but does not answer it,
2 = the passage has some answer for the query, but the answer may be a bit unclear, or hidden among extraneous \
information,
3 = the passage is dedicated to the query and contains the exact answer.

Important instruction: assign category 1 if the passage is somewhat related to the topic but not completely, \
category 2 if the passage presents something very important related to the entire topic but also has some extra \
information, and category 3 if the passage only and entirely refers to the topic. If none of these fits, give \
category 0.

Query: {query}
Passage: {passage}

Split this problem into steps:
Consider the underlying intent of the search.
Measure how well the content matches a likely intent of the query (M).
Measure how trustworthy the passage is (T).
Consider the aspects above and the relative importance of each, and decide on a final score (O). The final score \
must be an integer only.
Do not provide any code in the result. Give the score in the format ##final score: score, without any reasoning."""

UMBRELA_SYSTEM = "You are a search quality rater evaluating the relevance of passages."
#: the answer must hold exactly one match; its group is the label
UMBRELA_PATTERN = r"##\s*final\s+score\s*:\s*\**\s*([0-3])(?![0-9.])"
FIELDS = ("query", "description", "narrative", "passage", "qid", "docno")
RETRYABLE = (408, 409, 429)


@dataclass(frozen=True)
class PromptTemplate:
    """The messages sent for a pair: ``system`` and ``user`` templates (``str.format`` fields ``{query}``,
    ``{description}``, ``{narrative}``, ``{passage}``, ``{qid}``, ``{docno}``; literal braces doubled),
    the ``pattern`` whose one group is the label, the ``scale`` of labels, and generation settings."""

    user: str = UMBRELA_PROMPT
    system: str | None = UMBRELA_SYSTEM
    pattern: str = UMBRELA_PATTERN
    scale: tuple[int, ...] = (0, 1, 2, 3)
    max_passage_chars: int | None = 4000
    temperature: float = 0.0
    max_tokens: int = 100
    source: str = "UMBRELA (default)"

    def __post_init__(self) -> None:
        for name, text in (("user", self.user), ("system", self.system or "")):
            try:
                used = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
            except ValueError as exc:
                raise InputError(f"{self.source}: the {name} template is not a valid format string ({exc}); "
                                 f"double literal braces {{{{ }}}}") from None
            bad = sorted(used - set(FIELDS))
            if bad:
                raise InputError(f"{self.source}: unknown field(s) {bad} in the {name} template; expected among "
                                 f"{list(FIELDS)} (double literal braces)")
        if "{passage}" not in self.user:
            raise InputError(f"{self.source}: the user template never shows the document: it needs {{passage}}")
        try:
            rx = re.compile(self.pattern)
        except re.error as exc:
            raise InputError(f"{self.source}: the label pattern is not a regular expression ({exc})") from None
        if rx.groups != 1:
            raise InputError(f"{self.source}: the label pattern needs exactly one group (the label), has {rx.groups}")

    @classmethod
    def from_file(cls, path: str | os.PathLike, **settings: Any) -> "PromptTemplate":
        """A template file: the user message; or sections ``[system]`` and ``[user]`` (each a line of its own)."""
        p = Path(path)
        if not p.is_file():
            raise InputError(f"{p}: no such prompt template file")
        text = p.read_text(encoding="utf-8")
        parts = re.split(r"^\[(system|user)\]\s*$", text, flags=re.M)
        if len(parts) == 1:
            return cls(user=text.strip("\n"), system=None, source=str(p), **settings)
        sections = {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts), 2)}
        if parts[0].strip():
            raise InputError(f"{p}: text before the first [system] / [user] section: {parts[0].strip()[:40]!r}")
        if "user" not in sections:
            raise InputError(f"{p}: a [system] section needs a [user] section too")
        return cls(user=sections["user"], system=sections.get("system"), source=str(p), **settings)

    @property
    def hash(self) -> str:
        """SHA-256 (first 16 hex digits) of everything that shapes the request and its reading."""
        key = json.dumps({"user": self.user, "system": self.system, "pattern": self.pattern, "scale": self.scale,
                          "max_passage_chars": self.max_passage_chars, "temperature": self.temperature,
                          "max_tokens": self.max_tokens}, sort_keys=True)
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    def messages(self, fields: Mapping[str, str]) -> list[dict[str, str]]:
        passage = fields["passage"]
        if self.max_passage_chars is not None and len(passage) > self.max_passage_chars:
            passage = passage[:self.max_passage_chars]
        values = dict(fields, passage=passage)
        out = [{"role": "system", "content": self.system.format_map(values)}] if self.system else []
        return out + [{"role": "user", "content": self.user.format_map(values)}]


def parse_label(text: str | None, pattern: str = UMBRELA_PATTERN,
                scale: tuple[int, ...] = (0, 1, 2, 3)) -> tuple[int | None, int | None]:
    """``(label, character offset of the label)`` when ``text`` holds exactly one match of ``pattern`` whose
    group is a label of ``scale``; ``(None, None)`` otherwise (no match, several, or a label off the scale)."""
    if not text:
        return None, None
    found = list(re.finditer(pattern, text, flags=re.I))
    if len(found) != 1:
        return None, None
    try:
        label = int(found[0].group(1))
    except ValueError:
        return None, None
    return (label, found[0].start(1)) if label in scale else (None, None)


def label_distribution(tokens: list[tuple[str, float, list[tuple[str, float]]]] | None, offset: int,
                       scale: tuple[int, ...] = (0, 1, 2, 3)) -> np.ndarray | None:
    """The label distribution from the log-probabilities of the token that holds the label.

    ``tokens``: ``(token, logprob, [(alternative, logprob), ...])`` per generated token; ``offset``: the
    label's character offset in the answer.  The alternatives at that position that are labels of the
    scale (surrounding spaces ignored), exponentiated and normalised; None when the tokens are absent,
    do not spell the answer, or the label shares its token with other characters."""
    if not tokens:
        return None
    pos = 0
    for tok, lp, top in tokens:
        end = pos + len(tok)
        if pos <= offset < end:
            if not tok.strip().isdigit():
                return None
            mass = {}
            for alt, alp in list(top) + [(tok, lp)]:
                s = alt.strip()
                if s.isdigit() and int(s) in scale and math.isfinite(alp):
                    mass[int(s)] = max(mass.get(int(s), -math.inf), alp)
            if not mass:
                return None
            top_lp = max(mass.values())
            p = np.array([math.exp(mass[k] - top_lp) if k in mass else 0.0 for k in scale])
            return p / p.sum()
        pos = end
    return None


class LabelCache:
    """The SQLite file of answers, one row per ``(model, prompt_hash, qid, docno)``, committed one by one."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise InputError(f"{self.path}: the directory {self.path.parent} does not exist")
        try:
            self._conn = sqlite3.connect(self.path, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a committed answer survives the process being killed (the resume's case);
            # only a power loss can drop the last few, which are then asked again.  FULL would add an
            # fsync per answer, most of the judge's own work per request
            self._conn.execute("PRAGMA synchronous=NORMAL")
            with self._conn:
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS answers (model TEXT NOT NULL, prompt_hash TEXT NOT NULL, "
                    "qid TEXT NOT NULL, docno TEXT NOT NULL, status TEXT NOT NULL, label INTEGER, "
                    "probabilities TEXT, raw TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, "
                    "seconds REAL, time TEXT NOT NULL, PRIMARY KEY (model, prompt_hash, qid, docno))")
                self._conn.execute("CREATE TABLE IF NOT EXISTS prompts (prompt_hash TEXT PRIMARY KEY, "
                                   "template TEXT NOT NULL)")
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{self.path}: not a label cache ({exc})") from None

    def add_prompt(self, template: PromptTemplate) -> None:
        with self._conn:
            self._conn.execute("INSERT OR IGNORE INTO prompts VALUES (?, ?)", (template.hash, json.dumps(
                {"user": template.user, "system": template.system, "pattern": template.pattern,
                 "scale": list(template.scale), "max_passage_chars": template.max_passage_chars,
                 "temperature": template.temperature, "max_tokens": template.max_tokens})))

    def answers(self, model: str | None = None, prompt_hash: str | None = None) -> pd.DataFrame:
        """The stored answers (all, or of one model and prompt) as a frame."""
        where, args = [], []
        for col, val in (("model", model), ("prompt_hash", prompt_hash)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = "SELECT * FROM answers" + (" WHERE " + " AND ".join(where) if where else "")
        return pd.read_sql_query(sql, self._conn, params=args, dtype={"qid": str, "docno": str})

    def put(self, row: dict[str, Any]) -> None:
        """Store one answer and commit before returning."""
        with self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO answers (model, prompt_hash, qid, docno, status, label, probabilities, raw, "
                "prompt_tokens, completion_tokens, seconds, time) VALUES (:model, :prompt_hash, :qid, :docno, "
                ":status, :label, :probabilities, :raw, :prompt_tokens, :completion_tokens, :seconds, :time)", row)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "LabelCache":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class LLMJudgeError(InputError):
    """The endpoint refused the whole run (authentication, unknown model, unreachable after retries)."""


@dataclass(eq=False)
class LLMJudgeResult:
    """What :meth:`LLMJudge.judge` gives: ``labels`` (``qid, docno, label, probability, expected, p0..pK``: the
    format :func:`~pyterrier_noise.io.read_cheap_qrels` reads; ``probability`` is ``P(label >= rel)`` and
    ``expected`` the distribution's mean, NaN without log-probabilities), ``failures`` (``qid, docno,
    status, detail``: malformed answers and pairs left without an answer) and ``summary`` (counts)."""

    labels: pd.DataFrame
    failures: pd.DataFrame
    summary: dict[str, Any] = field(default_factory=dict)

    def write(self, path: str | os.PathLike) -> Path:
        """The labels as TSV (``.tsv``, a header line) or JSON lines (``.jsonl``), written atomically."""
        from .._output import atomic_write
        p = Path(path)
        labels = self.labels
        if labels["probability"].isna().any():     # read_cheap_qrels takes a probability column whole or not at all
            from .._validation import announce
            n = int(labels["probability"].isna().sum())
            if n < len(labels):
                announce(f"{p}: {n} of {len(labels)} labelled pairs have no label distribution (the server gave no "
                         f"log-probabilities for them): the file has labels only")
            labels = labels[["qid", "docno", "label"]]
        if p.suffix == ".jsonl":
            data = labels.to_json(orient="records", lines=True)
        elif p.suffix == ".tsv":
            data = labels.to_csv(sep="\t", index=False, float_format="%.6g", na_rep="")
        else:
            raise InputError(f"{p}: write the labels to a .tsv or .jsonl file")
        return atomic_write(p, data.encode())

    def summary_text(self) -> str:
        s = self.summary
        tail = f", {s['requests_per_second']:.1f} requests/s" if s.get("requests_per_second") else ""
        return (f"{s['pairs']} pairs: {s['labelled']} labelled ({s['cached']} from the cache, {s['answered']} "
                f"answered now), {s['malformed']} malformed, {s['failed']} without an answer; {s['requests']} "
                f"requests ({s['retries']} retries: {s['retry_reasons'] or 'none'}), {s['prompt_tokens']} prompt + "
                f"{s['completion_tokens']} completion tokens, {s['seconds']:.1f} s{tail}")


@dataclass
class LLMJudge:
    """A relevance judge behind an OpenAI-compatible chat-completions endpoint.

    Args:
        model: the model name the endpoint serves.
        cache: the SQLite answer cache (:class:`LabelCache`); answers are reused across runs.
        base_url: the endpoint (e.g. ``http://127.0.0.1:8000/v1``); default: the ``openai`` client's
            (``OPENAI_BASE_URL`` or OpenAI's).
        api_key: default the environment variable ``api_key_env``; never printed or stored.
        template: the prompt (:class:`PromptTemplate`; default UMBRELA's).
        concurrency: requests in flight at once.
        retries: retries of a request after a 429 / 408 / 409 / 5xx answer, a timeout or a connection error.
        timeout: seconds before a request is abandoned (then retried).
        logprobs: ask for the top log-probabilities (the label distribution); servers that do not give
            them answer without, and the distribution is then NaN.
        rel: the label from which a pair counts as relevant in ``probability`` (default 1).
        backoff: the first retry's wait in seconds (doubled at each retry, with jitter, at most 30 s).
    """

    model: str
    cache: str | os.PathLike
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str = "OPENAI_API_KEY"
    template: PromptTemplate = field(default_factory=PromptTemplate)
    concurrency: int = 4
    retries: int = 5
    timeout: float = 60.0
    logprobs: bool = True
    rel: int = 1
    backoff: float = 0.5
    retry_malformed: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise InputError("model: expected the model name the endpoint serves")
        self.concurrency = check_int("concurrency", self.concurrency, 1)
        self.retries = check_int("retries", self.retries, 0)
        if not self.timeout > 0:
            raise InputError(f"timeout: expected seconds > 0, got {self.timeout!r}")

    # -- the pairs' texts ------------------------------------------------------------------------

    def _fields(self, pairs: pd.DataFrame, topics: Mapping[str, Any],
                documents: Mapping[str, str] | Callable[[str], str | None]) -> tuple[list[dict], list[dict]]:
        """The prompt fields of each pair, and the pairs that cannot be asked (no document or topic text)."""
        get = documents if callable(documents) else documents.get
        ready, missing = [], []
        for qid, docno in zip(pairs["qid"], pairs["docno"]):
            t = topics.get(qid)
            if isinstance(t, str):
                query, desc, narr = t, "", ""
            else:
                query = getattr(t, "title", "") or getattr(t, "description", "") if t is not None else ""
                desc, narr = getattr(t, "description", "") or "", getattr(t, "narrative", "") or ""
            text = get(docno)
            if not query:
                missing.append({"qid": qid, "docno": docno, "status": "no topic", "detail": "no text for the topic"})
            elif text is None:
                missing.append({"qid": qid, "docno": docno, "status": "no document",
                                "detail": "the document is not in the collection"})
            else:
                ready.append({"qid": qid, "docno": docno, "query": query, "description": desc, "narrative": narr,
                              "passage": str(text)})
        return ready, missing

    # -- the run ---------------------------------------------------------------------------------

    def judge(self, pairs: Any, topics: Mapping[str, Any],
              documents: Mapping[str, str] | Callable[[str], str | None], *, progress: bool = False) -> LLMJudgeResult:
        """Label ``pairs`` (a frame with ``qid, docno``): cached answers are reused, the others requested.

        ``topics``: ``{qid: text}`` or ``{qid: Topic}`` (title, description, narrative); ``documents``:
        ``{docno: text}`` or a lookup function (e.g. :meth:`pyterrier_noise.web.Collection.document`)."""
        if not isinstance(pairs, pd.DataFrame) or not {"qid", "docno"} <= set(pairs.columns):
            raise InputError("pairs: expected a frame with columns qid and docno")
        pairs = pairs[["qid", "docno"]].astype(str).drop_duplicates(ignore_index=True)
        start = time.perf_counter()
        cache = LabelCache(self.cache)
        try:
            cache.add_prompt(self.template)
            stored = cache.answers(self.model, self.template.hash)
            done = stored[stored["status"].isin(("ok",) if self.retry_malformed else ("ok", "malformed"))]
            key = pd.MultiIndex.from_frame(done[["qid", "docno"]])
            todo = pairs[~pd.MultiIndex.from_frame(pairs).isin(key)]
            ready, missing = self._fields(todo, topics, documents)
            stats: dict[str, Any] = {"requests": 0, "retries": 0, "retry_reasons": {}, "prompt_tokens": 0,
                                     "completion_tokens": 0, "server_seconds": 0.0}
            failed: list[dict] = list(missing)
            if ready:
                failed += asyncio.run(self._run(ready, cache, stats, progress))
            stored = cache.answers(self.model, self.template.hash)
        finally:
            cache.close()
        return self._result(pairs, stored, failed, stats, len(pairs) - len(todo), time.perf_counter() - start)

    def _result(self, pairs: pd.DataFrame, stored: pd.DataFrame, failed: list[dict], stats: dict, n_cached: int,
                seconds: float) -> LLMJudgeResult:
        mine = pairs.merge(stored, on=["qid", "docno"], how="inner")
        ok = mine[mine["status"] == "ok"].reset_index(drop=True)
        scale = self.template.scale
        probs = np.full((len(ok), len(scale)), np.nan)
        has = ok["probabilities"].notna().to_numpy()
        if has.any():          # one JSON list of len(scale) numbers per labelled pair, split at once
            parts = ok.loc[has, "probabilities"].str.strip("[]").str.split(",", expand=True)
            probs[has] = parts.to_numpy(dtype=np.float64)
        labels = pd.DataFrame({"qid": ok["qid"], "docno": ok["docno"], "label": ok["label"].astype(np.int64)})
        values = np.asarray(scale, dtype=np.float64)
        labels["probability"] = probs[:, values >= self.rel].sum(axis=1)
        labels["expected"] = probs @ values
        for k, v in enumerate(scale):
            labels[f"p{v}"] = probs[:, k]
        bad = mine[mine["status"] == "malformed"]
        fail = pd.concat([pd.DataFrame({"qid": bad["qid"], "docno": bad["docno"], "status": "malformed",
                                        "detail": bad["raw"].fillna("").str.slice(0, 200)}),
                          pd.DataFrame(failed, columns=["qid", "docno", "status", "detail"])], ignore_index=True)
        fail = fail.drop_duplicates(["qid", "docno"], keep="last").reset_index(drop=True)
        answered = stats.get("answered", 0)
        summary = {"model": self.model, "prompt_hash": self.template.hash, "prompt": self.template.source,
                   "pairs": int(len(pairs)), "labelled": int(len(labels)), "cached": int(n_cached),
                   "answered": int(answered), "malformed": int((fail["status"] == "malformed").sum()),
                   "failed": int((fail["status"] != "malformed").sum()),
                   "failure_reasons": fail[fail["status"] != "malformed"]["status"].value_counts().to_dict(),
                   "requests": stats["requests"], "retries": stats["retries"],
                   "retry_reasons": dict(stats["retry_reasons"]), "prompt_tokens": stats["prompt_tokens"],
                   "completion_tokens": stats["completion_tokens"], "seconds": seconds,
                   "requests_per_second": stats["requests"] / seconds if stats["requests"] and seconds > 0 else None,
                   "with_probabilities": int(np.isfinite(probs).all(axis=1).sum())}
        return LLMJudgeResult(labels, fail, summary)

    async def _run(self, ready: list[dict], cache: LabelCache, stats: dict, progress: bool) -> list[dict]:
        """Ask for every pair of ``ready``, ``concurrency`` at a time; each answer committed as it arrives."""
        try:
            import openai
        except ImportError:
            raise InputError("the LLM judge needs the openai client: pip install 'pyterrier-noise[llm]'") from None
        from .._progress import progress_bar
        key = self.api_key if self.api_key is not None else os.environ.get(self.api_key_env)
        if key is None:
            key = "none"       # local servers (vLLM, Ollama, llama.cpp) take any key
        client = openai.AsyncOpenAI(base_url=self.base_url, api_key=key, timeout=self.timeout, max_retries=0)
        queue: asyncio.Queue = asyncio.Queue()
        for item in ready:
            queue.put_nowait(item)
        failed: list[dict] = []
        fatal: list[BaseException] = []
        bar = progress_bar(total=len(ready), desc="llm-judge", unit="pair", enabled=progress)
        stats["answered"] = 0

        async def worker() -> None:
            while not fatal:
                try:
                    item = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    row = await self._ask(client, openai, item, stats)
                except LLMJudgeError as exc:
                    fatal.append(exc)
                    return
                if row.get("status") in ("ok", "malformed"):
                    cache.put(row)
                    stats["answered"] += 1
                else:
                    failed.append(row)
                bar.update(1)

        try:
            await asyncio.gather(*(worker() for _ in range(min(self.concurrency, len(ready)))))
        finally:
            bar.close()
            await client.close()
        if fatal:
            raise fatal[0]
        return failed

    async def _ask(self, client: Any, openai: Any, item: dict, stats: dict) -> dict:
        """One pair: the request with retries; the stored row, or a failure row."""
        messages = self.template.messages(item)
        extra: dict[str, Any] = {"logprobs": True, "top_logprobs": len(self.template.scale)} if self.logprobs else {}
        detail = ""
        for attempt in range(self.retries + 1):
            if attempt:
                wait = min(self.backoff * 2 ** (attempt - 1), 30.0) * (0.5 + random.random())
                await asyncio.sleep(max(wait, _retry_after(detail)))
            stats["requests"] += 1
            t0 = time.perf_counter()
            try:
                resp = await client.chat.completions.create(model=self.model, messages=messages,
                                                            temperature=self.template.temperature,
                                                            max_tokens=self.template.max_tokens, **extra)
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                reason = "timeout" if isinstance(exc, openai.APITimeoutError) else "connection"
                detail = f"{reason}: {exc}"
            except openai.APIStatusError as exc:
                code = exc.status_code
                if code in (401, 403):
                    raise LLMJudgeError(f"the endpoint refused the API key (HTTP {code}); set {self.api_key_env} "
                                        f"(it is read from the environment, never stored)") from None
                if code == 404:
                    raise LLMJudgeError(f"the endpoint has no model {self.model!r} or no chat-completions route "
                                        f"(HTTP 404): check --model and --base-url (it usually ends in /v1)") from None
                if code not in RETRYABLE and code < 500:
                    return {"qid": item["qid"], "docno": item["docno"], "status": f"HTTP {code}",
                            "detail": str(exc)[:200]}
                reason = f"HTTP {code}"
                detail = f"{reason}: retry-after={exc.response.headers.get('retry-after', '')}"
            else:
                return self._row(item, resp, time.perf_counter() - t0, stats)
            stats["retries"] += attempt < self.retries
            stats["retry_reasons"][reason] = stats["retry_reasons"].get(reason, 0) + (attempt < self.retries)
        if reason == "connection":      # nothing listens there: every other pair would wait as long
            raise LLMJudgeError(f"cannot reach the endpoint {self.base_url or '(the openai default)'} after "
                                f"{self.retries + 1} attempts ({detail[:160]}); check --base-url and that the "
                                f"server runs (the answers so far are in the cache)")
        return {"qid": item["qid"], "docno": item["docno"], "status": reason,
                "detail": f"no answer after {self.retries + 1} attempts ({detail[:160]})"}

    def _row(self, item: dict, resp: Any, seconds: float, stats: dict) -> dict:
        choice = resp.choices[0] if resp.choices else None
        text = (choice.message.content if choice is not None and choice.message is not None else None) or ""
        usage = getattr(resp, "usage", None)
        pt, ct = (getattr(usage, "prompt_tokens", 0) or 0), (getattr(usage, "completion_tokens", 0) or 0)
        stats["prompt_tokens"] += pt
        stats["completion_tokens"] += ct
        label, offset = parse_label(text, self.template.pattern, self.template.scale)
        probs = None
        if label is not None and choice.logprobs is not None and choice.logprobs.content:
            toks = [(t.token, t.logprob, [(a.token, a.logprob) for a in (t.top_logprobs or [])])
                    for t in choice.logprobs.content]
            if "".join(t[0] for t in toks) == text:
                probs = label_distribution(toks, offset, self.template.scale)
        return {"model": self.model, "prompt_hash": self.template.hash, "qid": item["qid"], "docno": item["docno"],
                "status": "ok" if label is not None else "malformed", "label": label,
                "probabilities": None if probs is None else json.dumps([float(x) for x in probs]),
                "raw": text, "prompt_tokens": pt, "completion_tokens": ct, "seconds": seconds,
                "time": datetime.now(timezone.utc).isoformat(timespec="seconds")}


def _retry_after(detail: str) -> float:
    """The server's ``Retry-After`` seconds in a retry's detail (at most 60), else 0."""
    m = re.search(r"retry-after=([0-9.]+)", detail)
    return min(float(m.group(1)), 60.0) if m else 0.0
