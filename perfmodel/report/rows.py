"""One row of the float8 report (a distinct Linear shape) and the step totals under each policy."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["ReportRow", "ReportTotals"]

_ALIGN = 16  # float8 GEMM kernels (torch._scaled_mm) need K and N to be multiples of 16


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReportRow:
    """One distinct Linear shape ``nn.Linear(K, N)`` run on ``M`` tokens, ``count`` times per step.

    Attributes:
        names: the Linears of this shape (module names with layer indices folded to ``*``).
        K, N: in_features and out_features; M: tokens each instance sees.
        count: instances per step.
        times_s: recipe -> fwd+bwd seconds of one instance; ``"bf16"`` is the baseline.
        eligible: K and N are multiples of 16 (otherwise float8 kernels cannot run it).
        decision: the recipe to enable, or ``"bf16"``.
        reason: why bf16 is kept (empty when a recipe is enabled).
        close_call: the decision could flip within the measured spread of the model's speedups
            (:attr:`Report.speedup_error_bar` straddles ``min_speedup`` around the deciding speedup: the
            chosen recipe's, or the best recipe's where bf16 is kept). False where there is no bar.
        padded: ``(K, N)`` rounded up to multiples of 16 where the shape is not eligible (float8 needs them; on a
            Hopper GPU a feature size not a multiple of 8 also sends the bf16 GEMMs to cuBLAS's pre-Hopper
            kernels, :func:`perfmodel.gemm_kernel`), else ``None``.
        padded_s: recipe -> fwd+bwd seconds of one instance at :attr:`padded` (``"bf16"`` included; empty without
            one): what padding the layer's features (a change to the model) would buy, under the same model.
    """

    names: tuple[str, ...]
    K: int
    N: int
    M: int
    count: int
    times_s: Mapping[str, float]
    eligible: bool
    decision: str
    reason: str = ""
    close_call: bool = False
    padded: tuple[int, int] | None = None
    padded_s: Mapping[str, float] = dataclasses.field(default_factory=lambda: MappingProxyType({}))

    @property
    def padding(self) -> tuple[str, float] | None:
        """``(recipe, seconds)``: the fastest choice at :attr:`padded` where it beats :attr:`chosen_s` by at least
        10 % (padding pays), else ``None``."""
        if not self.padded_s:
            return None
        best = min(self.padded_s, key=lambda r: self.padded_s[r])
        return (best, self.padded_s[best]) if self.padded_s[best] < 0.9 * self.chosen_s else None

    @property
    def float8_padded_to(self) -> tuple[int, int] | None:
        """``(K, N)`` padded to multiples of 16 where float8 cannot run this shape: its float8 times and speedups are
        then prices of that padded shape (what padding the layer would buy), not of a run of this one; else
        ``None``."""
        return None if self.eligible or self.padded is None else self.padded

    @property
    def bf16_s(self) -> float:
        """Seconds of one instance in bf16."""
        return self.times_s["bf16"]

    @property
    def speedups(self) -> dict[str, float]:
        """recipe -> ``bf16_s / time`` (> 1: faster than bf16), recipes only."""
        return {r: self.bf16_s / t for r, t in self.times_s.items() if r != "bf16"}

    @property
    def chosen_s(self) -> float:
        """Seconds of one instance under :attr:`decision`."""
        return self.times_s[self.decision]

    @property
    def saved_s(self) -> float:
        """Seconds saved per step by the decision: ``(bf16_s - chosen_s) · count``."""
        return (self.bf16_s - self.chosen_s) * self.count

    def to_dict(self) -> dict[str, Any]:
        """Plain types only (JSON-ready); times in seconds."""
        return {
            "names": list(self.names),
            "K": self.K,
            "N": self.N,
            "M": self.M,
            "count": self.count,
            "times_s": dict(self.times_s),
            "speedups": self.speedups,
            "eligible": self.eligible,
            "decision": self.decision,
            "reason": self.reason,
            "close_call": self.close_call,
            "saved_s": self.saved_s,
            "padded": None if self.padded is None else list(self.padded),
            "float8_padded_to": None if self.float8_padded_to is None else list(self.float8_padded_to),
            "padded_s": dict(self.padded_s),
        }


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReportTotals:
    """Step time of all the Linears, seconds, under each policy.

    Attributes:
        bf16_s: bf16 everywhere.
        best_s: the per-row :attr:`ReportRow.decision` (best recipe per shape, where it pays).
        everywhere_s: recipe -> that recipe on every eligible Linear (bf16 on the others).
        filtered_s: recipe -> that recipe where it reaches ``min_speedup``, bf16 elsewhere
            (what ``convert_to_float8_training`` with :func:`perfmodel.float8.module_filter` does).
    """

    bf16_s: float
    best_s: float
    everywhere_s: Mapping[str, float]
    filtered_s: Mapping[str, float]

    @property
    def best_recipe(self) -> str:
        """The single recipe with the shortest filtered step (ties: the earlier recipe); ``"bf16"`` when
        no recipe was compared (a GPU without float8)."""
        return min(self.filtered_s, key=lambda r: self.filtered_s[r], default="bf16")

    def to_dict(self) -> dict[str, Any]:
        """Plain types only; seconds."""
        return {
            "bf16_s": self.bf16_s,
            "best_s": self.best_s,
            "everywhere_s": dict(self.everywhere_s),
            "filtered_s": dict(self.filtered_s),
            "best_recipe": self.best_recipe,
        }
