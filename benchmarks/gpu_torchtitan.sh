#!/usr/bin/env bash
# torchtitan's own training loop on one H200 (perfmodel issue 34 item 6).
#
# torchtitan 0.2.2 (PyPI wheel, tag v0.2.2 = 73a0e69, 2026-02-20: written against torch 2.11.0.dev
# nightlies, so it matches the device's torch 2.11.0). Wheels + assets travel in .whl_tt/ (ignored):
#   carry: [".whl", ".whl_tt"]
# Runs (Llama 3 8B dims, LAYERS layers, seq SEQ, local batch LBS, compile on, FSDP on 1 GPU, AC none):
#   bf16, float8 tensorwise, float8 tensorwise with float8 all-gather (fp8_tensorwise_ag), float8 rowwise; STEPS steps each; each under `timeout RUN_TIMEOUT`.
# Output: $OUT/torchtitan/{<run>.log,<run>.toml,summary.json}. Score: benchmarks/harness/score_torchtitan.py.
# Usage:  bash benchmarks/gpu_torchtitan.sh          (device)
#         bash benchmarks/gpu_torchtitan.sh --dry    (CPU here: config parses, model builds on meta)
# Expected wall: install ~15 s; each run ~30 s start + ~60-90 s compile + STEPS x ~1 s => ~2 min; total ~6-7 min.
set -u
DRY=0; [ "${1:-}" = "--dry" ] && DRY=1
LAYERS=${LAYERS:-4}; SEQ=${SEQ:-8192}; LBS=${LBS:-1}; STEPS=${STEPS:-25}
RUN_TIMEOUT=${RUN_TIMEOUT:-140}; RUNS=${RUNS:-"bf16 fp8_tensorwise fp8_rowwise"}
ROOT=$(pwd)
OUT=${OUT:-/tmp/tt_out}; D="$OUT/torchtitan"; mkdir -p "$D"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export TORCHINDUCTOR_CACHE_DIR=/tmp/tt_inductor_cache

