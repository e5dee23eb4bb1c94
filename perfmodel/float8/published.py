"""Where perfmodel's float8 answers are known to be wrong in direction on published runs.

An answer outside what was validated is not the same as one known to be wrong. The published float8 training runs
we score (``benchmarks/published/float8_training_runs.json``; docs/validation.md, "Training at cluster scale")
include runs where this model calls the direction wrong: it predicts that the recipe loses where the run
measured a gain. Those runs validate the model; they do not tune it, so the disagreement stays and is shown
with the answer: :func:`known_wrong` returns the runs for a GPU and recipe, and the CLI's ``float8`` and ``train``
output print them beside the answer.

Each entry: the GPU architecture it concerns (``"100"``: Blackwell B200/GB200), the recipe, the published
speedup, what the model predicted for that run when it was scored, and the source (URL at a commit).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import UnknownOptionError
from ..specs.gpu import GPULike, get_gpu
from .recipes import Recipe

__all__ = ["KNOWN_WRONG", "SCOPES", "PublishedDisagreement", "known_wrong", "known_wrong_lines"]

#: the answers a disagreement can concern
SCOPES: tuple[str, ...] = ("dense", "moe_block")


@dataclasses.dataclass(frozen=True, kw_only=True)
class PublishedDisagreement:
    """A published run on which the model's float8/bf16 direction is wrong.

    Attributes:
        arch: compute capability family the run's GPU has (``"100"``: sm100, B200 and GB200).
        recipe: perfmodel's recipe name.
        run: the run's id in ``benchmarks/published/float8_training_runs.json``.
        what: the job, in words.
        published: the run's measured float8/bf16 speedup.
        predicted: :func:`perfmodel.train.estimate`'s speedup for that job when scored (docs/validation.md).
        source: URL of the published figure (at a commit).
        scope: which answer it concerns: ``"dense"`` (the Linear / step / train answers) or ``"moe_block"``
            (:func:`perfmodel.moe.expert_block_time` and its speedup).
    """

    arch: str
    recipe: str
    run: str
    what: str
    published: float
    predicted: float
    source: str
    scope: str = "dense"

    def line(self) -> str:
        """One line for CLI output."""
        return (
            f"KNOWN WRONG IN DIRECTION on a published run: {self.what} measured {self.recipe} at "
            f"{self.published:.3f}x of bf16, this model predicted {self.predicted:.3f}x ({self.source})"
        )


_AO_MX = (
    "https://github.com/pytorch/ao/blob/d8bb51f63143188272e116c820d5f303c7017781/torchao/prototype/mx_formats/README.md"
)
_TT_TSV = "https://github.com/pytorch/torchtitan/blob/bc825c4778d7642e253aaf610fb1cff7291df224/results.tsv"
_TT_2086 = "https://github.com/pytorch/torchtitan/issues/2086"

#: The published runs the model calls wrong in direction (published speedup more than 3 % away from 1 and on
#: the other side of 1 from the prediction), from docs/validation.md's scored table. (torchtitan issue 2086's MoE
#: layer, 0.953x published, was here until 2026-12-04: predicted 1.006x then, 0.960-0.964x since the MoE block's event
#: law, a change made knowing that row: docs/validation/moe.md, "Published results".)
KNOWN_WRONG: tuple[PublishedDisagreement, ...] = (
    PublishedDisagreement(
        arch="100",
        recipe="mxfp8",
        run="ao_mx_b200_llama3_8b_8gpu_mxfp8_cublas",
        what="torchao's Llama 3 8B on 8 B200 (FSDP2, seq 8192)",
        published=1.200,
        predicted=0.868,
        source=_AO_MX,
    ),
    PublishedDisagreement(
        arch="100",
        recipe="rowwise",
        run="ao_mx_b200_llama3_8b_8gpu_rowwise",
        what="torchao's Llama 3 8B on 8 B200 (FSDP2, seq 8192)",
        published=1.040,
        predicted=0.815,
        source=_AO_MX,
    ),
    PublishedDisagreement(
        arch="100",
        recipe="rowwise",
        run="autoresearch_qwen3_14b_8xb200_rowwise_seq4096",
        what="a Qwen3 14B torchtitan run on 8 B200 (seq 4096)",
        published=1.063,
        predicted=0.991,
        source=_TT_TSV,
    ),
)


def known_wrong(
    gpu: GPULike, recipe: str | Recipe | None, *, scope: str = "dense"
) -> tuple[PublishedDisagreement, ...]:
    """The published runs on ``gpu``'s architecture where the model's direction for ``recipe`` is wrong, for the
    answers of ``scope`` ("dense" or "moe_block"; empty when none is known)."""
    if scope not in SCOPES:
        raise UnknownOptionError(f"scope={scope!r}: the published disagreements concern {', '.join(SCOPES)}")
    if recipe is None:
        return ()
    name = recipe.name if isinstance(recipe, Recipe) else str(recipe)
    arch = get_gpu(gpu).arch
    return tuple(d for d in KNOWN_WRONG if d.arch == arch and d.recipe == name and d.scope == scope)


def known_wrong_lines(gpu: GPULike, recipes: Any, *, scope: str = "dense") -> list[str]:
    """The :meth:`PublishedDisagreement.line` of every recipe in ``recipes`` (a name, a Recipe or an iterable)."""
    if isinstance(recipes, (str, Recipe)) or recipes is None:
        recipes = [recipes]
    return [d.line() for r in recipes for d in known_wrong(gpu, r, scope=scope)]
