"""Building one decoder-layer config (CPU-testable): the float8 Linear filter, the torchao conversion and
:func:`build_case`, the compiled layer with its inputs. torch is imported only inside these functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from .plan import LayerSpec
from .record import _check_compile_mode

__all__ = ["Case", "LinearFilter", "build_case", "convert", "float8_modules"]


class LinearFilter:
    """``module_filter_fn`` for ``convert_to_float8_training``: True exactly for the named Linears
    (fully qualified names relative to the converted module, e.g. ``attention.wq``)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)

    def __call__(self, module: Any, fqn: str) -> bool:
        return fqn in self.names

    def __repr__(self) -> str:
        return f"LinearFilter({sorted(self.names)})"


def float8_modules(module: Any) -> list[str]:
    """Names of the submodules that are torchao ``Float8Linear``."""
    return [n for n, m in module.named_modules() if type(m).__name__ == "Float8Linear"]


def convert(layer: Any, recipe: str, names: Sequence[str]) -> Any:
    """Convert the named Linears of ``layer`` with torchao (``recipe`` ≠ bf16) and check that exactly
    those became ``Float8Linear``."""
    if recipe != "bf16":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        convert_to_float8_training(
            layer, config=Float8LinearConfig.from_recipe_name(recipe), module_filter_fn=LinearFilter(names)
        )
    got = sorted(float8_modules(layer))
    if got != sorted(names):
        raise RuntimeError(f"float8 conversion converted {got}, expected {sorted(names)}")
    return layer


@dataclasses.dataclass
class Case:
    """A built config: the layer, what runs (compiled or eager), inputs, and ``step()``."""

    layer: Any
    model: Any
    x: Any
    cos: Any
    sin: Any
    grad_out: Any
    cudagraphs: bool = False

    def step(self) -> None:
        """One training step: grads to None, forward, backward with ``grad_out`` (with CUDA graphs, after telling
        torch a new step begins, so that the graphs may reuse the last step's output memory)."""
        if self.cudagraphs:
            import torch

            torch.compiler.cudagraph_mark_step_begin()
        self.x.grad = None
        self.layer.zero_grad(set_to_none=True)
        self.model(self.x, self.cos, self.sin).backward(self.grad_out)


def build_case(
    spec: LayerSpec,
    *,
    device: Any = "cuda",
    dtype: Any = None,
    compile: bool = True,
    seed: int = 0,
    compile_mode: str = "default",
) -> Case:
    """Build the layer (``dtype`` default bf16), convert ``spec.converted``, ``torch.compile`` it
    (``compile_mode``, one of :data:`COMPILE_MODES`; ``dynamic=False``) unless ``compile`` is False, and make the
    inputs: ``x`` [batch, seq, dim] with requires_grad, ``cos/sin`` from ``rope_tables``, ``grad_out`` like
    ``x``."""
    import torch

    from .._decoder import build_layer, rope_tables

    dtype = dtype or torch.bfloat16
    cfg = spec.decoder_config()
    layer = convert(build_layer(cfg, device=device, dtype=dtype, seed=seed), spec.recipe, spec.converted)
    gen = torch.Generator(device="cpu").manual_seed(seed + 1)
    shape = (spec.batch, spec.seq_len, spec.dim)
    x = torch.randn(shape, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype).requires_grad_()
    grad_out = torch.randn(shape, generator=gen, dtype=torch.float32).to(device=device, dtype=dtype)
    cos, sin = rope_tables(cfg, spec.seq_len, device)
    graphs = _check_compile_mode(compile_mode) == "reduce-overhead" and compile
    mode = {"mode": compile_mode} if graphs else {}
    model = torch.compile(layer, dynamic=False, **mode) if compile else layer
    return Case(layer=layer, model=model, x=x, cos=cos, sin=sin, grad_out=grad_out, cudagraphs=graphs)
