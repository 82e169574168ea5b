"""A seeded synthetic TREC-like test collection: the package's embedded default data.

DESIGN.md, "Data for tests, examples and benchmarks": the package needs a collection that works
with no data at all, with systems of varied quality, pooled judgments, unjudged documents and
optional ties.  :func:`make_collection` builds one from a generative model (below) in a few tens of
milliseconds; :func:`default_collection` returns the default one (cached).

Model (all of it vectorised over topics x systems x documents)
---------------------------------------------------------------
*Documents.*  Topic ``t`` has ``n_docs_per_topic`` candidate documents ``d<t>-<n>`` (``n``
zero-padded, so the docno order is the numeric order).  Its generality ``g_t ~ Beta(1.2, 14)``
(mean 0.08, right-skewed: a few topics have many relevant documents, most have few) is the chance
that a document is relevant; a relevant document has relevance level ``k >= 1`` with probability
proportional to ``0.5 ** (k - 1)``, so each grade is half as common as the one below.  Every topic
gets at least one relevant document.  The level ``k`` indexes ``grades`` (``label = grades[k]``).

*Systems.*  System ``s`` has a latent quality ``q_s ~ N(0, 1)``; topic ``t`` a difficulty
``h_t ~ N(0, 0.5^2)`` and ``K = 3`` latent traits ``F_t``; each system a loading ``L_s`` on those
traits and an idiosyncratic term ``e_st``.  Its signal-to-noise ratio on the topic is::

    snr_st = exp(mu + a q_s - h_t + b L_s . F_t + c e_st)     (clipped to [0.02, 8])

with ``mu = -0.3, a = 0.55, b = 0.45, c = 0.3``, so effectiveness depends on the system, on the
topic, and on their interaction, and systems with similar loadings do well on the same topics.
``n_variants`` systems are near copies of another ("parent") system, like several runs from one
team: they share the parent's loadings and score scale, and most of its idiosyncratic term and
document noise (correlation 0.9).

*Runs.*  System ``s`` scores document ``d`` of topic ``t`` by a noisy signal of its relevance
level ``k_td``::

    z_std = snr_st k_td + sqrt(rho) u_td + sqrt(1 - rho) v_std,   u, v ~ N(0, 1),  rho = 0.25

where ``u`` is noise shared by all systems (documents every system finds attractive, which makes
runs overlap as real runs do) and ``v`` is the system's own noise.  The reported score is
BM25-like -- positive, about linear in the evidence, with a right tail made by the relevant
documents -- ``score = c_s m_t softplus(z + 3)`` with a per-system scale ``c_s`` and a per-topic
scale ``m_t``.  A run returns the ``depth`` highest-scoring
documents, sorted as trec_eval sorts them (score descending, then docno descending).

*Scores and ties.*  With ``quantise=None`` the scores are float32 values (trec_eval keeps scores
as C floats) and are made strictly distinct within each ranking, so float32 and float64 tools
agree on the order and there are no ties.  ``quantise=d`` rounds the scores to ``d`` decimals,
which creates ties, broken by docno descending in the ``rank`` column.

*Judgments.*  ``qrels`` holds the union of the top ``pool_depth`` documents of the contributing
systems (depth-k pooling, the baseline of Moffat, Webber & Zobel 2007),
labelled with their latent labels; documents outside that pool are unjudged, and non-contributing systems retrieve
many of them.  ``true_qrels`` holds the latent label of every candidate document, the ground
truth for perturbation and selection studies.

Same seed, same collection: all randomness comes from ``numpy.random.default_rng`` streams
spawned from ``seed``; the relevance labels depend only on ``seed``, ``n_topics``,
``n_docs_per_topic`` and ``grades``, so changing the systems or the pool keeps the documents.
"""
from __future__ import annotations

import copy as _copy
import functools
import numbers
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import numpy as np
import pandas as pd

from ._validation import InputError

__all__ = ["SyntheticCollection", "make_collection", "default_collection"]

PathLike = Union[str, os.PathLike]

