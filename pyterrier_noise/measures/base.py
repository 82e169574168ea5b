"""The base of the package's ir_measures measures (:class:`NoiseMeasure`) and the parameter check
shared by every measure the engine computes (:func:`check_params`)."""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from ir_measures.measures import Measure, ParamInfo

from .._validation import InputError
from .._vocab import TIE_POLICIES
from ..engine import MeasureSpec

__all__ = ["Param", "NoiseMeasure", "check_params", "NUMBER"]

NUMBER = (int, float)
_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", NUMBER: "a number", bool: "True or False",
               dict: "a mapping such as {0:0,1:1,2:3}"}


@dataclass(frozen=True)
class Param:
    """One parameter of a measure: its type, default (None: not given), accepted values and meaning."""

    dtype: object
    default: object = None
    choices: tuple | None = None
    desc: str = ""
    required: bool = False

    def info(self) -> ParamInfo:
        """The ir_measures ParamInfo of this parameter."""
        kw = {"dtype": self.dtype, "required": self.required, "desc": self.desc}
        if self.default is not None:
            kw["default"] = self.default
        if self.choices is not None:
            kw["choices"] = list(self.choices)
        return ParamInfo(**kw)


TIES = Param(str, "trec_eval", TIE_POLICIES, "tie policy")
REL = Param(int, 1, desc="minimum label counted relevant (binary gains)")
MAX_REL = Param(NUMBER, desc="graded gains: min(label, max_rel) / max_rel")


class NoiseMeasure(Measure):
    """A measure of the package: one engine family and component, declared with its parameters
    (:class:`Param`), a description and the paper it implements.  Subclasses set ``FAMILY``,
    ``COMPONENT``, ``PARAMS``, ``DEFAULT`` (ir_measures' value for a topic without a ranking) and
    ``CITATION``; the class name without its leading underscore is the measure's name."""

    FAMILY = ""
    COMPONENT = "value"
    PARAMS: dict[str, Param] = {}
    CITATION = ""

    def __init_subclass__(cls, **kw) -> None:
        super().__init_subclass__(**kw)
        cls.__name__ = cls.NAME = cls.__qualname__.lstrip("_")
        cls.SUPPORTED_PARAMS = {k: p.info() for k, p in cls.PARAMS.items()}

    def param(self, key: str):
        """The value given for ``key``, else its declared default (None when it has none)."""
        return self.params.get(key, self.PARAMS[key].default if key in self.PARAMS else None)

    def spec(self) -> MeasureSpec:
        """The engine's MeasureSpec of this measure (its parameters validated)."""
        check_params(self)
        get = self.param
        max_rel = get("max_rel")
        return MeasureSpec(
            family=self.FAMILY, component=self.COMPONENT,
            p=float(get("p")) if "p" in self.PARAMS else None,
            T=float(get("T")) if "T" in self.PARAMS else None,
            rel=float(get("rel")) if "rel" in self.PARAMS else 1.0,
            max_rel=None if max_rel is None else float(max_rel),
            cutoff=None if get("cutoff") is None else int(get("cutoff")),
            tail=get("tail") if "tail" in self.PARAMS else "cwl",
        ).validate()

    @property
    def ties(self) -> str:
        """The measure's tie policy."""
        return self.param("ties")

    def __repr__(self) -> str:
        # always show the user-model parameter (p or T; the tie policy of the tie-aware standard
        # measures) so that table columns say what they are
        key = "p" if "p" in self.PARAMS else "T" if "T" in self.PARAMS else "ties"
        shown = {key: self.param(key)}
        shown.update((k, v) for k, v in self.params.items()
                     if k not in (key, self.AT_PARAM) and v != self.PARAMS[k].default)
        text = f"{self.NAME}({','.join(f'{k}={self._param_repr(v)}' for k, v in shown.items())})"
        if self.AT_PARAM in self.params:
            text += f"@{self.params[self.AT_PARAM]}"
        return text


def check_params(measure: Measure, extra: dict | None = None) -> None:
    """Refuse unknown, misspelt or mistyped parameters of an ir_measures measure (ours or
    ir_measures' own, with ``extra`` parameters the engine adds) with an :class:`InputError`
    naming the measure, the parameter, what it must be and the accepted ones."""
    supported = {**measure.SUPPORTED_PARAMS, **(extra or {})}
    accepted = ", ".join(sorted(supported)) or "none"
    name = measure.NAME
    for key, value in measure.params.items():
        if key not in supported:
            close = difflib.get_close_matches(key, list(supported), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(f"measure {name}: unknown parameter {key!r}{hint}; {name} accepts: {accepted}")
        info = supported[key]
        wrong_bool = isinstance(value, bool) and info.dtype not in (bool, None)
        int_for_float = info.dtype is float and isinstance(value, int) and not wrong_bool  # T=3 means 3.0
        if not (info.validate(value) or int_for_float) or wrong_bool:
            want = _TYPE_NAMES.get(info.dtype, getattr(info.dtype, "__name__", str(info.dtype)))
            if isinstance(info.choices, (list, tuple)):
                want = f"one of {', '.join(map(str, info.choices))}"
            raise InputError(f"measure {name}: parameter {key}={value!r} must be {want}; "
                             f"{name} accepts: {accepted}")
