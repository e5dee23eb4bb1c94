"""Building one configuration's model on the GPU: world-1 process group, the Llama stack, SAC, float8,
FSDP2 (torch imported inside the functions)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .config import MemConfig

__all__ = []


def _init_world1(torch: Any, device: Any) -> Any:
    """A process group of one rank (env ``MASTER_ADDR=127.0.0.1``, a free port) and its 1-D mesh."""
    import socket

    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    if not dist.is_initialized():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
        if device.type == "cuda":
            dist.init_process_group("nccl", rank=0, world_size=1, device_id=device)
        else:
            dist.init_process_group("gloo", rank=0, world_size=1)
    return init_device_mesh(device.type, (1,), mesh_dim_names=("fsdp",))


def _sac_wrapper(module: Any) -> Any:
    """torchtitan's op-level selective AC: save matmul / attention / ``_scaled_mm`` / ``max`` outputs, except
    every second ``mm`` (counted separately in forward and recompute)."""
    from collections import defaultdict
    from functools import partial

    import torch
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    names = ("mm", "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
             "_scaled_dot_product_cudnn_attention", "_scaled_mm", "max")  # fmt: skip
    save = {getattr(aten, n).default for n in names if hasattr(aten, n)}
    if hasattr(torch.ops, "_c10d_functional"):
        save.add(torch.ops._c10d_functional.reduce_scatter_tensor.default)

    def policy(meta: dict[str, int], ctx: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
        key = f"{'recompute' if ctx.is_recompute else 'forward'}_mm_count"
        if func == aten.mm.default:
            meta[key] += 1
        keep = func in save and not (func == aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    def context_fn() -> Any:
        return create_selective_checkpoint_contexts(partial(policy, defaultdict(int)))

    return checkpoint_wrapper(module, context_fn=context_fn, preserve_rng_state=False)


def _build_lm(torch: Any, shape: Mapping[str, Any], layers: int, dtype: Any) -> Any:
    """Embedding, ``layers`` decoder layers (:mod:`._decoder`), final norm, output Linear (module doc)."""
    from torch import nn

    from .._decoder import DecoderConfig, build_layer

    dc = DecoderConfig(dim=shape["dim"], ffn=shape["ffn"], heads=shape["heads"], kv_heads=shape["kv_heads"],
                       head_dim=shape["head_dim"], rope_theta=shape["rope_theta"])  # fmt: skip
    dev = torch.get_default_device()

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_embeddings = nn.Embedding(shape["vocab"], dc.dim)
            self.layers = nn.ModuleList(build_layer(dc, device=dev, dtype=dtype, seed=i) for i in range(layers))
            self.norm = type(self.layers[0].attention_norm)(dc.dim, dc.norm_eps)
            self.output = nn.Linear(dc.dim, shape["vocab"], bias=False)

        def forward(self, tokens: Any, cos: Any, sin: Any) -> Any:
            h = self.tok_embeddings(tokens)
            for layer in self.layers:
                h = layer(h, cos, sin)
            return self.output(self.norm(h))

    model = LM()
    nn.init.normal_(model.tok_embeddings.weight, std=0.02)
    nn.init.normal_(model.output.weight, std=dc.dim**-0.5)
    return model.to(dtype=dtype), dc


def _float8(model: Any, cfg: MemConfig) -> str:
    """torchao's ``convert_to_float8_training`` on every decoder Linear (the output layer stays bf16)."""
    from torchao.float8 import Float8LinearConfig, convert_to_float8_training

    if cfg.fp8_all_gather:
        f8 = Float8LinearConfig(enable_fsdp_float8_all_gather=True)
    else:
        f8 = Float8LinearConfig.from_recipe_name(cfg.recipe)
    convert_to_float8_training(model, config=f8, module_filter_fn=lambda mod, fqn: fqn != "output")
    return repr(f8)[:600]


def _fsdp(torch: Any, model: Any, mesh: Any) -> str:
    """torchtitan's FSDP2 wrapping; returns how the head was grouped."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    kw = dict(mesh=mesh, mp_policy=mp)
    fully_shard(model.tok_embeddings, **kw, reshard_after_forward=True)
    n = len(model.layers)
    for i, layer in enumerate(model.layers):
        fully_shard(layer, **kw, reshard_after_forward=i < n - 1)
    try:
        fully_shard([model.norm, model.output], **kw, reshard_after_forward=False)
        head = "fully_shard([norm, output], reshard_after_forward=False)"
    except (TypeError, ValueError, AssertionError):
        fully_shard(model.output, **kw, reshard_after_forward=False)
        head = "fully_shard(output, reshard_after_forward=False) (a list was refused)"
    fully_shard(model, **kw)
    return head