# Model constants (see the module docstring).  They are chosen so that the default collection
# looks like an ad hoc TREC track: mean P@10 between about 0.1 and 0.7 across systems, about 6%
# of the candidate documents relevant (a few dozen per topic, from a handful to over a hundred),
# a depth-10 pool of half the systems judging about 60 documents per topic, top-10 scores within
# a factor of about 1.3 (as BM25's are), and non-contributing systems with about a third of their
# top 10 unjudged.
_GENERALITY_BETA = (1.2, 14.0)   # topic generality ~ Beta(a, b)
_GRADE_DECAY = 0.5               # P(level k | relevant) ~ decay ** (k - 1)
_DIFFICULTY_SD = 0.5             # topic difficulty h_t
_N_TRAITS = 3                    # latent topic traits (system x topic interaction)
_LOG_SNR_MEAN = -0.3
_QUALITY_WEIGHT = 0.55           # a
_TRAIT_WEIGHT = 0.45             # b
_IDIO_WEIGHT = 0.3               # c
_SNR_RANGE = (0.02, 8.0)
_SHARED_NOISE = 0.25
_VARIANT_QUALITY_SD = 0.2        # a variant's quality = parent's + N(0, sd^2)
_VARIANT_CORRELATION = 0.9       # correlation of a variant's noise with its parent's
_SCORE_SCALE = (np.log(4.0), 0.3)  # per-system score scale c_s ~ lognormal(mu, sigma)
_TOPIC_SCALE_SD = 0.2            # per-topic score scale m_t ~ lognormal(0, sd)
_SCORE_OFFSET = 3.0              # score = c_s m_t softplus(z + offset)
_MAX_DECIMALS = 4                # finer rounding would not be distinct in float32 (trec_eval)


