"""The MoE and MLA presets: Mixtral, DeepSeek-V3 and the GQA MoE models (Qwen3-MoE, Llama 4, gpt-oss, DBRX, OLMoE,
GLM-4.5-Air), each with its routed-expert block as a :class:`~perfmodel.presets.MoEShape`, from their Hugging Face
``config.json``."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ._dense import _hf
from ._shapes import LinearShape, ModelPreset, MoEShape

__all__: list[str] = []

#: preset -> (heads, kv_heads, head_dim) of the GQA attention of the MoE presets, from their config.json (the copies
#: checked are cited next to each preset below); public as ``perfmodel.presets.GQA_ATTENTION``. The one home of these
#: numbers: the presets' q/k/v/o Linears are built from it, and :data:`perfmodel.step.moe_layer.MOE_ATTENTION` (the
#: step model's MoE layers) is a copy of it.
GQA_ATTENTION: Mapping[str, tuple[int, int, int]] = MappingProxyType(
    {
        "mixtral-8x7b": (32, 8, 128),
        "qwen3-30b-a3b": (32, 4, 128),
        "llama4-scout": (40, 8, 128),
        "llama4-maverick": (40, 8, 128),
        "gpt-oss-120b": (64, 8, 64),
        "mixtral-8x22b": (48, 8, 128),
        "qwen3-235b-a22b": (64, 4, 128),
        "qwen3-coder-480b-a35b": (96, 8, 128),
        "dbrx": (48, 8, 128),
        "olmoe-1b-7b": (16, 16, 128),
        "gpt-oss-20b": (64, 8, 64),
        "glm-4.5-air": (96, 8, 128),
    }
)


def _mixtral() -> ModelPreset:
    # mistralai/Mixtral-8x7B-v0.1: hidden 4096, intermediate 14336, 32 heads, 8 KV heads, 32 layers,
    # vocab 32000, num_local_experts 8, num_experts_per_tok 2.
    hidden, inter, experts, top_k = 4096, 14336, 8, 2
    heads, kv, hd = GQA_ATTENTION["mixtral-8x7b"]  # 32, 8, 4096 // 32 = 128
    routed = top_k / experts  # each expert sees 2/8 of the tokens under balanced routing
    return ModelPreset(
        name="mixtral-8x7b",
        layers=32,
        source=_hf("mistralai/Mixtral-8x7B-v0.1"),
        moe=MoEShape(
            name="mixtral-8x7b",
            dim=hidden,
            moe_inter=inter,
            experts=experts,
            top_k=top_k,
            router="softmax",
            moe_layers=32,
            source=_hf("mistralai/Mixtral-8x7B-v0.1"),
        ),
        notes="experts see tokens * 2 / 8 each (balanced top-2 routing); the router is a Linear(4096, 8)",
        layer_note=(
            "MoE block (8 experts, top-2): the step model does not price routing (router softmax/top-k, token "
            "permutation and its all-to-all), per-expert token imbalance or grouped expert GEMMs; the attention "
            "half is a Llama block (32 heads, 8 KV heads, head_dim 128). float8.report prices the per-expert Linears"
        ),
        linears=(
            LinearShape(name="q_proj", in_features=hidden, out_features=heads * hd),
            LinearShape(name="k_proj", in_features=hidden, out_features=kv * hd),
            LinearShape(name="v_proj", in_features=hidden, out_features=kv * hd),
            LinearShape(name="o_proj", in_features=heads * hd, out_features=hidden),
            LinearShape(name="block_sparse_moe.gate", in_features=hidden, out_features=experts),
            LinearShape(
                name="experts.w1", in_features=hidden, out_features=inter, count=experts, token_fraction=routed
            ),  # gate
            LinearShape(
                name="experts.w3", in_features=hidden, out_features=inter, count=experts, token_fraction=routed
            ),  # up
            LinearShape(
                name="experts.w2", in_features=inter, out_features=hidden, count=experts, token_fraction=routed
            ),  # down
            LinearShape(name="lm_head", in_features=hidden, out_features=32000, layers=1),
        ),
    )


def _deepseek_v3() -> ModelPreset:
    # deepseek-ai/DeepSeek-V3: hidden 7168, 61 layers (first_k_dense_replace 3 dense, 58 MoE),
    # intermediate 18432 (dense MLP), moe_intermediate 2048, n_routed_experts 256,
    # num_experts_per_tok 8, n_shared_experts 1, 128 heads, MLA: q_lora_rank 1536,
    # kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, vocab 129280.
    hidden, layers, dense, heads = 7168, 61, 3, 128
    q_rank, kv_rank, nope, rope, v_dim = 1536, 512, 128, 64, 128
    inter, moe_inter, experts, top_k, shared = 18432, 2048, 256, 8, 1
    moe = layers - dense
    routed = top_k / experts  # each routed expert sees 8/256 of the tokens under balanced routing
    return ModelPreset(
        name="deepseek-v3",
        layers=layers,
        source=_hf("deepseek-ai/DeepSeek-V3"),
        # scoring_func sigmoid; n_group 8 / topk_group 4 (group-limited routing) is not priced
        moe=MoEShape(
            name="deepseek-v3",
            dim=hidden,
            moe_inter=moe_inter,
            experts=experts,
            top_k=top_k,
            shared_experts=shared,
            shared_inter=moe_inter,
            router="sigmoid",
            dense_layers=dense,
            moe_layers=moe,
            source=_hf("deepseek-ai/DeepSeek-V3"),
        ),
        notes=(
            "MLA attention; 3 dense layers then 58 MoE layers; routed experts see tokens * 8 / 256 each; "
            "the router (a bare matmul, not an nn.Linear) and the MTP module are left out"
        ),
        layer_note=(
            "MLA attention (low-rank q and kv projections, decoupled RoPE) and MoE blocks (256 routed experts, "
            "top-8, 1 shared): the step model prices neither MLA attention nor routing; float8.report prices "
            "the Linears one by one"
        ),
        linears=(
            LinearShape(name="q_a_proj", in_features=hidden, out_features=q_rank),
            LinearShape(name="q_b_proj", in_features=q_rank, out_features=heads * (nope + rope)),
            LinearShape(name="kv_a_proj_with_mqa", in_features=hidden, out_features=kv_rank + rope),
            LinearShape(name="kv_b_proj", in_features=kv_rank, out_features=heads * (nope + v_dim)),
            LinearShape(name="o_proj", in_features=heads * v_dim, out_features=hidden),
            LinearShape(name="mlp.gate_proj", in_features=hidden, out_features=inter, layers=dense),
            LinearShape(name="mlp.up_proj", in_features=hidden, out_features=inter, layers=dense),
            LinearShape(name="mlp.down_proj", in_features=inter, out_features=hidden, layers=dense),
            LinearShape(
                name="shared_experts.gate_proj", in_features=hidden, out_features=moe_inter * shared, layers=moe
            ),
            LinearShape(name="shared_experts.up_proj", in_features=hidden, out_features=moe_inter * shared, layers=moe),
            LinearShape(
                name="shared_experts.down_proj", in_features=moe_inter * shared, out_features=hidden, layers=moe
            ),
            LinearShape(
                name="experts.gate_proj",
                in_features=hidden,
                out_features=moe_inter,
                count=experts,
                layers=moe,
                token_fraction=routed,
            ),
            LinearShape(
                name="experts.up_proj",
                in_features=hidden,
                out_features=moe_inter,
                count=experts,
                layers=moe,
                token_fraction=routed,
            ),
            LinearShape(
                name="experts.down_proj",
                in_features=moe_inter,
                out_features=hidden,
                count=experts,
                layers=moe,
                token_fraction=routed,
            ),
            LinearShape(name="lm_head", in_features=hidden, out_features=129280, layers=1),
        ),
    )


def _moe_model(
    moe: MoEShape,
    *,
    layers: int,
    attention: tuple[tuple[str, int, int], ...],
    vocab: int,
    dense_inter: int = 0,
    fused_gate_up: bool = False,
    notes: str = "",
) -> ModelPreset:
    """An MoE model's Linears: ``attention`` (name, in, out) in every layer, the router, the routed experts
    (``token_fraction`` top_k / experts), the shared expert and the dense MLP of the dense layers, lm_head."""
    d, f, E, k = moe.dim, moe.moe_inter, moe.experts, moe.top_k
    ml = moe.moe_layers if moe.moe_layers < layers else None
    frac = k / E  # balanced routing: each routed expert sees top_k / experts of the tokens
    lins = [LinearShape(name=n, in_features=i, out_features=o) for n, i, o in attention]
    lins.append(LinearShape(name="moe.router.gate", in_features=d, out_features=E, layers=ml))
    if fused_gate_up:  # gpt-oss: gate_up_proj [E, dim, 2 * inter]
        lins.append(
            LinearShape(name="experts.w13", in_features=d, out_features=2 * f, count=E, layers=ml, token_fraction=frac)
        )
    else:
        for n in ("experts.w1", "experts.w3"):
            lins.append(LinearShape(name=n, in_features=d, out_features=f, count=E, layers=ml, token_fraction=frac))
    lins.append(LinearShape(name="experts.w2", in_features=f, out_features=d, count=E, layers=ml, token_fraction=frac))
    if moe.shared_width:
        s = moe.shared_width
        for n, i, o in (("shared_experts.w1", d, s), ("shared_experts.w3", d, s), ("shared_experts.w2", s, d)):
            lins.append(LinearShape(name=n, in_features=i, out_features=o, layers=ml))
    if moe.dense_layers:
        for n, i, o in (("mlp.w1", d, dense_inter), ("mlp.w3", d, dense_inter), ("mlp.w2", dense_inter, d)):
            lins.append(LinearShape(name=n, in_features=i, out_features=o, layers=moe.dense_layers))
    lins.append(LinearShape(name="lm_head", in_features=d, out_features=vocab, layers=1))
    return ModelPreset(
        name=moe.name,
        layers=layers,
        source=moe.source,
        notes=notes,
        layer_note=(
            f"MoE block ({E} routed experts, top-{k}{f', {moe.shared_experts} shared' if moe.shared_experts else ''}): "
            "the dense step model does not price it; perfmodel.moe.expert_block_time prices the routed-expert block "
            "(router, permutation, grouped GEMMs, shared experts) and float8.report the Linears one by one"
        ),
        linears=tuple(lins),
        moe=moe,
    )


def _gqa(name: str, d: int) -> tuple[tuple[str, int, int], ...]:
    """The q/k/v/o Linears (name, in, out) of preset ``name``'s GQA attention (:data:`GQA_ATTENTION`), model width
    ``d``."""
    heads, kv, hd = GQA_ATTENTION[name]
    return (("wq", d, heads * hd), ("wk", d, kv * hd), ("wv", d, kv * hd), ("wo", heads * hd, d))


def _moe_presets() -> tuple[ModelPreset, ...]:
    # torchtitan at commit b5bcd76c66d0acb1a08b176d9639425bc55e0b2a (2026-08-21)
    tt = "https://github.com/pytorch/torchtitan/blob/b5bcd76/torchtitan/models/deepseek_v3/__init__.py"
    # torchtitan deepseek_v3 flavour "16B" (_16b): dim 2048, n_layers 27, n_dense_layers 1, n_heads 16, vocab 102400,
    # moe_hidden_dim 1408, num_experts 64, router_top_k 6, num_shared_experts 2, dense_hidden_dim 10944,
    # router_score_func softmax; MLA q_lora_rank 0, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head_dim 128.
    # The same MoE as deepseek-ai/DeepSeek-V2-Lite (hidden 2048, moe_intermediate 1408, 64 routed, top-6, 2 shared).
    ds16 = MoEShape(
        name="deepseek-v3-16b",
        dim=2048,
        moe_inter=1408,
        experts=64,
        top_k=6,
        shared_experts=2,
        shared_inter=1408,
        router="softmax",
        dense_layers=1,
        moe_layers=26,
        source=tt + " (flavour '16B')",
    )
    # Qwen/Qwen3-30B-A3B: hidden 2048, 48 layers (all MoE), moe_intermediate_size 768, num_experts 128,
    # num_experts_per_tok 8, 32 heads, 4 KV heads, head_dim 128, vocab 151936, norm_topk_prob true, no shared expert.
    qwen = MoEShape(
        name="qwen3-30b-a3b",
        dim=2048,
        moe_inter=768,
        experts=128,
        top_k=8,
        router="softmax",
        moe_layers=48,
        source=_hf("Qwen/Qwen3-30B-A3B"),
    )
    # meta-llama/Llama-4-Scout-17B-16E text_config: hidden 5120, 48 layers, interleave_moe_layer_step 1 (all MoE),
    # intermediate_size 8192 (expert and shared expert), num_local_experts 16, num_experts_per_tok 1, 40 heads,
    # 8 KV heads, head_dim 128, vocab 202048; sigmoid router, one shared expert.
    scout = MoEShape(
        name="llama4-scout",
        dim=5120,
        moe_inter=8192,
        experts=16,
        top_k=1,
        shared_experts=1,
        shared_inter=8192,
        router="sigmoid",
        moe_layers=48,
        source=_hf("meta-llama/Llama-4-Scout-17B-16E"),
    )
    # meta-llama/Llama-4-Maverick-17B-128E text_config: as Scout but num_local_experts 128 and
    # interleave_moe_layer_step 2 (24 MoE layers, 24 dense layers of intermediate_size_mlp 16384).
    mav = MoEShape(
        name="llama4-maverick",
        dim=5120,
        moe_inter=8192,
        experts=128,
        top_k=1,
        shared_experts=1,
        shared_inter=8192,
        router="sigmoid",
        dense_layers=24,
        moe_layers=24,
        source=_hf("meta-llama/Llama-4-Maverick-17B-128E"),
    )
    # openai/gpt-oss-120b: hidden 2880, 36 layers (all MoE), intermediate_size 2880, num_local_experts 128,
    # experts_per_token 4, 64 heads, 8 KV heads, head_dim 64, vocab 201088; softmax over the top-k router logits;
    # experts carry biases and a clamped SwiGLU (swiglu_limit 7.0), gate_up fused ([E, dim, 2 * inter]).
    oss = MoEShape(
        name="gpt-oss-120b",
        dim=2880,
        moe_inter=2880,
        experts=128,
        top_k=4,
        router="softmax",
        moe_layers=36,
        source=_hf("openai/gpt-oss-120b"),
    )
    # mistralai/Mixtral-8x22B-v0.1: hidden 6144, intermediate_size 16384, 48 heads, 8 KV heads (no head_dim key:
    # 6144 / 48 = 128), 56 layers (all MoE), num_local_experts 8, num_experts_per_tok 2, vocab 32000, softmax router
    # (Mixtral's), no shared expert. Checked against the copy of that config.json in scaleapi/llm-engine
    # model-engine/tests/unit/domain/test_llm_use_cases.py (the "mixtral-8x22b" hardware test, commit a8236961).
    mix22 = MoEShape(
        name="mixtral-8x22b",
        dim=6144,
        moe_inter=16384,
        experts=8,
        top_k=2,
        router="softmax",
        moe_layers=56,
        source=_hf("mistralai/Mixtral-8x22B-v0.1"),
    )
    # Qwen/Qwen3-235B-A22B: hidden 4096, 94 layers (all MoE), moe_intermediate_size 1536, num_experts 128,
    # num_experts_per_tok 8, 64 heads, 4 KV heads, head_dim 128, vocab 151936, untied lm_head, softmax router
    # (norm_topk_prob), no shared expert. Checked against torchtitan torchtitan/models/qwen3/__init__.py flavour
    # "235B-A22B" (commit b5bcd76: dim 4096, n_layers 94, n_heads 64, n_kv_heads 4, head_dim 128, moe_hidden_dim 1536,
    # num_experts 128, top_k 8, score_func softmax, vocab 151936) and THUDM/slime scripts/models/qwen3-235B-A22B.sh
    # (commit 624b824: the same numbers as Megatron arguments); the two agree.
    q235 = MoEShape(
        name="qwen3-235b-a22b",
        dim=4096,
        moe_inter=1536,
        experts=128,
        top_k=8,
        router="softmax",
        moe_layers=94,
        source=_hf("Qwen/Qwen3-235B-A22B"),
    )
    # Qwen/Qwen3-Coder-480B-A35B-Instruct: hidden 6144, 62 layers (decoder_sparse_step 1, mlp_only_layers []: all
    # MoE), moe_intermediate_size 2560, num_experts 160, num_experts_per_tok 8, shared_expert_intermediate_size 0,
    # 96 heads, 8 KV heads, head_dim 128, vocab 151936, untied lm_head, softmax router (norm_topk_prob true); its
    # intermediate_size 8192 is used by no layer. Checked against the copy of that config.json in baidu/vLLM-Kunlun
    # docs/source/tutorials/multi_xpu_Qwen3-Coder-480B-A35B(W8A8).md (commit 09869ee).
    q480 = MoEShape(
        name="qwen3-coder-480b-a35b",
        dim=6144,
        moe_inter=2560,
        experts=160,
        top_k=8,
        router="softmax",
        moe_layers=62,
        source=_hf("Qwen/Qwen3-Coder-480B-A35B-Instruct"),
    )
    # databricks/dbrx-base: d_model 6144, n_layers 40 (all MoE), n_heads 48 (head_dim 6144 / 48 = 128),
    # attn_config.kv_n_heads 8 (clip_qkv 8), ffn_config.ffn_hidden_size 10752, moe_num_experts 16, moe_top_k 4,
    # vocab_size 100352, tie_word_embeddings false. Checked against the config.json posted in ggml-org/llama.cpp
    # issue #6344 ("Add support for DBRX models: dbrx-base and dbrx-instruct") and the GGUF metadata of llama.cpp
    # PR #6515 (block_count 40, embedding_length 6144, feed_forward_length 10752, head_count 48, head_count_kv 8,
    # 16 experts, 4 used, 100352 tokens); router: softmax over the 16 experts, then top-4 (transformers
    # src/transformers/models/dbrx/modeling_dbrx.py, DbrxRouter). Some copies say ffn_hidden_size 3584: that is
    # transformers' DbrxFFNConfig default, not the checkpoint's (3584 gives 47 B parameters, not 132 B).
    dbrx = MoEShape(
        name="dbrx",
        dim=6144,
        moe_inter=10752,
        experts=16,
        top_k=4,
        router="softmax",
        moe_layers=40,
        source=_hf("databricks/dbrx-base"),
    )
    # allenai/OLMoE-1B-7B-0924: hidden 2048, 16 layers (all MoE), intermediate_size 1024 (one expert), num_experts 64,
    # num_experts_per_tok 8, 16 heads, 16 KV heads (multi-head; head_dim 2048 / 16 = 128), vocab 50304, untied
    # lm_head, softmax router, no shared expert. Checked against allenai/OLMoE configs/OLMoE-1B-7B-0924.yml (commit
    # 357454f: d_model 2048, n_heads 16, n_layers 16, mlp_ratio 1 with SwiGLU, embedding_size 50304, weight_tying
    # false, moe_num_experts 64, moe_top_k 8) and NVIDIA-NeMo/Megatron-Bridge
    # src/megatron/bridge/models/olmoe/olmoe_provider.py (commit 067f987: moe_ffn_hidden_size 1024, num_query_groups
    # 16, kv_channels 128, vocab 50304, moe_router_score_function softmax).
    olmoe = MoEShape(
        name="olmoe-1b-7b",
        dim=2048,
        moe_inter=1024,
        experts=64,
        top_k=8,
        router="softmax",
        moe_layers=16,
        source=_hf("allenai/OLMoE-1B-7B-0924"),
    )
    # openai/gpt-oss-20b: as gpt-oss-120b (hidden 2880, intermediate_size 2880, 64 heads, 8 KV heads, head_dim 64,
    # vocab 201088, softmax router, fused gate_up) but 24 layers (all MoE) and num_local_experts 32 (experts_per_token
    # 4). Checked against torchtitan torchtitan/models/gpt_oss/__init__.py flavour "20b" (commit b5bcd76: dim 2880,
    # hidden_dim 2880, n_layers 24, num_experts 32, top_k 4, n_heads 64, n_kv_heads 8, head_dim 64, vocab 201088,
    # score_func softmax, 128-token sliding window on even layers) and NVIDIA-NeMo/Megatron-Bridge
    # docs/models/gpt_oss/gpt-oss.md (GPT OSS 20B); the two agree.
    oss20 = MoEShape(
        name="gpt-oss-20b",
        dim=2880,
        moe_inter=2880,
        experts=32,
        top_k=4,
        router="softmax",
        moe_layers=24,
        source=_hf("openai/gpt-oss-20b"),
    )
    # zai-org/GLM-4.5-Air: hidden 4096, 46 layers (first_k_dense_replace 1: one dense layer, then 45 MoE),
    # intermediate_size 10944 (the dense layer's MLP), moe_intermediate_size 1408, n_routed_experts 128,
    # num_experts_per_tok 8, n_shared_experts 1 (of moe_intermediate_size), 96 heads, 8 KV heads, head_dim 128,
    # vocab 151552, untied lm_head, attention_bias true, partial_rotary_factor 0.5, use_qk_norm false. Checked against
    # the copy of that config.json in NVIDIA-NeMo/Megatron-Bridge tests/unit_tests/models/glm/test_glm45_bridge.py
    # (fixture glm45_air_106b_config, commit 067f987) and THUDM/slime scripts/models/glm4.5-106B-A12B.sh (commit
    # 624b824: 1 dense + 45 MoE layers, 96 heads, 8 query groups, kv-channels 128, ffn 10944, moe-ffn 1408, shared
    # expert 1408, 128 experts, top-8, moe-router-score-function sigmoid with expert bias, vocab 151552); they agree.
    glm_air = MoEShape(
        name="glm-4.5-air",
        dim=4096,
        moe_inter=1408,
        experts=128,
        top_k=8,
        shared_experts=1,
        shared_inter=1408,
        router="sigmoid",
        dense_layers=1,
        moe_layers=45,
        source=_hf("zai-org/GLM-4.5-Air"),
    )
    mla16 = (("wq", 2048, 16 * 192), ("wkv_a", 2048, 512 + 64), ("wkv_b", 512, 16 * 256), ("wo", 16 * 128, 2048))
    return (
        _moe_model(ds16, layers=27, attention=mla16, vocab=102400, dense_inter=10944,
                   notes="torchtitan's DeepSeek-V3 16B flavour (MLA without q LoRA); not the deepseek-moe-16b weights"),
        _moe_model(qwen, layers=48, attention=_gqa("qwen3-30b-a3b", 2048), vocab=151936,
                   notes="QK-norm not priced; no shared expert"),
        _moe_model(scout, layers=48, attention=_gqa("llama4-scout", 5120), vocab=202048,
                   notes="chunked attention (attention_chunk_size 8192) not modelled; vision encoder left out"),
        _moe_model(mav, layers=48, attention=_gqa("llama4-maverick", 5120), vocab=202048, dense_inter=16384,
                   notes="MoE every 2nd layer; vision encoder left out"),
        _moe_model(oss, layers=36, attention=_gqa("gpt-oss-120b", 2880), vocab=201088, fused_gate_up=True,
                   notes="expert biases, attention sinks and the clamped SwiGLU are not priced; weights ship in mxfp4"),
        _moe_model(mix22, layers=56, attention=_gqa("mixtral-8x22b", 6144), vocab=32000,
                   notes="experts see tokens * 2 / 8 each (balanced top-2 routing); no shared expert"),
        _moe_model(q235, layers=94, attention=_gqa("qwen3-235b-a22b", 4096), vocab=151936,
                   notes="QK-norm not priced; no shared expert; q is 64 x 128 = 8192 wide (twice hidden)"),
        _moe_model(q480, layers=62, attention=_gqa("qwen3-coder-480b-a35b", 6144), vocab=151936,
                   notes="QK-norm not priced; no shared expert; q is 96 x 128 = 12288 wide (twice hidden)"),
        _moe_model(dbrx, layers=40, attention=_gqa("dbrx", 6144), vocab=100352,
                   notes="the model fuses q, k, v into one Wqkv (6144 -> 8192), listed here as wq, wk, wv; "
                         "clip_qkv 8 (a clamp of the qkv output) not priced; LayerNorm (no bias) priced as RMSNorm; "
                         "its experts are w1, v1, w2 (here w1, w3, w2); no shared expert"),
        _moe_model(olmoe, layers=16, attention=_gqa("olmoe-1b-7b", 2048), vocab=50304,
                   notes="QK-norm (RMSNorm over the whole q and k, 2048 wide) not priced; multi-head attention "
                         "(16 KV heads); no shared expert"),
        _moe_model(oss20, layers=24, attention=_gqa("gpt-oss-20b", 2880), vocab=201088, fused_gate_up=True,
                   notes="expert biases, attention sinks, the 128-token sliding window of every other layer and the "
                         "clamped SwiGLU are not priced; weights ship in mxfp4"),
        _moe_model(glm_air, layers=46, attention=_gqa("glm-4.5-air", 4096), vocab=151552, dense_inter=10944,
                   notes="first layer dense (MLP 10944), then 45 MoE layers; q/k/v biases, partial RoPE (half of "
                         "head_dim), the sigmoid router's expert-score bias and the MTP layer are not priced; q is "
                         "96 x 128 = 12288 wide (three times hidden)"),
    )  # fmt: skip
