"""Reading measures as people spell them: ir_measures strings and objects, trec_eval's names,
and a "did you mean" for the rest (:func:`parse_measure`), and the engine spec of a measure
(:func:`to_spec`), both from the capability table (:mod:`.table`)."""
from __future__ import annotations

import difflib
import re

import ir_measures
from ir_measures.measures import Measure

from .._validation import InputError
from ..engine import MeasureSpec
from .base import NoiseMeasure, check_params
from .table import CAPABILITIES, OWN_MEASURES, TREC_EVAL_NAMES

__all__ = ["parse_measure", "to_spec", "measure_label"]

_EXAMPLES = ("examples: RBP(p=0.8), INST(T=3,max_rel=2), AP, AP@100, nDCG@10, P@10, R@100, RR, Rprec, Bpref, "
             "Success@10, Judged@10, IPrec@0.5, ERR@20, NumRelRet")

def _from_trec_eval(text: str) -> str | None:
    """The ir_measures string of a trec_eval measure name (ir_measures' own
    ``parse_trec_measure``), or None: accepted where the name is trec_eval's and means one measure
    the engine computes: ``map`` (AP), ``map_cut_10`` (AP@10), ``P_10`` / ``P.10``, ``recall_100``
    (R@100), ``ndcg`` / ``ndcg_cut_10``, ``recip_rank`` (RR), ``Rprec``, ``bpref``, ``success_10``,
    ``iprec_at_recall_0.50`` (IPrec@0.5), ``num_ret``, ``num_rel``, ``num_rel_ret``."""
    try:
        found = ir_measures.parse_trec_measure(text)
    except (ValueError, KeyError, AttributeError, TypeError, AssertionError):
        return None
    if len(found) != 1 or found[0].NAME not in CAPABILITIES:
        return None
    return str(found[0])


def _known_names() -> list[str]:
    return [*CAPABILITIES, *OWN_MEASURES, *TREC_EVAL_NAMES]


def _did_you_mean(text: str) -> str:
    """' (did you mean X?)' for a misspelt measure: case, separators and trec_eval-like forms."""
    head, tail = re.match(r"([^@(]*)(.*)$", text).groups()
    by_lower = {n.lower(): n for n in _known_names()}
    guess = by_lower.get(head.lower())
    if guess is None:
        trec = _from_trec_eval(text.lower()) or _from_trec_eval(text.replace("@", "_"))
        if trec:
            return f" (did you mean {trec}?)"
        close = difflib.get_close_matches(head.lower(), list(by_lower), n=1, cutoff=0.6)
        guess = by_lower[close[0]] if close else None
    if guess is None:
        return ""
    guess = TREC_EVAL_NAMES.get(guess, guess)
    return f" (did you mean {guess}{tail}?)"


def _is_ir_measures_name(text: str) -> bool:
    return re.match(r"[^@(]*", text).group(0) in ir_measures.measures.registry


def parse_measure(measure: Measure | str) -> Measure:
    """An ir_measures measure object from an object or a string: ir_measures syntax
    (``"nDCG@10"``, ``"RBP(p=0.8)"``), the package's measures (``"RBPResidual(p=0.8)"``) or
    trec_eval's names (``"ndcg_cut_10"``, ``"map"``, ``"P_10"``).  A misspelt name is refused with
    the closest known one (``ndcg@10`` -> "did you mean nDCG@10?")."""
    if isinstance(measure, Measure):
        return measure
    if not isinstance(measure, str):
        raise InputError(f"a measure must be an ir_measures measure or a string such as 'nDCG@10', got "
                         f"{type(measure).__name__} {measure!r}")
    text = measure.strip()
    if not _is_ir_measures_name(text):
        text = _from_trec_eval(text) or text
    at = re.search(r"@(.*)$", text)
    if at and not re.fullmatch(r"\d+(\.\d+)?", at.group(1)):
        raise InputError(f"measure {measure!r}: the value after @ must be a positive number (a rank cutoff "
                         f"such as @10, or IPrec's recall level such as @0.5), got {at.group(1)!r}")
    try:
        return ir_measures.parse_measure(text)
    except NameError:
        raise InputError(f"unknown measure {measure!r}{_did_you_mean(text)}; {_EXAMPLES}") from None
    except (ValueError, SyntaxError, AssertionError) as exc:
        raise InputError(f"cannot read measure {measure!r}: parameters are written name=value with numbers, "
                         f"strings in quotes or True/False, e.g. RBP(p=0.8) ({exc}); {_EXAMPLES}") from None


def measure_label(measure: Measure | str) -> str:
    """The column label of a measure: a string as written (trec_eval's names too, as
    ``pt.Experiment`` labels them: ``"map"``), an object as ``str(measure)``."""
    return measure.strip() if isinstance(measure, str) else str(measure)


def to_spec(measure: Measure | str) -> tuple[MeasureSpec, str]:
    """Engine spec and tie policy of a measure given as an object or as a string
    (:func:`parse_measure`), read through the capability table."""
    measure = parse_measure(measure)
    if isinstance(measure, NoiseMeasure):
        return measure.spec(), measure.ties
    cap = CAPABILITIES.get(measure.NAME)
    if cap is None or type(measure) is not type(ir_measures.measures.registry.get(measure.NAME)):
        raise InputError(f"measure {measure} is not computed by the pyterrier-noise engine; it computes "
                         f"{', '.join(CAPABILITIES)} and the package's {', '.join(OWN_MEASURES)}")
    check_params(measure, cap.extra)
    fields: dict = {}
    for key, value in measure.params.items():
        target = cap.params.get(key)
        if target is None:
            _refuse_param(measure, key, value)
            continue
        fields[target] = value
    family = cap.family_with_rel if cap.family_with_rel and "rel" in fields else cap.family
    if cap.max_rel_replaces_rel and "max_rel" in fields:   # graded gains from max_rel, not rel
        fields["rel"] = 1
    fields = {**cap.defaults, **fields}
    if "rel" in fields:
        fields["rel"] = float(fields["rel"])
    if "max_rel" in fields:
        fields["max_rel"] = float(fields["max_rel"])
    for key in ("p", "T", "recall"):
        if key in fields:
            fields[key] = float(fields[key])
    if "gains" in fields:
        gains = fields["gains"]
        if not isinstance(gains, dict) or not all(isinstance(v, (int, float)) for v in gains.values()):
            raise InputError(f"measure {measure}: gains must map labels to numbers, e.g. gains={{0:0,1:1,2:3}}")
        fields["gains"] = tuple(sorted((float(k), float(v)) for k, v in gains.items())) or None
    if "judged_only" in fields:
        fields["judged_only"] = bool(fields["judged_only"])
    return MeasureSpec(family, **fields).validate(), "trec_eval"


def _refuse_param(measure: Measure, key: str, value) -> None:
    """ir_measures parameters the engine reads no further: accepted at their neutral value, else refused."""
    if key == "min_rel" and value in (0, None):
        return
    if key == "dcg" and value == "log2":
        return
    raise InputError(f"{measure}: {key}={value!r} is not computed by the engine "
                     f"(supported: {'min_rel=0' if key == 'min_rel' else 'dcg=log2, trec_eval' + chr(39) + 's'})")