@dataclass(eq=False)
class SyntheticCollection:
    """A synthetic TREC-like test collection made by :func:`make_collection`.

    Attributes:
        topics: ``qid, query`` frame (qids ``"1"`` .. ``"n"``).
        qrels: pooled judgments, ``qid, docno, label`` (integer labels).
        true_qrels: the latent label of every candidate document, ``qid, docno, label``.
        runs: ``{name: frame}``, PyTerrier results ``qid, docno, score, rank`` (rank 0-based),
            rows in qid order, then by score descending and docno descending.
        contributing: names of the systems whose top ``pool_depth`` documents were judged.
        system_quality: latent quality ``q_s`` of each system (a Series indexed by name).
        effectiveness: latent signal-to-noise ratio ``snr_st`` (systems x qids frame).
        variant_of: ``{variant: parent}`` for the systems that are near copies of another.
        params: the arguments the collection was made with.
    """

    topics: pd.DataFrame
    qrels: pd.DataFrame
    true_qrels: pd.DataFrame
    runs: dict[str, pd.DataFrame]
    contributing: list[str]
    system_quality: pd.Series
    effectiveness: pd.DataFrame
    variant_of: dict[str, str]
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        """The system (run) names, in order."""
        return list(self.runs)

    def get_topics(self) -> pd.DataFrame:
        """The topics (a copy), as ``pt.get_dataset(...).get_topics()`` returns them."""
        return self.topics.copy()

    def get_qrels(self, true: bool = False) -> pd.DataFrame:
        """The pooled qrels (or, with ``true=True``, the latent labels of every document); a copy."""
        return (self.true_qrels if true else self.qrels).copy()

    def copy(self) -> "SyntheticCollection":
        """A deep copy (frames included), safe to modify."""
        return _copy.deepcopy(self)

    def metadata(self) -> pd.DataFrame:
        """One row per system: ``run, contributed_judgments (yes/no), variant_of, quality``.

        The columns follow the TREC-COVID ``runs-metadata.csv`` of the shared data.
        """
        names = self.names
        contributing = set(self.contributing)
        return pd.DataFrame({
            "run": names,
            "contributed_judgments": ["yes" if n in contributing else "no" for n in names],
            "variant_of": [self.variant_of.get(n, "") for n in names],
            "quality": self.system_quality.reindex(names).to_numpy(),
        })

    def write_trec(self, directory: PathLike, compress: bool = False) -> Path:
        """Write the collection as TREC files into ``directory`` (created if needed).

        Files: ``qrels.txt`` (pooled, ``qid 0 docno label``), ``true_qrels.txt`` (every
        document), ``topics.txt`` (``qid query`` lines, PyTerrier's ``singleline`` format),
        ``runs/<name>`` (``runs/<name>.gz`` with ``compress=True``; ``qid Q0 docno rank score
        tag`` with 1-based ranks and the run name as tag) and ``runs-metadata.csv``
        (:meth:`metadata`).  Gzip files are byte-identical across calls (no timestamp).
        Returns the directory.
        """
        if not isinstance(compress, (bool, np.bool_)):
            raise InputError(f"argument 'compress': expected True or False, got {compress!r}")
        try:
            root = Path(directory)
        except TypeError:
            raise InputError(f"argument 'directory': expected a path, got {directory!r}") from None
        if root.exists() and not root.is_dir():
            raise InputError(f"argument 'directory': {root} exists and is not a directory")
        (root / "runs").mkdir(parents=True, exist_ok=True)
        _write_qrels(self.qrels, root / "qrels.txt")
        _write_qrels(self.true_qrels, root / "true_qrels.txt")
        (root / "topics.txt").write_text((self.topics["qid"] + " " + self.topics["query"] + "\n").str.cat())
        for name, run in self.runs.items():
            out = pd.DataFrame({"qid": run["qid"], "q0": "Q0", "docno": run["docno"],
                                "rank": run["rank"].to_numpy() + 1, "score": run["score"],
                                "tag": name})
            path = root / "runs" / (name + (".gz" if compress else ""))
            out.to_csv(path, sep=" ", header=False, index=False, lineterminator="\n",
                       compression={"method": "gzip", "mtime": 0} if compress else None)
        self.metadata().to_csv(root / "runs-metadata.csv", index=False, lineterminator="\n")
        return root

    def __repr__(self) -> str:
        p = self.params
        return (f"SyntheticCollection({len(self.topics)} topics, {len(self.runs)} runs to depth "
                f"{p.get('depth')}, {len(self.qrels)} judgments pooled from {len(self.contributing)} "
                f"runs to depth {p.get('pool_depth')}, quantise={p.get('quantise')}, seed={p.get('seed')})")


def _write_qrels(qrels: pd.DataFrame, path: Path) -> None:
    out = pd.DataFrame({"qid": qrels["qid"], "iter": "0", "docno": qrels["docno"], "label": qrels["label"]})
    out.to_csv(path, sep=" ", header=False, index=False, lineterminator="\n")


# ----------------------------------------------------------------------------------------------
# validation


