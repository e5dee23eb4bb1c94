"""The bench's model table, constants and its error class."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ...errors import PerfModelError

__all__ = [
    "ALIGN",
    "ALL_ROUTINGS",
    "EST_BYTES_PER_S",
    "EST_FIRST_FP8_S",
    "EST_FLOPS_PER_S",
    "EST_HOST_CALL_S",
    "EST_ITEM_SETUP_S",
    "MAX_MEMORY_BYTES",
    "MODELS",
    "MODEL_BY_NAME",
    "PIECE_GEMMS",
    "PROFILE_ITERS",
    "RECIPES",
    "REP_MS",
    "ROUTINGS",
    "SCHEMA",
    "SEED",
    "SKEW_ALPHA",
    "TOKENS",
    "WARMUP_MS",
    "WRITE_NAMES",
    "BlockConfig",
    "MoEBlockError",
]

SCHEMA = "perfmodel.bench.moe_block/1"


class MoEBlockError(PerfModelError, ValueError):
    """A bad argument to the MoE block bench (model names, token counts, routing, budgets, files)."""


# ---- models (each number from the model's published config.json; cited per row) -------------------------------


@dataclasses.dataclass(frozen=True)
class BlockConfig:
    """One MoE layer's routed-expert block: ``dim`` (hidden size), ``inter`` (one routed expert's intermediate
    size), ``experts`` (experts on this GPU = the grouped GEMMs' groups), ``top_k``, ``shared_inter`` (the shared
    expert's intermediate size, 0 = none), ``score_func``, ``router_experts`` (the router's outputs; differs from
    ``experts`` only for a local-experts variant), ``source``."""

    name: str
    dim: int
    inter: int
    experts: int
    top_k: int
    shared_inter: int
    score_func: str
    router_experts: int
    source: str

    @property
    def expert_params(self) -> int:
        """Routed-expert parameters on this GPU (w1, w2, w3)."""
        return 3 * self.experts * self.dim * self.inter


MODELS: tuple[BlockConfig, ...] = (
    # deepseek-ai/DeepSeek-V2-Lite config.json (the torchtitan deepseek_v3 "16B" flavour has the same MoE):
    # hidden_size 2048, moe_intermediate_size 1408, n_routed_experts 64, num_experts_per_tok 6, n_shared_experts 2,
    # scoring_func softmax. Shared expert intermediate = 2 x 1408.
    BlockConfig("deepseek_v3_16b", 2048, 1408, 64, 6, 2 * 1408, "softmax", 64,
                "DeepSeek-V2-Lite config.json / torchtitan deepseek_v3 16B: hidden_size, moe_intermediate_size, "
                "n_routed_experts, num_experts_per_tok, n_shared_experts=2"),
    # deepseek-ai/DeepSeek-V3 config.json: hidden_size 7168, moe_intermediate_size 2048, n_routed_experts 256,
    # num_experts_per_tok 8, n_shared_experts 1, scoring_func sigmoid (n_group 8 / topk_group 4 not modelled).
    BlockConfig("deepseek_v3", 7168, 2048, 256, 8, 2048, "sigmoid", 256,
                "DeepSeek-V3 config.json: hidden_size, moe_intermediate_size, n_routed_experts, num_experts_per_tok, "
                "n_shared_experts=1, scoring_func=sigmoid"),
    # The same layer as one of EP=8 GPUs holds it: 256 / 8 = 32 local experts, top-8 routing, T tokens per GPU
    # (after the all-to-all each GPU receives T*k rows on average: the same per-expert load). The router keeps its
    # 256 outputs; the forced routing picks among the 32 local experts. No all-to-all is timed.
    BlockConfig("deepseek_v3_ep8", 7168, 2048, 32, 8, 2048, "sigmoid", 256,
                "DeepSeek-V3 config.json as above; local-experts variant 256/EP8 = 32 experts on this GPU"),
    # Qwen/Qwen3-30B-A3B config.json: hidden_size 2048, moe_intermediate_size 768, num_experts 128,
    # num_experts_per_tok 8, no shared expert, softmax router (norm_topk_prob true).
    BlockConfig("qwen3_30b_a3b", 2048, 768, 128, 8, 0, "softmax", 128,
                "Qwen3-30B-A3B config.json: hidden_size, moe_intermediate_size, num_experts, num_experts_per_tok"),
    # meta-llama/Llama-4-Scout-17B-16E config.json text_config: hidden_size 5120, intermediate_size 8192,
    # num_local_experts 16, num_experts_per_tok 1; one shared expert of intermediate_size; sigmoid router.
    BlockConfig("llama4_scout", 5120, 8192, 16, 1, 8192, "sigmoid", 16,
                "Llama-4-Scout-17B-16E config.json text_config: hidden_size, intermediate_size, num_local_experts, "
                "num_experts_per_tok; shared expert"),
    # meta-llama/Llama-4-Maverick-17B-128E config.json text_config: hidden_size 5120, intermediate_size 8192,
    # num_local_experts 128, num_experts_per_tok 1; shared expert; sigmoid router. All 128 experts on one GPU.
    BlockConfig("llama4_maverick", 5120, 8192, 128, 1, 8192, "sigmoid", 128,
                "Llama-4-Maverick-17B-128E config.json text_config: hidden_size, intermediate_size, "
                "num_local_experts, num_experts_per_tok; shared expert"),
    # mistralai/Mixtral-8x7B-v0.1 config.json: hidden_size 4096, intermediate_size 14336, num_local_experts 8,
    # num_experts_per_tok 2, softmax router, no shared expert.
    BlockConfig("mixtral_8x7b", 4096, 14336, 8, 2, 0, "softmax", 8,
                "Mixtral-8x7B-v0.1 config.json: hidden_size, intermediate_size, num_local_experts, "
                "num_experts_per_tok"),
    # openai/gpt-oss-120b config.json: hidden_size 2880, intermediate_size 2880, num_local_experts 128,
    # experts_per_token 4, softmax over the top-k logits. Its expert biases and clamped SwiGLU are not modelled.
    BlockConfig("gpt_oss_120b", 2880, 2880, 128, 4, 0, "softmax", 128,
                "gpt-oss-120b config.json: hidden_size, intermediate_size, num_local_experts, experts_per_token"),
    # The fresh families (added 2026-12-03; their predictions were committed before they were measured).
    # Qwen/Qwen3-235B-A22B config.json: hidden_size 4096, moe_intermediate_size 1536, num_experts 128,
    # num_experts_per_tok 8, no shared expert, softmax router. 128 experts on one GPU.
    BlockConfig("qwen3_235b_a22b", 4096, 1536, 128, 8, 0, "softmax", 128,
                "Qwen3-235B-A22B config.json: hidden_size, moe_intermediate_size, num_experts, num_experts_per_tok"),
    # allenai/OLMoE-1B-7B-0924 config.json: hidden_size 2048, intermediate_size 1024, num_experts 64,
    # num_experts_per_tok 8, no shared expert, softmax router.
    BlockConfig("olmoe_1b_7b", 2048, 1024, 64, 8, 0, "softmax", 64,
                "OLMoE-1B-7B-0924 config.json: hidden_size, intermediate_size, num_experts, num_experts_per_tok"),
    # databricks/dbrx-base config.json: d_model 6144, ffn_config.ffn_hidden_size 10752, moe_num_experts 16,
    # moe_top_k 4, softmax router, no shared expert.
    BlockConfig("dbrx", 6144, 10752, 16, 4, 0, "softmax", 16,
                "dbrx-base config.json: d_model, ffn_config.ffn_hidden_size, moe_num_experts, moe_top_k"),
    # microsoft/Phi-3.5-MoE-instruct config.json: hidden_size 4096, intermediate_size 6400, num_local_experts 16,
    # num_experts_per_tok 2 (its sparsemixer router is priced as the softmax router: same kernels' bytes).
    BlockConfig("phi35_moe", 4096, 6400, 16, 2, 0, "softmax", 16,
                "Phi-3.5-MoE-instruct config.json: hidden_size, intermediate_size, num_local_experts, "
                "num_experts_per_tok"),
    # Fresh round 2 (added 2026-12-04; pre-registered: model committed before measurement). Every layer's experts on
    # one GPU (no EP variant needed: the largest, minimax_m1, is 32 x 3 x 6144 x 9216 = 5.4e9 parameters, ~63 GB
    # estimated at 32768 tokens fp8 rowwise, under MAX_MEMORY_BYTES).
    # ibm-granite/granite-3.1-3b-a800m-instruct config.json: hidden_size 1536, intermediate_size 512 (per expert;
    # input_linear holds w1 and w3 as [40, 1024, 1536]), num_local_experts 40, num_experts_per_tok 8, no shared
    # expert, softmax over the top-k logits.
    BlockConfig("granite_3b_a800m", 1536, 512, 40, 8, 0, "softmax", 40,
                "granite-3.1-3b-a800m-instruct config.json: hidden_size, intermediate_size, num_local_experts, "
                "num_experts_per_tok"),
    # baidu/ERNIE-4.5-21B-A3B-PT config.json: hidden_size 2560, moe_intermediate_size 1536, moe_num_experts 64,
    # moe_k 6, moe_num_shared_experts 2 (one shared MLP of moe_intermediate_size x 2 = 3072, as transformers'
    # ernie4_5_moe modelling builds it); softmax router (its e_score_correction_bias is not modelled).
    BlockConfig("ernie45_21b_a3b", 2560, 1536, 64, 6, 2 * 1536, "softmax", 64,
                "ERNIE-4.5-21B-A3B-PT config.json: hidden_size, moe_intermediate_size, moe_num_experts, moe_k, "
                "moe_num_shared_experts=2"),
    # Qwen/Qwen2-57B-A14B config.json: hidden_size 3584, moe_intermediate_size 2560, num_experts 64,
    # num_experts_per_tok 8, shared_expert_intermediate_size 20480, softmax router (norm_topk_prob false). The shared
    # expert's sigmoid gate (one [dim, 1] projection) is not modelled.
    BlockConfig("qwen2_57b_a14b", 3584, 2560, 64, 8, 20480, "softmax", 64,
                "Qwen2-57B-A14B config.json: hidden_size, moe_intermediate_size, num_experts, num_experts_per_tok, "
                "shared_expert_intermediate_size"),
    # MiniMax-M1 config.json (MiniMaxAI): hidden_size 6144, intermediate_size 9216, num_local_experts 32,
    # num_experts_per_tok 2, no shared expert, softmax router (Mixtral's).
    BlockConfig("minimax_m1", 6144, 9216, 32, 2, 0, "softmax", 32,
                "MiniMax-M1 config.json: hidden_size, intermediate_size, num_local_experts, num_experts_per_tok"),
    # Fresh round 3 (added 2026-12-04, evening; pre-registered: the block model with its event law committed before
    # measurement). Every layer's experts on one GPU (the largest, hunyuan_large, 16 x 3 x 6400 x 18304 = 5.6e9
    # routed parameters plus a shared expert of 18304).
    # zai-org/GLM-4.5-Air (NVIDIA Megatron-Bridge docs/models/glm/glm45.md): hidden 4096, MoE FFN hidden 1408, 128
    # experts, top-8, one shared expert of 1408, sigmoid router with expert bias (the bias is not modelled).
    BlockConfig("glm45_air", 4096, 1408, 128, 8, 1408, "sigmoid", 128,
                "GLM-4.5-Air (Megatron-Bridge glm45.md): hidden size, MoE FFN hidden size, experts, top-k, shared "
                "expert intermediate size"),
    # zai-org/GLM-4.5 (same source): hidden 5120, MoE FFN hidden 1536, 160 experts, top-8, one shared expert of
    # 1536, sigmoid router.
    BlockConfig("glm45", 5120, 1536, 160, 8, 1536, "sigmoid", 160,
                "GLM-4.5 (Megatron-Bridge glm45.md): hidden size, MoE FFN hidden size, experts, top-k, shared expert "
                "intermediate size"),
    # mistralai Mixtral-8x22B-v0.1 config.json: hidden_size 6144, intermediate_size 16384, num_local_experts 8,
    # num_experts_per_tok 2, no shared expert, softmax router.
    BlockConfig("mixtral_8x22b", 6144, 16384, 8, 2, 0, "softmax", 8,
                "Mixtral-8x22B-v0.1 config.json: hidden_size, intermediate_size, num_local_experts, "
                "num_experts_per_tok"),
    # tencent Hunyuan-A52B-Instruct (Hunyuan-Large) config.json: hidden_size 6400, intermediate_size 18304,
    # num_experts 16, moe_topk 1, num_shared_expert 1 (use_mixed_mlp_moe: a shared MLP of intermediate_size);
    # softmax router.
    BlockConfig("hunyuan_large", 6400, 18304, 16, 1, 18304, "softmax", 16,
                "Hunyuan-A52B-Instruct config.json: hidden_size, intermediate_size, num_experts, moe_topk, "
                "num_shared_expert=1"),
    # Fresh round 4 (added 2026-12-04, night; pre-registered: the schema-2 grouped-GEMM model and the event law
    # refitted on it committed before measurement). Every layer's experts on one GPU (the largest, arctic,
    # 128 x 3 x 7168 x 4864 = 1.34e10 routed parameters, against deepseek_v3's 1.13e10 measured so).
    # MiniMax-M2 config.json (transformers MiniMaxM2Config defaults): hidden_size 3072, intermediate_size 1536,
    # 256 local experts, top-8, no shared expert, sigmoid router with a routing bias (the bias is not modelled).
    BlockConfig("minimax_m2", 3072, 1536, 256, 8, 0, "sigmoid", 256,
                "MiniMax-M2 config.json (transformers MiniMaxM2Config): hidden_size, intermediate_size, "
                "num_local_experts, num_experts_per_tok, scoring_func=sigmoid"),
    # Qwen/Qwen3-Coder-480B-A35B-Instruct config.json: hidden_size 6144, moe_intermediate_size 2560, num_experts
    # 160, num_experts_per_tok 8, shared_expert_intermediate_size 0, softmax router (norm_topk_prob true).
    BlockConfig("qwen3_coder_480b", 6144, 2560, 160, 8, 0, "softmax", 160,
                "Qwen3-Coder-480B-A35B-Instruct config.json: hidden_size, moe_intermediate_size, num_experts, "
                "num_experts_per_tok"),
    # Snowflake/snowflake-arctic-instruct config.json: hidden_size 7168, intermediate_size 4864, num_local_experts
    # 128, num_experts_per_tok 2, softmax router. Its dense residual MLP runs beside the MoE block, not in it: not
    # part of this block.
    BlockConfig("arctic", 7168, 4864, 128, 2, 0, "softmax", 128,
                "snowflake-arctic-instruct config.json: hidden_size, intermediate_size, num_local_experts, "
                "num_experts_per_tok"),
    # Round 5, blocks only (added 2026-12-04, night; pre-registered: the model of round 4 unchanged, committed before
    # measurement): a few-expert family with the largest experts, where eager rowwise comes nearest to paying.
    # xai-org/grok-1 run.py: emb_size 48 x 128 = 6144, widening_factor 8 -> ffn_size 32768 (model.py ffn_size:
    # int(8 x 6144) x 2 // 3, a multiple of 8), num_experts 8, num_selected_experts 2; softmax router, no shared
    # expert. Its expert GEMM shapes (6144 x 32768, 32768 x 6144) are in round 3's grouped sweep (mixtral_8x22b's
    # fused w13), in no fit.
    BlockConfig("grok1", 6144, 32768, 8, 2, 0, "softmax", 8,
                "grok-1 run.py/model.py (config.json equivalent): emb_size, ffn_size(emb_size, widening_factor=8), "
                "num_experts, num_selected_experts"),
    # Round 6, blocks only (added 2026-12-04, night; pre-registered: the model with the H200 power-cap term,
    # POWER_CAP_SLOPE, committed before measurement).
    # Skywork/Skywork-MoE-Base config.json: hidden_size 4608, intermediate_size 12288, num_experts [16]; top-2 routing
    # (Skywork-MoE tech report, arXiv 2406.06563; 52 layers x 2 x 3 x 4608 x 12288 = 17.7e9 active expert parameters
    # of its 22e9 active), softmax gate, no shared expert. Its expert GEMM shapes (4608 x 12288) are in no sweep.
    BlockConfig("skywork_moe", 4608, 12288, 16, 2, 0, "softmax", 16,
                "Skywork-MoE-Base config.json: hidden_size, intermediate_size, num_experts; top-2 (tech report)"),
    # The llama4_maverick layer as one of EP=16 GPUs holds it: 128 / 16 = 8 local experts, top-1, the shared expert
    # and the 128-output router kept (as deepseek_v3_ep8). A fit family's expert shapes in the GEMM-dense regime: an
    # in-shape check of the power-cap term, not a held-out family.
    BlockConfig("llama4_maverick_ep16", 5120, 8192, 8, 1, 8192, "sigmoid", 128,
                "Llama-4-Maverick-17B-128E config.json as above; local-experts variant 128/EP16 = 8 experts on this "
                "GPU"),
    # Synthetic fit shapes (added 2026-12-04, night; not models): few-expert, large-expert blocks in the GEMM-dense
    # regime (bf16 tensor loads 0.62-0.72 as priced), whose (dim, inter) no named family has, measured as fit data
    # for a refit of the event law at long steps (the only fit-family shape that reaches that regime is
    # llama4_maverick's). Never a held-out family.
    BlockConfig("synth_a", 3328, 11776, 8, 2, 0, "softmax", 8, "synthetic fit shape (not a model)"),
    BlockConfig("synth_b", 5632, 14848, 8, 2, 0, "softmax", 8, "synthetic fit shape (not a model)"),
    BlockConfig("synth_c", 4352, 20480, 16, 2, 0, "softmax", 16, "synthetic fit shape (not a model)"),
    BlockConfig("synth_d", 7680, 10240, 8, 1, 0, "softmax", 8, "synthetic fit shape (not a model)"),
    BlockConfig("synth_e", 6656, 28672, 8, 2, 0, "softmax", 8, "synthetic fit shape (not a model)"),
    # Round 11 for the H100 SXM (added 2026-12-07; pre-registered: the model of round 10 unchanged, committed before
    # measurement): families whose (dim, inter) no earlier family had, for a test held out by shape. No GEMM shape of
    # theirs is a fit family's or one of the H100 rows the twin transfer was chosen on (round 8's families); two of
    # the down / dgrad shapes are held-out families' (hunyuan_a13b's 3072 x 4096 is qwen3_235b_a22b's fused gate/up,
    # qwen3_next_80b_a3b's 1024 x 2048 olmoe_1b_7b's), which no fit used.
    # baidu ERNIE-4.5-300B-A47B, PaddlePaddle/ERNIE examples/pre-training/model_configs/ERNIE-4p5-300B-A47B/
    # model_config.json: hidden_size 8192, moe_intermediate_size 3584, moe_num_experts 64, moe_k 8,
    # moe_num_shared_experts 0; softmax router (its selection-only bias correction is not modelled).
    BlockConfig("ernie45_300b_a47b", 8192, 3584, 64, 8, 0, "softmax", 64,
                "ERNIE-4p5-300B-A47B model_config.json (PaddlePaddle/ERNIE): hidden_size, moe_intermediate_size, "
                "moe_num_experts, moe_k, moe_num_shared_experts=0"),
    # Tencent-Hunyuan/Hunyuan-A13B models/config.json: hidden_size 4096, moe_intermediate_size 3072, num_experts 64,
    # moe_topk 8, num_shared_expert 1 (modeling_hunyuan.py: shared width intermediate_size x num_shared_expert =
    # 3072); softmax gate.
    BlockConfig("hunyuan_a13b", 4096, 3072, 64, 8, 3072, "softmax", 64,
                "Hunyuan-A13B models/config.json: hidden_size, moe_intermediate_size, num_experts, moe_topk, "
                "num_shared_expert=1 x intermediate_size"),
    # xai-org/grok-2 config.json as quoted by AMD Primus-Turbo's grouped-GEMM benchmark cases ("Grok-V2":
    # hidden_size 8192, moe_intermediate_size 16384, 8 experts, top-2); softmax router (vLLM grok1.py; its logit
    # softcap and GELU experts are not modelled: the bench's experts are SwiGLU, the same GEMM shapes). Its residual
    # dense MLP (residual_moe) runs beside the MoE block, not in it, as arctic's: not part of this block.
    BlockConfig("grok2", 8192, 16384, 8, 2, 0, "softmax", 8,
                "grok-2 config.json (quoted by Primus-Turbo's grouped-GEMM cases): hidden_size, "
                "moe_intermediate_size, experts 8, top-2"),
    # Qwen/Qwen3-Next-80B-A3B (transformers configuration_qwen3_next.py defaults, whose docstring names the
    # checkpoint; Megatron-Bridge's qwen3_next_80b_a3b test fixture agrees): hidden_size 2048, moe_intermediate_size
    # 512, num_experts 512, num_experts_per_tok 10, shared_expert_intermediate_size 512 (its sigmoid gate on the
    # shared expert is not modelled); softmax router.
    BlockConfig("qwen3_next_80b_a3b", 2048, 512, 512, 10, 512, "softmax", 512,
                "Qwen3-Next-80B-A3B (transformers Qwen3NextConfig defaults): hidden_size, moe_intermediate_size, "
                "num_experts, num_experts_per_tok, shared_expert_intermediate_size"),
    # IEIT-Yuan/Yuan2.0-M32 examples/pretrain_yuan2.0_moe_2x32B.sh: --hidden-size 2048 --num-experts 32
    # --moe-router-topk 2, no --ffn-hidden-size (megatron/arguments.py: 4 x hidden = 8192); softmax over its
    # attention router's scores (the attention router is priced as the bench's linear one).
    BlockConfig("yuan2_m32", 2048, 8192, 32, 2, 0, "softmax", 32,
                "Yuan2.0-M32 pretrain_yuan2.0_moe_2x32B.sh: hidden-size, num-experts, moe-router-topk; "
                "ffn-hidden-size default 4 x hidden"),
    # Round 12 for the H100 SXM (added 2026-12-07; pre-registered: the rows committed before any of them is
    # measured): families chosen held out by shape. No (dim, inter) of theirs is an earlier row's, synth_* rows
    # included, and none of their expert GEMM shapes (dim x 2*inter, inter x dim, 2*inter x dim, dim x inter) is one
    # of any earlier row's four; nor do two of them share one. A mix: one few-expert, GEMM-dense family at EP=2
    # (jamba15_large_ep2), two many-small-expert ones (step35_flash, ling_flash_20), a mid one (step3) and a small
    # 8-expert one (minicpm_moe_8x2b). The largest routed block on one GPU: step3, 48 x 3 x 7168 x 5120 = 5.3e9
    # parameters plus its shared expert of 5120.
    # ai21labs/AI21-Jamba-1.5-Large config.json as transcribed by abhibambhaniya/GenZ-LLM-Analyzer
    # GenZ/Models/Model_sets/misc.py: hidden_size 8192, intermediate_size 24576, num_experts 16, num_experts_per_tok 2
    # (its expert_top_k), expert_layer_period 2 over 72 layers (36 MoE layers x 16 x 3 x 8192 x 24576 = 348e9 of the
    # 398e9 published parameters); no shared expert; softmax router (transformers' Jamba MoE block is Mixtral's).
    # Its 16 experts (9.7e9 parameters) exceed one GPU's budget: the layer as one of EP=2 GPUs holds it, 16 / 2 = 8
    # local experts (4.8e9), the router's 16 outputs kept (as deepseek_v3_ep8). Its Mamba layers are not this block.
    BlockConfig("jamba15_large_ep2", 8192, 24576, 8, 2, 0, "softmax", 16,
                "AI21-Jamba-1.5-Large config.json (transcribed in GenZ-LLM-Analyzer Model_sets/misc.py): hidden_size, "
                "intermediate_size, num_experts, top-k; local-experts variant 16/EP2 = 8 experts on this GPU"),
    # stepfun-ai Step-3 (vLLM vllm/transformers_utils/configs/step3_vl.py, Step3TextConfig defaults): hidden_size
    # 7168, moe_intermediate_size 5120, moe_num_experts 48, moe_top_k 3, share_expert_dim 5120 (one shared expert),
    # norm_expert_weight false; softmax router (vLLM step3_text.py: FusedMoE's default scoring). stepfun-ai/Step3
    # README.md's model card agrees: hidden 7168, 48 experts, 3 selected, 1 shared expert.
    BlockConfig("step3", 7168, 5120, 48, 3, 5120, "softmax", 48,
                "Step-3 (vLLM Step3TextConfig defaults; Step3 README model card): hidden_size, moe_intermediate_size, "
                "moe_num_experts, moe_top_k, share_expert_dim"),
    # stepfun-ai/Step-3.5-Flash (NVIDIA Megatron-Bridge src/megatron/bridge/models/stepfun/configuration_step35.py,
    # Step35Config defaults, whose docstring says they mirror the published model): hidden_size 4096,
    # moe_intermediate_size 1280, moe_num_experts 288, moe_top_k 8, share_expert_dims 1280 (one shared expert). Router:
    # sigmoid with a routing bias and scaling factor 3.0 (moe_router_activation "sigmoid", use_moe_router_bias, in
    # jamesETsmith/ATOM atom/model_config/step3p5.py, a mirror of the published configuration_step3p5.py; the bias
    # and scale are not modelled). vLLM's own Step3p5Config carries generic defaults (hidden 5120, softmax) and reads
    # the real values from the checkpoint: not a copy. stepfun-ai/Step-3.5-Flash README.md agrees: hidden 4096, 288
    # routed experts + 1 shared, top-8.
    BlockConfig("step35_flash", 4096, 1280, 288, 8, 1280, "sigmoid", 288,
                "Step-3.5-Flash (Megatron-Bridge Step35Config defaults; ATOM step3p5.py): hidden_size, "
                "moe_intermediate_size, moe_num_experts, moe_top_k, share_expert_dims, moe_router_activation=sigmoid"),
    # inclusionAI Ling-flash-2.0 (Ascend/MindSpeed-LLM examples/mcore/ling_v2/pretrain_ling_flash_100b_4k_ptd_A3.sh):
    # --hidden-size 4096 --moe-ffn-hidden-size 1024 --num-experts 256 --moe-router-topk 8 --n-shared-experts 1 (one
    # shared expert of moe-ffn-hidden-size 1024) --moe-router-score-function sigmoid (its group-limited routing, 8
    # groups / top-4 groups, and the expert bias are not modelled). Megatron-Bridge docs/models/bailing/ling-2.md
    # agrees on 256 experts, top-8, sigmoid routing.
    BlockConfig("ling_flash_20", 4096, 1024, 256, 8, 1024, "sigmoid", 256,
                "Ling-flash-2.0 (MindSpeed-LLM pretrain_ling_flash_100b_4k_ptd_A3.sh): hidden-size, "
                "moe-ffn-hidden-size, num-experts, moe-router-topk, n-shared-experts=1, "
                "moe-router-score-function=sigmoid"),
    # openbmb/MiniCPM-MoE-8x2B (Ascend/MindSpeed-LLM examples/mcore/minicpm/pretrain_minicpm_8x2b.sh): --hidden-size
    # 2304 --ffn-hidden-size 5760 (the experts' width: the script sets no moe-ffn-hidden-size) --num-experts 8
    # --moe-router-topk 2 --swiglu, no shared expert; softmax router (Megatron's default score function).
    BlockConfig("minicpm_moe_8x2b", 2304, 5760, 8, 2, 0, "softmax", 8,
                "MiniCPM-MoE-8x2B (MindSpeed-LLM pretrain_minicpm_8x2b.sh): hidden-size, ffn-hidden-size, num-experts, "
                "moe-router-topk"),
)  # fmt: skip
MODEL_BY_NAME: dict[str, BlockConfig] = {m.name: m for m in MODELS}

TOKENS: tuple[int, ...] = (8192, 4096, 16384, 32768)  # priority order: every model at 8192 first
ROUTINGS: tuple[str, ...] = ("balanced", "skewed")  # "natural" (the router's own top-k) is accepted too
ALL_ROUTINGS: tuple[str, ...] = ("balanced", "skewed", "natural")
RECIPES: tuple[str, ...] = ("bf16", "fp8_rowwise")
ALIGN: Mapping[str, int] = {"bf16": 8, "fp8_rowwise": 16}  # token-group alignment (rows), see module doc
SKEW_ALPHA = 1.0  # Dirichlet concentration of the skewed expert popularity
SEED = 0
WARMUP_MS = 25.0  # do_bench's own defaults
REP_MS = 100.0
MAX_MEMORY_BYTES = 120e9  # items estimated above this are planned as skipped (the H200 has ~141 GB)
PROFILE_ITERS = 3
EST_FLOPS_PER_S = {"bf16": 600e12, "fp8_rowwise": 850e12}  # sizing only (grouped GEMM, measured ~ in db778b4)
EST_BYTES_PER_S = 3.0e12
EST_HOST_CALL_S = {"bf16": 2.5e-3, "fp8_rowwise": 5e-3}  # eager fwd+bwd host time (Python + launches)
EST_ITEM_SETUP_S = 1.0
EST_FIRST_FP8_S = {"time": 12.0, "kernels": 3.0}  # Triton JIT (cached on disk after the time phase) + autotune
# of torchao's cast kernels, once per process and model dims
#: the grouped GEMMs of the ``pieces`` phase -> (op, K, N) in perfmodel.moe's convention (``grouped_gemm``: ``fwd``
#: ``x[R, K] @ w[G, K, N]``; ``dgrad`` that forward's input gradient, ``[R, N] @ w^T``; ``wgrad`` its weight gradient,
#: ``dy^T @ x`` with ``dy[R, N]``, ``x[R, K]``), K and N named by the block's widths: ``w13`` is one of the
#: gate / up projections (dim -> inter), ``w2`` the down projection (inter -> dim). Written into every pieces record.
PIECE_GEMMS: Mapping[str, tuple[str, str, str]] = {
    "gemm_w13_fwd": ("fwd", "dim", "inter"),
    "gemm_w13_dgrad": ("dgrad", "dim", "inter"),
    "gemm_w13_wgrad": ("wgrad", "dim", "inter"),
    "gemm_w2_fwd": ("fwd", "inter", "dim"),
    "gemm_w2_dgrad": ("dgrad", "inter", "dim"),
    "gemm_w2_wgrad": ("wgrad", "inter", "dim"),
}
WRITE_NAMES = {
    "time": "moe_block_time.json",
    "kernels": "moe_block_kernels.json",
    "pieces": "moe_block_pieces.json",
    "selftest": "moe_block_selftest.json",
    "plan": "moe_block_plan.json",
    "seed": "moe_seed_status.json",
}
