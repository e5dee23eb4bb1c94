"""Time ``perfmodel.train.estimate`` over 10**5 training jobs given as arrays, against the scalar loop.

Every numeric knob broadcasts (``n_gpus``, ``tp``, ``seq_len``, ``batch_per_gpu``, ``layers``): the array call
prices each distinct layout (``n_gpus`` x ``tp``) once with the other knobs as arrays. The scalar loop is timed
in the same run on a random sample of the same jobs and extrapolated to all of them (said so in the output);
the sample's answers are checked against the array's (rel 1e-9).

Run: ``python -m benchmarks.bench_train [--sample 40]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import perfmodel.train as train

__all__ = ["grid", "main"]

MODEL, GPU = "llama3-8b", "H100"


def grid() -> dict[str, np.ndarray]:
    """10**5 jobs: 5 GPU counts x 4 TP degrees x 5 depths x 20 batches x 50 sequence lengths (broadcast)."""
    return {
        "n_gpus": np.array([8, 16, 32, 64, 128]).reshape(5, 1, 1, 1, 1),
        "tp": np.array([1, 2, 4, 8]).reshape(1, 4, 1, 1, 1),
        "layers": np.array([8, 16, 24, 32, 40]).reshape(1, 1, 5, 1, 1),
        "batch_per_gpu": np.arange(1, 21).reshape(1, 1, 1, 20, 1),
        "seq_len": (1024 * np.arange(1, 51)).reshape(1, 1, 1, 1, 50),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the array call's time, the scalar loop's (sample, extrapolated) and their ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=40, help="scalar calls timed (default 40)")
    args = ap.parse_args(argv)
    knobs = grid()
    shape = np.broadcast_shapes(*(v.shape for v in knobs.values()))
    n = int(np.prod(shape))
    train.estimate(MODEL, gpu=GPU, n_gpus=8, seq_len=8192, batch_per_gpu=1)  # warm caches (calibration files)
    t0 = time.perf_counter()
    est = train.estimate(MODEL, gpu=GPU, **knobs)
    t_array = time.perf_counter() - t0
    rng = np.random.default_rng(0)
    flat = {k: np.broadcast_to(v, shape).reshape(-1) for k, v in knobs.items()}
    picks = rng.choice(n, size=args.sample, replace=False)
    t0 = time.perf_counter()
    one = [train.estimate(MODEL, gpu=GPU, **{k: int(v[i]) for k, v in flat.items()}) for i in picks]
    t_loop = (time.perf_counter() - t0) / args.sample
    worst = max(abs(e.step_s / est.step_s.reshape(-1)[i] - 1) for e, i in zip(one, picks, strict=True))
    print(f"{n:,} jobs ({est.combinations} layouts): array call {t_array:.3f} s ({t_array / n * 1e6:.2f} us a job)")
    print(
        f"scalar loop: {t_loop * 1e3:.2f} ms a job on a sample of {args.sample}, extrapolated to {n:,}: "
        f"{t_loop * n:.0f} s; ratio {t_loop * n / t_array:,.0f}x (same run)"
    )
    print(f"sample vs array: largest relative difference of step_s {worst:.1e}")
    return 0 if worst < 1e-9 else 1


if __name__ == "__main__":
    raise SystemExit(main())