if [ $DRY = 0 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/torchao-*.whl .whl_tt/*.whl || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

# Launcher: registers flavor "8B_L<LAYERS>" (8B dims, fewer layers) then runs torchtitan's main(Trainer).
cat > /tmp/tt_launch.py <<EOF
import dataclasses, sys
import torchtitan.models.llama3 as l3
l3.llama3_args["8B_L$LAYERS"] = dataclasses.replace(l3.llama3_args["8B"], n_layers=$LAYERS)
if "--dry" in sys.argv:
    sys.argv.remove("--dry")
    import torch
    from torchtitan.config import ConfigManager
    cfg = ConfigManager().parse_args(sys.argv[1:])
    args = l3.llama3_args[cfg.model.flavor]; args.update_from_config(cfg)
    with torch.device("meta"):
        m = l3.Transformer(args)
    n = sum(p.numel() for p in m.parameters())
    print(f"DRY OK flavor={cfg.model.flavor} layers={args.n_layers} dim={args.dim} vocab={args.vocab_size} "
          f"seq={cfg.training.seq_len} params={n} converters={cfg.model.converters} "
          f"recipe={cfg.quantize.linear.float8.recipe_name} compile={cfg.compile.enable}")
else:
    from torchtitan.train import main, Trainer
    main(Trainer)
EOF

write_toml() {  # $1 run name
  local conv="" recipe="" ag=false
  case $1 in
    # torchtitan 0.2.2 refuses enable_fsdp_float8_all_gather with any recipe_name (it is tensorwise-only, the
    # default when recipe_name is unset): "using ... together with float8_config.recipe_name is not supported"
    fp8_tensorwise_ag) conv='converters = ["quantize.linear.float8"]'; ag=true;;
    fp8_tensorwise) conv='converters = ["quantize.linear.float8"]'; recipe='recipe_name = "tensorwise"';;
    fp8_rowwise) conv='converters = ["quantize.linear.float8"]'; recipe='recipe_name = "rowwise"';;
  esac
  cat > "$D/$1.toml" <<EOF
[job]
dump_folder = "/tmp/tt_dump/$1"
description = "perfmodel issue 34: $1"
[metrics]
log_freq = 1
disable_color_printing = true
enable_tensorboard = false
[model]
name = "llama3"
flavor = "8B_L$LAYERS"
hf_assets_path = "$ROOT/.whl_tt/assets/tokenizer"
$conv
[optimizer]
name = "AdamW"
lr = 3e-4
eps = 1e-8
[lr_scheduler]
warmup_steps = 2
[training]
local_batch_size = $LBS
seq_len = $SEQ
max_norm = 1.0
steps = $STEPS
dataset = "c4_test"
dataset_path = "$ROOT/.whl_tt/assets/c4_test"
[parallelism]
data_parallel_replicate_degree = 1
data_parallel_shard_degree = -1
tensor_parallel_degree = 1
[checkpoint]
enable = false
[compile]
enable = true
components = ["model", "loss"]
[activation_checkpoint]
mode = "none"
[quantize.linear.float8]
$recipe
enable_fsdp_float8_all_gather = $ag
precompute_float8_dynamic_scale_for_fsdp = $ag
filter_fqns = ["output"]
EOF
}

for r in $RUNS; do
  write_toml $r
  if [ $DRY = 1 ]; then
    python3 /tmp/tt_launch.py --dry --job.config_file "$D/$r.toml" 2>&1 | tail -3 | tee "$D/$r.log"
    continue
  fi
  echo "=== $r start $(date -u +%T)"
  t0=$(date +%s)
  timeout $RUN_TIMEOUT python3 -m torch.distributed.run --standalone --nproc_per_node=1 /tmp/tt_launch.py \
    --job.config_file "$D/$r.toml" > "$D/$r.log" 2>&1
  echo "$? $(( $(date +%s) - t0 ))" > "$D/$r.rc"
  echo "=== $r rc/secs: $(cat $D/$r.rc)"; grep -E "step: |Error|error" "$D/$r.log" | tail -4
done

python3 - "$D" "$LAYERS" "$SEQ" "$LBS" "$STEPS" "$RUNS" "$DRY" <<'EOF'
import json, os, re, subprocess, sys, datetime
d, layers, seq, lbs, steps, runs, dry = sys.argv[1:8]
pat = re.compile(r"step:\s*(\d+).*?loss:\s*([\d.eE+-]+).*?memory:\s*([\d.]+)GiB\(([\d.]+)%\).*?tps:\s*([\d,]+)"
                 r"(?:.*?tflops:\s*([\d.,]+))?(?:.*?mfu:\s*([\d.]+)%)?")
def sh(c):
    try: return subprocess.run(c, shell=True, capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e: return f"unavailable: {e}"
vers = sh("python3 -c \"import torch,triton,torchao,torchtitan;print(torch.__version__,triton.__version__,torchao.__version__,torchtitan.__version__)\"")
out = {"date_utc": datetime.datetime.utcnow().isoformat() + "Z", "nvidia_smi_L": sh("nvidia-smi -L"),
       "versions(torch triton torchao torchtitan)": vers, "dry": dry == "1",
       "model": {"preset": "llama3-8b", "layers": int(layers), "vocab": 128256}, "seq_len": int(seq),
       "local_batch_size": int(lbs), "n_gpus": 1, "ac": "none", "compile": True, "runs": []}
for r in runs.split():
    log = open(os.path.join(d, r + ".log"), errors="replace").read() if os.path.exists(os.path.join(d, r + ".log")) else ""
    rc = open(os.path.join(d, r + ".rc")).read().split() if os.path.exists(os.path.join(d, r + ".rc")) else ["", ""]
    rows = []
    for m in pat.finditer(log):
        g = m.groups()
        rows.append({"step": int(g[0]), "loss": float(g[1]), "memory_gib": float(g[2]), "memory_pct": float(g[3]),
                     "tps": float(g[4].replace(",", "")), "tflops": float(g[5].replace(",", "")) if g[5] else None,
                     "mfu_pct": float(g[6]) if g[6] else None})
    recipe = {"bf16": "bf16", "fp8_tensorwise": "tensorwise", "fp8_tensorwise_ag": "tensorwise",
              "fp8_rowwise": "rowwise"}[r]
    out["runs"].append({"name": r, "recipe": recipe, "config_toml": open(os.path.join(d, r + ".toml")).read(),
                        "command": f"python3 -m torch.distributed.run --standalone --nproc_per_node=1 /tmp/tt_launch.py --job.config_file {r}.toml",
                        "rc": rc[0], "wall_s": rc[1] if len(rc) > 1 else "", "steps_logged": len(rows), "steps": rows,
                        "log_tail": log[-3000:] if not rows else ""})
json.dump(out, open(os.path.join(d, "summary.json"), "w"), indent=1)
print("summary:", os.path.join(d, "summary.json"), [(x["name"], x["rc"], x["steps_logged"]) for x in out["runs"]])
EOF