def _int_arg(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InputError(f"argument {name!r}: expected an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise InputError(f"argument {name!r}: expected an integer >= {minimum}, got {value!r}")
    return int(value)


def _grades_arg(grades: Any) -> np.ndarray:
    try:
        values = list(grades)
    except TypeError:
        raise InputError(f"argument 'grades': expected a sequence of integer labels such as (0, 1, 2), "
                         f"got {grades!r}") from None
    if len(values) < 2:
        raise InputError(f"argument 'grades': expected at least two labels (non-relevant and relevant), "
                         f"got {grades!r}")
    for i, g in enumerate(values):
        if isinstance(g, (bool, np.bool_)) or not isinstance(g, numbers.Integral) or g < 0:
            raise InputError(f"argument 'grades': item {i} is {g!r}, expected a non-negative integer")
    arr = np.asarray(values, dtype=np.int64)
    if not (np.diff(arr) > 0).all():
        raise InputError(f"argument 'grades': expected strictly increasing labels, got {grades!r}")
    if arr[0] != 0:
        raise InputError(f"argument 'grades': the first (non-relevant) label must be 0, got {values[0]!r}")
    return arr


def _pool_arg(pool_systems: Any, names: list[str]) -> np.ndarray:
    n = len(names)
    mask = np.zeros(n, dtype=bool)
    if pool_systems is None:
        mask[: (n + 1) // 2] = True
        return mask
    if isinstance(pool_systems, numbers.Integral) and not isinstance(pool_systems, (bool, np.bool_)):
        k = int(pool_systems)
        if not 1 <= k <= n:
            raise InputError(f"argument 'pool_systems': expected a number of systems in 1..{n}, got {k}")
        mask[:k] = True
        return mask
    if isinstance(pool_systems, (str, bytes)) or not isinstance(pool_systems, (Sequence, set, frozenset, np.ndarray)):
        raise InputError(f"argument 'pool_systems': expected None, a number of systems, or a list of system "
                         f"names or indices, got {pool_systems!r}")
    index = {name: i for i, name in enumerate(names)}
    for item in pool_systems:
        if isinstance(item, str):
            if item not in index:
                raise InputError(f"argument 'pool_systems': unknown system {item!r}; the systems are "
                                 f"{names[0]!r} .. {names[-1]!r}")
            mask[index[item]] = True
        elif isinstance(item, numbers.Integral) and not isinstance(item, (bool, np.bool_)) and 0 <= item < n:
            mask[int(item)] = True
        else:
            raise InputError(f"argument 'pool_systems': item {item!r} is neither a system name nor an index "
                             f"in 0..{n - 1}")
    if not mask.any():
        raise InputError("argument 'pool_systems': expected at least one contributing system, got none")
    return mask


# ----------------------------------------------------------------------------------------------
# the generator


def make_collection(
    n_topics: int = 30,
    n_systems: int = 20,
    n_docs_per_topic: int = 500,
    depth: int = 100,
    pool_depth: int = 10,
    pool_systems: int | Sequence[str | int] | None = None,
    grades: Sequence[int] = (0, 1, 2),
    quantise: int | None = None,
    n_variants: int | None = None,
    seed: int = 0,
) -> SyntheticCollection:
    """Generate a seeded synthetic TREC-like collection (the model is in the module docstring).

    The pooled ``qrels`` follow depth-k pooling, the baseline of Moffat, Webber & Zobel 2007
   : the union of the top ``pool_depth`` documents of the contributing systems.
    Memory is about 40 bytes per (system, topic, document).

    Args:
        n_topics: number of topics; qids are ``"1"`` .. ``str(n_topics)``.
        n_systems: number of runs, named ``run01`` .. (zero-padded).
        n_docs_per_topic: candidate documents per topic (each has a latent label).
        depth: documents returned per topic by each run (<= ``n_docs_per_topic``).
        pool_depth: pooling depth k (1 <= k <= ``depth``).
        pool_systems: the contributing systems: ``None`` for the first half (rounded up), an
            integer k for the first k, or a list of names or 0-based indices.
        grades: the labels, non-relevant first: strictly increasing non-negative integers
            starting at 0, e.g. ``(0, 1)`` for binary or ``(0, 1, 2)`` for graded judgments.
        quantise: ``None`` (distinct float32 scores, no ties) or a number of decimals 0..4 to
            round the scores to (creates ties; fewer decimals, more ties).
        n_variants: number of systems that are near copies of another system (same team);
            default ``n_systems // 5``; must leave at least one original system.
        seed: the seed (a non-negative integer); the same seed gives the same collection.

    Returns:
        a :class:`SyntheticCollection`.

    Raises:
        InputError: an argument is out of range (the message names it).
    """
    n_topics = _int_arg("n_topics", n_topics, 1)
    n_systems = _int_arg("n_systems", n_systems, 1)
    n_docs = _int_arg("n_docs_per_topic", n_docs_per_topic, 1)
    depth, pool_depth, grade_values, quantise, n_variants = _check_shape(n_systems, n_docs, depth, pool_depth,
                                                                         grades, quantise, n_variants)
    seed = _int_arg("seed", seed, 0)

    names = [f"run{i + 1:0{max(2, len(str(n_systems)))}d}" for i in range(n_systems)]
    contrib_mask = _pool_arg(pool_systems, names)
    qids = [str(t + 1) for t in range(n_topics)]

    # Independent streams, so that e.g. the documents do not change with the number of systems.
    docs_rng, sys_rng, noise_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    level = _latent_levels(docs_rng, n_topics, n_docs, len(grade_values))
    quality, snr, log_scale, topic_scale, variants, parents = _systems(sys_rng, n_systems, n_topics, n_variants)
    score = _scores(noise_rng, snr, level, log_scale, topic_scale, variants, parents, quantise)
    order, top = _ranked(score, depth, quantise)

    # --- pooled judgments: the top pool_depth of the contributing systems
    judged = np.zeros((n_topics, n_docs), dtype=bool)
    judged[np.arange(n_topics)[None, :, None], order[contrib_mask, :, :pool_depth]] = True
    topics, qrels, true_qrels, runs = _frames(qids, names, n_docs, depth, grade_values[level], judged, order, top)

    return SyntheticCollection(
        topics=topics, qrels=qrels, true_qrels=true_qrels, runs=runs,
        contributing=[n for n, c in zip(names, contrib_mask) if c],
        system_quality=pd.Series(quality, index=pd.Index(names, name="run"), name="quality"),
        effectiveness=pd.DataFrame(snr, index=pd.Index(names, name="run"), columns=pd.Index(qids, name="qid")),
        variant_of={names[v]: names[p] for v, p in zip(variants, parents)},
        params=dict(n_topics=n_topics, n_systems=n_systems, n_docs_per_topic=n_docs, depth=depth,
                    pool_depth=pool_depth, pool_systems=pool_systems, grades=tuple(int(g) for g in grade_values),
                    quantise=quantise, n_variants=n_variants, seed=seed),
    )


def _check_shape(n_systems: int, n_docs: int, depth: Any, pool_depth: Any, grades: Any, quantise: Any,
                 n_variants: Any) -> tuple[int, int, np.ndarray, int | None, int]:
    """:func:`make_collection`'s depth, pool depth, grades, rounding and number of variants, checked."""
    depth = _int_arg("depth", depth, 1)
    if depth > n_docs:
        raise InputError(f"argument 'depth': a run cannot return more documents than a topic has; expected "
                         f"depth <= n_docs_per_topic ({n_docs}), got {depth}")
    pool_depth = _int_arg("pool_depth", pool_depth, 1)
    if pool_depth > depth:
        raise InputError(f"argument 'pool_depth': expected pool_depth <= depth ({depth}), got {pool_depth}")
    grade_values = _grades_arg(grades)
    if quantise is not None:
        if isinstance(quantise, (bool, np.bool_)) or not isinstance(quantise, numbers.Integral) \
                or not 0 <= quantise <= _MAX_DECIMALS:
            raise InputError(f"argument 'quantise': expected None or a number of decimals in 0..{_MAX_DECIMALS} "
                             f"(finer rounding is not distinct in float32, as trec_eval holds scores), "
                             f"got {quantise!r}")
        quantise = int(quantise)
    if n_variants is None:
        n_variants = n_systems // 5
    n_variants = _int_arg("n_variants", n_variants, 0)
    if n_variants >= n_systems:
        raise InputError(f"argument 'n_variants': expected fewer variants than systems ({n_systems}), "
                         f"got {n_variants}")
    return depth, pool_depth, grade_values, quantise, n_variants


def _latent_levels(docs_rng: np.random.Generator, n_topics: int, n_docs: int, n_levels: int) -> np.ndarray:
    """The documents' latent relevance levels (T, D), 0 .. n_levels - 1; every topic has a relevant one."""
    generality = docs_rng.beta(*_GENERALITY_BETA, size=n_topics)
    u = docs_rng.random((n_topics, n_docs))
    rel_probs = _GRADE_DECAY ** np.arange(n_levels - 1)
    cum = np.cumsum(rel_probs / rel_probs.sum())
    cum[-1] = 1.0
    # u < g: relevant, and u / g is uniform on (0, 1): its position in the cumulative grade
    # probabilities picks the level.
    rel_u = u / generality[:, None]
    level = np.where(u < generality[:, None],
                     1 + np.minimum(np.searchsorted(cum, rel_u, side="right"), n_levels - 2), 0)
    no_relevant = ~(level > 0).any(axis=1)
    level[no_relevant, u[no_relevant].argmin(axis=1)] = 1   # every topic has a relevant document
    return level


def _systems(sys_rng: np.random.Generator, n_systems: int, n_topics: int, n_variants: int) -> tuple:
    """The systems: quality, per-topic signal-to-noise (S, T), score scales, and the variants and
    their parents."""
    quality = sys_rng.standard_normal(n_systems)
    difficulty = _DIFFICULTY_SD * sys_rng.standard_normal(n_topics)
    traits = sys_rng.standard_normal((n_topics, _N_TRAITS))
    loadings = sys_rng.standard_normal((n_systems, _N_TRAITS)) / np.sqrt(_N_TRAITS)
    idio = sys_rng.standard_normal((n_systems, n_topics))
    log_scale = _SCORE_SCALE[0] + _SCORE_SCALE[1] * sys_rng.standard_normal(n_systems)
    topic_scale = np.exp(_TOPIC_SCALE_SD * sys_rng.standard_normal(n_topics))
    variants = np.sort(sys_rng.choice(n_systems, size=n_variants, replace=False))
    originals = np.setdiff1d(np.arange(n_systems), variants)
    parents = sys_rng.choice(originals, size=n_variants, replace=True)
    quality_jitter = sys_rng.standard_normal(n_variants)
    scale_jitter = sys_rng.standard_normal(n_variants)
    # parents are never variants, so one assignment per array builds every variant
    r = _VARIANT_CORRELATION
    quality[variants] = quality[parents] + _VARIANT_QUALITY_SD * quality_jitter
    loadings[variants] = loadings[parents]
    idio[variants] = r * idio[parents] + np.sqrt(1 - r * r) * idio[variants]
    log_scale[variants] = log_scale[parents] + 0.05 * scale_jitter

    log_snr = (_LOG_SNR_MEAN + _QUALITY_WEIGHT * quality[:, None] - difficulty[None, :]
               + _TRAIT_WEIGHT * loadings @ traits.T + _IDIO_WEIGHT * idio)
    snr = np.clip(np.exp(log_snr), *_SNR_RANGE)
    return quality, snr, log_scale, topic_scale, variants, parents


def _scores(noise_rng: np.random.Generator, snr: np.ndarray, level: np.ndarray, log_scale: np.ndarray,
            topic_scale: np.ndarray, variants: np.ndarray, parents: np.ndarray, quantise: int | None) -> np.ndarray:
    """The scores of every document by every system (S, T, D): float32, or rounded to ``quantise`` decimals."""
    n_systems, (n_topics, n_docs) = len(snr), level.shape
    r = _VARIANT_CORRELATION
    shared = noise_rng.standard_normal((n_topics, n_docs))
    own = noise_rng.standard_normal((n_systems, n_topics, n_docs))
    own[variants] = r * own[parents] + np.sqrt(1 - r * r) * own[variants]
    z = (snr[:, :, None] * level[None, :, :] + np.sqrt(_SHARED_NOISE) * shared[None]
         + np.sqrt(1 - _SHARED_NOISE) * own)
    # softplus(z + offset): positive, about linear in the signal (like BM25, a sum of term
    # contributions), with a right tail made by the relevant documents.
    scale = np.exp(log_scale)[:, None, None] * topic_scale[None, :, None]
    score = scale * np.logaddexp(0.0, z + _SCORE_OFFSET)
    if quantise is None:
        score = score.astype(np.float32)
    else:
        score = np.round(score, quantise)
    return score


def _ranked(score: np.ndarray, depth: int, quantise: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The top ``depth`` documents of each system and topic in trec_eval order (S, T, depth), and
    their scores as float64 (strictly decreasing without ``quantise``)."""
    n_docs = score.shape[-1]
    # trec_eval order: score descending, then docno descending.  Docnos are zero-padded, so docno
    # order is document-index order; a stable sort of the index-reversed scores puts ties in
    # descending docno order.
    order = n_docs - 1 - np.argsort(-score[..., ::-1], axis=-1, kind="stable")[..., :depth]
    top = np.take_along_axis(score, order, axis=-1)
    if quantise is None:
        top = _break_ties(top)
    else:
        # trec_eval compares scores as float32: the rounded scores must keep their order there
        as32 = top.astype(np.float32)
        if ((as32[..., :-1] == as32[..., 1:]) != (top[..., :-1] == top[..., 1:])).any():
            raise InputError(f"argument 'quantise': {quantise} decimals are finer than float32 can hold at "
                             f"these scores (up to {top.max():.1f}), so trec_eval would see other ties; "
                             f"use fewer decimals")
    return order, top.astype(np.float64)


def _frames(qids: list[str], names: list[str], n_docs: int, depth: int, labels: np.ndarray, judged: np.ndarray,
            order: np.ndarray, top: np.ndarray) -> tuple:
    """The topics, pooled qrels, complete qrels and runs frames."""
    n_topics = len(qids)
    width = len(str(n_docs - 1))
    doc_numbers = pd.Series(np.arange(n_docs)).astype(str).str.zfill(width)
    prefixes = pd.Series(np.repeat([f"d{q}-" for q in qids], n_docs))
    docnos = (prefixes + pd.concat([doc_numbers] * n_topics, ignore_index=True)).to_numpy(dtype=object)
    docnos = docnos.reshape(n_topics, n_docs)
    qid_col = np.repeat(np.asarray(qids, dtype=object), n_docs).reshape(n_topics, n_docs)

    true_qrels = pd.DataFrame({"qid": qid_col.ravel(), "docno": docnos.ravel(), "label": labels.ravel()})
    qrels = pd.DataFrame({"qid": qid_col[judged], "docno": docnos[judged], "label": labels[judged]})
    topics = pd.DataFrame({"qid": qids, "query": [f"synthetic topic {q}" for q in qids]})

    run_qids = np.repeat(np.asarray(qids, dtype=object), depth)
    run_ranks = np.tile(np.arange(depth, dtype=np.int64), n_topics)
    topic_rows = np.arange(n_topics)[:, None]
    runs = {name: pd.DataFrame({"qid": run_qids, "docno": docnos[topic_rows, order[s]].ravel(),
                                "score": top[s].ravel(), "rank": run_ranks})
            for s, name in enumerate(names)}
    return topics, qrels, true_qrels, runs


def _break_ties(top: np.ndarray) -> np.ndarray:
    """Make float32 scores sorted descending along the last axis strictly decreasing.

    A tie (rare: two float32 scores that collide) is broken by raising the earlier score (the one
    trec_eval already puts first, by docno) by one float32 step, which keeps the order.  Repeated
    until no ties remain; each pass is vectorised and one pass almost always suffices.
    """
    top = top.copy()
    while True:
        tied = np.zeros(top.shape, dtype=bool)
        tied[..., :-1] = top[..., :-1] <= top[..., 1:]
        if not tied.any():
            return top
        top[tied] = np.nextafter(top[tied], np.float32(np.inf))


@functools.lru_cache(maxsize=1)
def _default() -> SyntheticCollection:
    return make_collection()


def default_collection() -> SyntheticCollection:
    """The default synthetic collection, ``make_collection()`` with its default arguments.

    30 topics, 20 runs to depth 100 (4 of them near copies of another run), graded labels 0/1/2
    pooled to depth 10 from the first 10 runs, no ties.  Generated once and cached; each
    call returns a fresh copy, so callers may modify it.
    """
    return _default().copy()
