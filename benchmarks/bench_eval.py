"""How fast is the float8 decision formula? numpy over a grid vs the sympy reference approaches.

    python benchmarks/bench_eval.py [--shapes 1000000] [--subs-sample 200] [--model roofline]

* ours:     ``perfmodel.float8.speedup(M, K, N)`` on numpy arrays of 10**6 random shapes, one call
            (best of 3).
* subs:     the reference approach of torchao's 2024 roofline script — build the sympy expression
            once, then ``expr.subs({M: m, K: k, N: n})`` per shape — on a sample, extrapolated.
* lambdify: the sympy expression compiled once with ``sympy.lambdify(..., "numpy")``, then one
            vectorised call on the whole grid (best of 3).

Checks that the three agree on the sample. Not a unit test: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import sympy

import perfmodel.float8 as f8


def best_of(n: int, fn) -> tuple[float, object]:
    """Best wall time of ``n`` runs of ``fn()`` (s) and the last result."""
    best, out = float("inf"), None
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", type=int, default=10**6, help="grid size (default 10**6)")
    ap.add_argument("--subs-sample", type=int, default=200, help="shapes evaluated with .subs (default 200)")
    ap.add_argument("--recipe", default="tensorwise")
    ap.add_argument("--gpu", default="H100")
    ap.add_argument("--model", default="roofline", choices=["roofline", "original"])
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    n = args.shapes
    M = rng.integers(16, 65536, n) // 16 * 16
    K = rng.integers(16, 32768, n) // 16 * 16
    N = rng.integers(16, 32768, n) // 16 * 16
    kw = dict(recipe=args.recipe, gpu=args.gpu, model=args.model)

    t_ours, ours = best_of(3, lambda: f8.speedup(M, K, N, **kw))
    print(f"ours     numpy, {n:,} shapes in one call : {t_ours:8.3f} s  ({t_ours / n * 1e9:7.1f} ns/shape)")

    Ms, Ks, Ns = sympy.symbols("M K N", positive=True, integer=True)
    t0 = time.perf_counter()
    expr = f8.speedup(Ms, Ks, Ns, **kw)
    t_build = time.perf_counter() - t0
    print(f"sympy    build the expression once     : {t_build:8.3f} s  ({sympy.count_ops(expr)} ops)")

    m = min(args.subs_sample, n)
    t0 = time.perf_counter()
    subs = np.array([float(expr.subs({Ms: int(M[i]), Ks: int(K[i]), Ns: int(N[i])})) for i in range(m)])
    t_subs = (time.perf_counter() - t0) / m
    print(
        f"subs     .subs per shape ({m} sampled)  : {t_subs * 1e3:8.3f} ms/shape -> "
        f"{t_subs * n:,.0f} s for {n:,} shapes"
    )

    t0 = time.perf_counter()
    fn = sympy.lambdify((Ms, Ks, Ns), expr, "numpy")
    t_compile = time.perf_counter() - t0
    t_lamb, lamb = best_of(3, lambda: fn(M, K, N))
    print(f"lambdify compile once + one call       : {t_compile:8.3f} s + {t_lamb:.3f} s")

    np.testing.assert_allclose(subs, ours[:m], rtol=1e-9)
    np.testing.assert_allclose(np.asarray(lamb, dtype=float), ours, rtol=1e-9)
    print("results agree (rtol 1e-9)")
    print(f"ratio    subs / ours     : {t_subs * n / t_ours:,.0f}x")
    print(
        f"ratio    lambdify / ours : {t_lamb / t_ours:.2f}x per call "
        f"({(t_lamb + t_compile + t_build) / t_ours:.1f}x counting build + compile)"
    )
    print(f"target   ours < 1 s for 10**6 shapes: {'met' if t_ours < 1 or n != 10**6 else 'MISSED'}")


if __name__ == "__main__":
    main()
