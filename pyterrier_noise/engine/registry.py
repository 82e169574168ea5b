"""The kernel registry: one :class:`Kernel` per measure family, looked up by family name.

A kernel declares what its family reads from a :class:`~pyterrier_noise.engine.MeasureSpec`
(``uses``), which components it has, whether a cutoff is required, which tie policies it
supports, and how per-topic values aggregate (mean, or sum for counts as trec_eval reports
them); it validates its own parameters and computes values for every (run, topic, version) of
aligned runs at once.  Adding a measure is one kernel here and one declaration in
:mod:`pyterrier_noise.measures` (docs/engine.md, "Adding a measure").
"""
from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, ClassVar

from .._validation import InputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .align import AlignedRuns
    from .kernels.common import Labels
    from .spec import MeasureSpec

__all__ = ["Kernel", "KERNELS", "register_kernel", "kernel_for"]

#: family name -> kernel; filled by :mod:`pyterrier_noise.engine.kernels` when the engine is imported
KERNELS: dict[str, "Kernel"] = {}

#: the MeasureSpec fields a kernel may read, with their defaults (every other field must keep it)
SPEC_DEFAULTS = {"p": None, "T": None, "rel": 1.0, "max_rel": None, "cutoff": None, "tail": "cwl",
                 "judged_only": False, "gains": None, "recall": None}


class Kernel:
    """What the engine computes for one measure family.

    Subclasses set the class attributes and implement :meth:`compute` (policies ``trec_eval`` and
    ``given``, where every position is its own tie group) and, for the tie policies in
    ``tie_modes``, :meth:`tied`.
    """

    family: ClassVar[str] = ""
    #: components: "value" and, for measures with a residual, "residual", "upper" (and "projected")
    components: ClassVar[tuple[str, ...]] = ("value",)
    #: the MeasureSpec fields this family reads (others must keep their defaults)
    uses: ClassVar[frozenset[str]] = frozenset()
    cutoff_required: ClassVar[bool] = False
    #: the grouped tie policies with an exact kernel ("expected", "optimistic", "pessimistic")
    tie_modes: ClassVar[tuple[str, ...]] = ("expected", "optimistic", "pessimistic")
    #: how per-topic values make the per-run figure: "mean" or "sum" (trec_eval's counts)
    aggregate: ClassVar[str] = "mean"
    #: a weighted sum of gains over ranks (its expected value under tied scores uses the mean weight of
    #: each group's positions)
    linear: ClassVar[bool] = False

    def check(self, spec: "MeasureSpec") -> None:
        """Refuse parameters this family does not read or cannot take (the family's own checks
        go in :meth:`check_params`)."""
        name = self.family
        if spec.component not in self.components:
            has = ", ".join(self.components)
            raise InputError(f"{name} has no {spec.component!r} component (it has: {has})")
        for field, default in SPEC_DEFAULTS.items():
            value = getattr(spec, field)
            if field not in self.uses and value != default:
                raise InputError(f"{name} takes no {field!r} parameter (got {field}={value!r})")
        if spec.cutoff is not None and (isinstance(spec.cutoff, bool) or int(spec.cutoff) != spec.cutoff
                                        or spec.cutoff <= 0):
            raise InputError(f"{name}: the cutoff must be a positive integer, got {spec.cutoff!r}")
        if self.cutoff_required and spec.cutoff is None:
            raise InputError(f"{name} needs a cutoff, e.g. {name}@10")
        if spec.max_rel is not None and not spec.max_rel > 0:
            raise InputError(f"{name}: max_rel must be positive, got {spec.max_rel!r}")
        self.check_params(spec)

    def check_params(self, spec: "MeasureSpec") -> None:
        """The family's own parameter checks (ranges of p, T, ...)."""

    def check_ties(self, spec: "MeasureSpec", policy: str) -> None:
        """Refuse a grouped tie policy this family has no exact kernel for, with the reason."""
        modes = self.tie_modes
        if policy in ("expected", "optimistic", "pessimistic") and policy not in modes:
            supported = ", ".join(("trec_eval", "given", *modes))
            raise InputError(f"{self.family} under ties={policy!r} is not computed by the engine (no exact "
                             f"kernel for its value over the orderings of tied scores); policies for this "
                             f"measure: {supported}")

    def undefined(self, spec: "MeasureSpec") -> float | None:
        """The value reported where a component is undefined (the kernel gives NaN there: RBP's
        projected value where nothing is judged); None where it is always defined."""
        return None

    def cost(self, aligned: "AlignedRuns", spec: "MeasureSpec") -> int:
        """Elements of the largest temporary per label version (the engine sizes chunks of versions by it)."""
        return max(len(aligned.table), aligned.n_segments)

    def compute(self, aligned: "AlignedRuns", spec: "MeasureSpec", labels: "Labels") -> "np.ndarray":
        """Values ``(n_segments, R)`` without tie groups (``trec_eval`` and ``given``)."""
        raise NotImplementedError

    def tied(self, aligned: "AlignedRuns", spec: "MeasureSpec", labels: "Labels", mode: str) -> "np.ndarray":
        """Values ``(n_segments, R)`` under a grouped tie policy (``mode`` in :attr:`tie_modes`)."""
        raise NotImplementedError


def register_kernel(kernel: Kernel) -> Kernel:
    """Add a kernel to :data:`KERNELS` under its family (a family registers once)."""
    if not kernel.family:
        raise InputError("a kernel needs a family name")
    if kernel.family in KERNELS and type(KERNELS[kernel.family]) is not type(kernel):
        raise InputError(f"a kernel for {kernel.family!r} is registered already ({type(KERNELS[kernel.family]).__name__})")
    KERNELS[kernel.family] = kernel
    return kernel


def kernel_for(family: str) -> Kernel:
    """The kernel of a family; an unknown family is refused with the closest known names."""
    try:
        return KERNELS[family]
    except KeyError:
        close = difflib.get_close_matches(str(family), list(KERNELS), n=2)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        raise InputError(f"unknown measure family {family!r}{hint}; the engine computes: "
                         f"{', '.join(sorted(KERNELS))}") from None
