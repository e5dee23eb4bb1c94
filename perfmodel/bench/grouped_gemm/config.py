"""The grouped-GEMM sweep's fixed settings: the MoE models swept (MOE_MODELS, from each model's published
config), the plan's sizes and draws, the variants and their padding, the timing settings, the cost-model constants
and the file names. Pure data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

__all__ = [
    "BF16",
    "DO_BENCH_HOST_S",
    "EMPTY_FRACTION",
    "EST_BF16_FLOPS",
    "EST_BYTES_PER_S",
    "EST_FILL_BYTES_PER_S",
    "EST_FP8_FLOPS",
    "EST_LAUNCH_S",
    "EST_TILE_K",
    "EST_TILE_ROWS",
    "FAMILIES",
    "FLUSH_BYTES",
    "FLUSH_S",
    "FP8",
    "FWD_VARIANTS",
    "GPU_WARM_S",
    "G_SET",
    "KERNELS_BUDGET_S",
    "KERNELS_FILE",
    "KERNELS_ITEM_OVERHEAD_S",
    "KERNELS_SHAPE_OVERHEAD_S",
    "KERNELS_STARTUP_S",
    "MAX_ITEM_KERNEL_S",
    "MAX_ROWS_PER_GROUP",
    "MAX_TOTAL_ROWS",
    "MIN_REPS",
    "MIN_ROWS_PER_GROUP",
    "MOE_MODELS",
    "NB_KERNELS_FILE",
    "NB_TIME_FILE",
    "NEIGHBOURS_4096",
    "NEIGHBOURS_VOCAB",
    "NEIGHBOUR_BIG",
    "NEIGHBOUR_FAMILY",
    "NEIGHBOUR_PASSES",
    "NEIGHBOUR_SCALINGS",
    "PADDING_WHY",
    "PLAN_FILE",
    "PROBE_CRASH_EXIT",
    "PROBE_FILE",
    "PROFILED_CALLS",
    "PROFILE_WARMUP_CALLS",
    "QUICK_MAX_KERNEL_S",
    "QUICK_NEIGHBOURS",
    "QUICK_SHAPES_PER_FAMILY",
    "RANDOM_FAMILY",
    "RANDOM_FWD_PAIRS",
    "RANDOM_G_PER_PAIR",
    "RANDOM_KN",
    "RANDOM_WGRAD_PAIRS",
    "REP_MS",
    "REQUIRED_FIELDS",
    "SCHEMA_TAG",
    "SKEW_ALPHAS",
    "TIME_BUDGET_S",
    "TIME_FILE",
    "TIME_ITEM_OVERHEAD_S",
    "TIME_SHAPE_OVERHEAD_S",
    "TIME_STARTUP_S",
    "WARMUP_MS",
    "WGRAD_VARIANTS",
    "WRITE_EVERY_S",
    "GroupedGemmError",
    "Log",
    "MoEModel",
]


Log = Callable[[str], None]


class GroupedGemmError(ValueError):
    """A bad argument to the grouped-GEMM sweep (group sizes, counts, families, files)."""


# ---- models (sources: each model's published config; the expert FFN only) -----------------------


@dataclasses.dataclass(frozen=True)
class MoEModel:
    """One MoE model's routed-expert FFN: ``hidden`` (model dim), ``inter`` (expert intermediate dim), ``experts``
    (routed experts per layer), ``top_k`` (experts per token), ``source`` (where the numbers come from)."""

    name: str
    hidden: int
    inter: int
    experts: int
    top_k: int
    source: str


MOE_MODELS: tuple[MoEModel, ...] = (
    MoEModel(
        "deepseek_v3",
        7168,
        2048,
        256,
        8,
        "DeepSeek-V3 config.json: hidden_size, moe_intermediate_size, n_routed_experts, num_experts_per_tok",
    ),
    MoEModel(
        "deepseek_v3_16b",
        2048,
        1408,
        64,
        6,
        "torchtitan deepseek_v3 '16B' flavour (DeepSeek-MoE-16B): dim, "
        "moe_inter_dim, n_routed_experts, n_activated_experts",
    ),
    MoEModel(
        "qwen3_30b_a3b",
        2048,
        768,
        128,
        8,
        "Qwen3-30B-A3B config.json: hidden_size, moe_intermediate_size, num_experts, num_experts_per_tok",
    ),
    MoEModel(
        "llama4_scout",
        5120,
        8192,
        16,
        1,
        "Llama-4-Scout-17B-16E config.json text_config: hidden_size, "
        "intermediate_size, num_local_experts, num_experts_per_tok",
    ),
    MoEModel(
        "llama4_maverick",
        5120,
        8192,
        128,
        1,
        "Llama-4-Maverick-17B-128E config.json text_config: hidden_size, "
        "intermediate_size, num_local_experts, num_experts_per_tok",
    ),
    MoEModel(
        "mixtral_8x7b",
        4096,
        14336,
        8,
        2,
        "Mixtral-8x7B-v0.1 config.json: hidden_size, intermediate_size, num_local_experts, num_experts_per_tok",
    ),
    MoEModel(
        "gpt_oss_120b",
        2880,
        2880,
        128,
        4,
        "gpt-oss-120b config.json: hidden_size, intermediate_size, num_local_experts, experts_per_token",
    ),
    # the fresh families (added 2026-12-03, measured after their predictions were committed; no (K, N) of them is in
    # any earlier family)
    MoEModel(
        "qwen3_235b_a22b",
        4096,
        1536,
        128,
        8,
        "Qwen3-235B-A22B config.json: hidden_size, moe_intermediate_size, num_experts, num_experts_per_tok",
    ),
    MoEModel(
        "olmoe_1b_7b",
        2048,
        1024,
        64,
        8,
        "OLMoE-1B-7B-0924 config.json: hidden_size, intermediate_size, num_experts, num_experts_per_tok",
    ),
    MoEModel(
        "dbrx",
        6144,
        10752,
        16,
        4,
        "dbrx-base config.json: d_model, ffn_config.ffn_hidden_size, ffn_config.moe_num_experts, ffn_config.moe_top_k",
    ),
    MoEModel(
        "phi35_moe",
        4096,
        6400,
        16,
        2,
        "Phi-3.5-MoE-instruct config.json: hidden_size, intermediate_size, num_local_experts, num_experts_per_tok",
    ),
    # fresh round 2 (added 2026-12-04; pre-registered: model committed before measurement; no (K, N) of them is in
    # any earlier family nor in another round-2 family; experts from 512 to 9216 wide)
    MoEModel(
        "granite_3b_a800m",
        1536,
        512,
        40,
        8,
        "granite-3.1-3b-a800m-instruct config.json: hidden_size, intermediate_size, num_local_experts, "
        "num_experts_per_tok",
    ),
    MoEModel(
        "ernie45_21b_a3b",
        2560,
        1536,
        64,
        6,
        "ERNIE-4.5-21B-A3B-PT config.json: hidden_size, moe_intermediate_size, moe_num_experts, moe_k",
    ),
    MoEModel(
        "qwen2_57b_a14b",
        3584,
        2560,
        64,
        8,
        "Qwen2-57B-A14B config.json: hidden_size, moe_intermediate_size, num_experts, num_experts_per_tok",
    ),
    MoEModel(
        "minimax_m1",
        6144,
        9216,
        32,
        2,
        "MiniMax-M1 config.json: hidden_size, intermediate_size, num_local_experts, num_experts_per_tok",
    ),
    # fresh round 3 (added 2026-12-04, evening; pre-registered: model committed before measurement; no (K, N) of them
    # is in any earlier family nor in another round-3 family; hunyuan_large's N 18304 is beyond every fit's N)
    MoEModel(
        "glm45_air",
        4096,
        1408,
        128,
        8,
        "zai-org/GLM-4.5-Air (Megatron-Bridge docs/models/glm/glm45.md): hidden 4096, MoE FFN hidden 1408, 128 "
        "experts, top-8",
    ),
    MoEModel(
        "glm45",
        5120,
        1536,
        160,
        8,
        "zai-org/GLM-4.5 (Megatron-Bridge docs/models/glm/glm45.md): hidden 5120, MoE FFN hidden 1536, 160 experts, "
        "top-8",
    ),
    MoEModel(
        "mixtral_8x22b",
        6144,
        16384,
        8,
        2,
        "Mixtral-8x22B-v0.1 config.json: hidden_size, intermediate_size, num_local_experts, num_experts_per_tok",
    ),
    MoEModel(
        "hunyuan_large",
        6400,
        18304,
        16,
        1,
        "Hunyuan-A52B-Instruct (Hunyuan-Large) config.json: hidden_size, intermediate_size, num_experts, moe_topk",
    ),
    # fresh round 4 (added 2026-12-04, night; pre-registered: the schema-2 grouped model and its refitted block law
    # committed before measurement; no (K, N) of them is in any earlier family nor in another round-4 family)
    MoEModel(
        "minimax_m2",
        3072,
        1536,
        256,
        8,
        "MiniMax-M2 config.json (as transformers' MiniMaxM2Config defaults and tenstorrent's MiniMaxM2TTConfig "
        "state it): hidden_size 3072, intermediate_size 1536, num_local_experts 256, num_experts_per_tok 8",
    ),
    MoEModel(
        "qwen3_coder_480b",
        6144,
        2560,
        160,
        8,
        "Qwen3-Coder-480B-A35B-Instruct config.json: hidden_size, moe_intermediate_size, num_experts, "
        "num_experts_per_tok",
    ),
    MoEModel(
        "arctic",
        7168,
        4864,
        128,
        2,
        "Snowflake/snowflake-arctic-instruct config.json: hidden_size, intermediate_size, num_local_experts, "
        "num_experts_per_tok",
    ),
)
RANDOM_FAMILY = "random"
NEIGHBOUR_FAMILY = "fp8_neighbours"
FAMILIES: tuple[str, ...] = (*(m.name for m in MOE_MODELS), RANDOM_FAMILY)

# ---- the plan's constants ---------------------------------------------------------------------------

G_SET: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256)  # group counts (the brief's set)
MAX_ROWS_PER_GROUP = 16384  # the mean rows per group m is drawn up to this ...
MAX_TOTAL_ROWS = 131072  # ... and to T = G*m <= this: 8192 tokens x top-16 routed rows on one GPU, or 16384 x top-8
MIN_ROWS_PER_GROUP = 1
SKEW_ALPHAS: tuple[float, ...] = (1.0, 0.3)  # Dirichlet concentration of the skewed vectors, cycled over shapes
EMPTY_FRACTION = 0.25  # share of the groups an ``empty`` vector leaves empty (at least one, at most G - 1)
RANDOM_KN: tuple[int, int] = (512, 8192)  # random family: K and N log-uniform here, rounded to multiples of 16
RANDOM_FWD_PAIRS = 12  # random (K, N) of the fwd form ...
RANDOM_WGRAD_PAIRS = 8  # ... and of the wgrad form ...
RANDOM_G_PER_PAIR = 3  # ... each at this many G drawn from G_SET
MAX_ITEM_KERNEL_S = 0.02  # m is capped so that no item is estimated over 20 ms (sizing, see estimate_item_kernel_s)
QUICK_SHAPES_PER_FAMILY = 1  # --quick: this many shapes per family (those estimated under QUICK_MAX_KERNEL_S) ...
QUICK_MAX_KERNEL_S = 2e-3
QUICK_NEIGHBOURS = 4  # ... and this many neighbour items

FP8 = "fp8_e4m3_rowwise"
BF16 = "bf16"
# (format, layout, padding multiple or None). Padding: every group max(rows, multiple) rounded up to the multiple.
FWD_VARIANTS: tuple[tuple[str, str, int | None], ...] = (
    (BF16, "a_row_b_col", None),
    (BF16, "a_row_b_row", None),
    (FP8, "a_row_b_col", 16),
)
WGRAD_VARIANTS: tuple[tuple[str, str, int | None], ...] = (
    (BF16, "a_col_b_row", None),
    (BF16, "a_row_b_col", 8),
    (FP8, "a_row_b_col", 16),
)
PADDING_WHY: Mapping[int, str] = {
    16: "torchtitan/torchao pad fp8 rowwise token groups to max(n, 16) rounded up to 16 (TOKEN_GROUP_ALIGN_SIZE_M): "
    "the 2D x 2D wgrad needs every group but the last a multiple of 16 bytes (device assert in torch's "
    "prepare_grouped_gemm_data) and a total that is a multiple of 16 (host check); the forward runs the same tokens",
    8: "bf16 2D x 2D with A row-major / B column-major: torch asserts on the device that every group but the last is "
    "a multiple of 16 bytes (8 bf16 elements); torchtitan pads bf16 groups to max(n, 8) rounded up to 8",
}
NEIGHBOURS_4096: tuple[int, ...] = (4032, 4048, 4064, 4080, 4096, 4112, 4128)  # aligned (x16) neighbours of 4096
NEIGHBOURS_VOCAB: tuple[int, ...] = (50240, 50256, 50272, 50288, 50304)  # around GPT-2/NeoX's padded vocab 50304
NEIGHBOUR_BIG = 8192  # the two dims not varied
NEIGHBOUR_SCALINGS: tuple[str, ...] = ("tensorwise", "rowwise")
NEIGHBOUR_PASSES = 2  # pass 0 in series order, pass 1 shuffled with the seed: the same GEMMs twice

# ---- timing settings ------------------------------------------------------------------------------
WARMUP_MS = 25.0  # do_bench's own defaults (the brief asks for them)
REP_MS = 100.0
MIN_REPS = 10  # rep is raised to MIN_REPS kernel times for long kernels
TIME_BUDGET_S = 330.0  # the time phase stops starting items after this (the wrapper shrinks it to the deadline)
KERNELS_BUDGET_S = 120.0
PROFILED_CALLS = 5
PROFILE_WARMUP_CALLS = 2
FLUSH_BYTES = 256 * 2**20  # L2 flush buffer (as do_bench's), zeroed before each profiled call
GPU_WARM_S = 1.0
WRITE_EVERY_S = 10.0

# ---- estimator constants (seconds; sizing only) ------------------------------------------------------
# Rates: H200 dense bf16 measured at 788 TFLOP/s and a 4.3 TB/s copy (KINDS.md, 2026-10-28); grouped CUTLASS kernels
# are taken a little lower. Per-item wall of do_bench at 25/100 ms: 0.115 s median over 1743 dense GEMMs
# (benchmarks/data/h200_2026-12-01, seed 2086 "defaults" time file); kernel phase: 35 s for 4725 items (seed 2086).
EST_BF16_FLOPS = 650e12
EST_FP8_FLOPS = 1100e12
EST_BYTES_PER_S = 3.5e12
EST_LAUNCH_S = 8e-6  # prepare_grouped_gemm_data + the GEMM launch
EST_TILE_ROWS = 128  # a group's rows are computed in tiles of 128 (fwd) ...
EST_TILE_K = 64  # ... and a wgrad group's tokens in K tiles of 64
FLUSH_S = 85e-6  # zeroing 256 MiB at ~3 TB/s
DO_BENCH_HOST_S = 2e-3
TIME_ITEM_OVERHEAD_S = 8e-3  # operands, Python per item
TIME_SHAPE_OVERHEAD_S = 0.02  # weights of a shape (plus their bytes at EST_FILL_BYTES_PER_S)
EST_FILL_BYTES_PER_S = 0.5e12  # torch.randn + casts
TIME_STARTUP_S = 15.0
KERNELS_ITEM_OVERHEAD_S = 8e-3
KERNELS_SHAPE_OVERHEAD_S = 0.06  # one profiler session and the trace
KERNELS_STARTUP_S = 20.0

PLAN_FILE = "grouped_gemm_plan{suffix}.json"
PROBE_FILE = "grouped_gemm_probe{suffix}.json"
TIME_FILE = "grouped_gemm_time{suffix}.json"
KERNELS_FILE = "grouped_gemm_kernels{suffix}.json"
NB_TIME_FILE = "fp8_neighbours_time{suffix}.json"
NB_KERNELS_FILE = "fp8_neighbours_kernels{suffix}.json"
PROBE_CRASH_EXIT = 3  # probe: the CUDA context died; rerun with --resume

# fields every grouped / probe record carries (``dataset.REQUIRED_FIELDS`` has no entry for these ops yet)
REQUIRED_FIELDS: Mapping[str, tuple[str, ...]] = {
    "fwd": ("id", "family", "K", "N", "G", "dtype", "scaling", "layout", "rows", "a_strides", "b_strides", "time_s"),
    "wgrad": ("id", "family", "K", "N", "G", "dtype", "scaling", "layout", "rows", "a_strides", "b_strides", "time_s"),
    "gemm": ("id", "M", "K", "N", "dtype", "scaling", "layout", "family", "time_s"),
    "probe": ("name", "form", "fmt", "layout", "rows", "status"),
}
SCHEMA_TAG = "perfmodel.bench/1"  # what DatasetWriter writes
