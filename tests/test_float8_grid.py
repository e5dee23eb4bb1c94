"""The shared-term grid path of float8.speedup (perfmodel/float8/grid.py) gives the numbers of the formula.

Checked three ways on random grids that mix float8-eligible, misaligned (K or N not a multiple of 8 or 16), one-row
and K < 8 shapes: against a hand-written scalar formula of the calibrated model (python floats, math.ceil/log),
against the scalar path (python numbers, one shape at a time), and against the GEMM-by-GEMM array path.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import perfmodel.float8 as f8
from perfmodel.float8 import decide
from perfmodel.formats import get_format
from perfmodel.models.calibrated import CalibratedModel
from perfmodel.models.registry import resolve
from perfmodel.specs.gpu import get_gpu


def _grid(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    M, K, N = (rng.integers(1, hi, n) for hi in (70_000, 40_000, 40_000))
    K[::3] = K[::3] // 16 * 16 + 16  # a third eligible by K, a third by N
    N[1::3] = N[1::3] // 16 * 16 + 16
    K[2::5] = K[2::5] // 8 * 8 + 8  # 8-aligned, not 16: bf16 Hopper kernels, float8 ineligible
    M[::7] = 1
    K[::11] = rng.integers(1, 8, len(K[::11]))
    return M, K, N


def _hand_time(p, m: int, k: int, n: int, nbytes: int, sms: int, use_misalignment: bool, lead: tuple[int, int]):
    q = p.wave_quantization
    per_wave = 2 * p.tile_m * p.tile_n * sms / p.rate_flops_per_s
    tiles = math.ceil(m / p.tile_m) * math.ceil(n / p.tile_n)
    t = (tiles * (1 - q) * per_wave / sms + math.ceil(tiles / sms) * q * per_wave) * (k + p.k_overhead)
    if use_misalignment:
        al = min(x & -x for x in (lead[0] | 8, lead[1] | 8))
        t *= {1: p.misaligned_factors[0], 2: p.misaligned_factors[1], 4: p.misaligned_factors[2]}.get(al, 1.0)
    if p.throttle_gain:
        t *= 1 + p.throttle_gain * math.log(1 + min(t, p.throttle_settle_s) / p.throttle_time_s)
    return p.latency_s + max(t, nbytes / p.mem_bw_bytes_per_s)


def _hand_linear_s(cal, gpu, M: int, K: int, N: int, recipe: str) -> float:
    """A Linear's fwd+bwd time by hand: three GEMMs (y = x W^T: (M, K, N) rc; gI: (M, N, K) rr; gW: (K, M, N) cr), their
    in-step factors, the recipe's casts (latency + bytes / rate) and launches."""
    rec = f8.RECIPES[recipe]
    total = 0.0
    shapes = ((M, K, N, "rc"), (M, N, K, "rr"), (K, M, N, "cr"))
    for (m, k, n, layout), dtype in zip(shapes, rec.gemm_dtypes(), strict=True):
        fmt = get_format(dtype)
        scaling = None if fmt.bits >= 16 else rec.scaling
        layout = layout if fmt.bits >= 16 else "rc"
        a = fmt.bytes_per_element
        scale = {None: 0, "tensorwise": 8, "rowwise": 4 * (m + n)}[scaling]
        nbytes = (m * k + k * n) * a + m * n * 2 + scale
        p = cal.params_for(fmt, scaling, layout).rescaled(**cal.transfer_factors(gpu, fmt, scaling, layout))
        fb = cal.fallback_params(fmt)
        if fb is None:
            t = _hand_time(p, m, k, n, nbytes, gpu.num_sms, p.misaligned_factors != (1.0, 1.0, 1.0), (K, N))
        elif (((K | N) % 8 != 0) and m != 1) or k < 8:  # cuBLAS's fallback kernels, their own odd-K/N slowdown
            fb = fb.rescaled(**cal.transfer_factors(gpu, fmt, scaling))
            t = _hand_time(fb, m, k, n, nbytes, gpu.num_sms, fb.misaligned_factors != (1.0, 1.0, 1.0), (K, N))
        else:
            t = _hand_time(p, m, k, n, nbytes, gpu.num_sms, False, (K, N))
        total += t * cal.step_gemm_factor(fmt, scaling)
    for kern in rec.cast_kernels(M, K, N, f8.CastOptions()):
        total += (
            cal.launch_time_s(gpu=gpu)
            if kern.launch_only
            else cal.memory_kernel_time_s(kern.bytes, gpu=gpu, recipe=recipe, tensor=kern.tensor)
        )
    return total


@pytest.mark.parametrize(("gpu", "recipe"), [("H200", "tensorwise"), ("H100", "rowwise"), ("H100", "tensorwise")])
def test_grid_matches_the_hand_written_formula(gpu, recipe):
    spec = get_gpu(gpu)
    cal = resolve(spec)[0].load()
    M, K, N = _grid(300, seed=3)
    got = f8.speedup(M, K, N, recipe, gpu)
    expected = np.array(
        [
            _hand_linear_s(cal, spec, int(m), int(k), int(n), "bf16")
            / _hand_linear_s(cal, spec, int(m), int(k), int(n), recipe)
            for m, k, n in zip(M, K, N, strict=True)
        ]
    )
    np.testing.assert_allclose(np.ma.getdata(got), expected, rtol=1e-12)
    eligible = (K % 16 == 0) & (N % 16 == 0)
    if recipe != "bf16":
        np.testing.assert_array_equal(~np.ma.getmaskarray(got), eligible)
        assert 0 < eligible.sum() < len(M)  # both kinds of shape are in the grid
    assert ((K | N) % 8 != 0).any() and (K < 8).any() and (M == 1).any()  # the fallback branches are exercised
    assert len(set(np.round(expected, 6))) > 100  # not a constant


def test_grid_matches_the_scalar_path():
    M, K, N = _grid(120, seed=4)
    for gpu, recipe, kw in [("H200", "tensorwise", {}), ("H100", "blockwise", {"dynamic_shapes": True}),
                            ("B200", "mxfp8", {"cache_weight_cast": True})]:  # fmt: skip
        got = np.ma.getdata(f8.speedup(M, K, N, recipe, gpu, **kw))
        one = [
            f8.linear_time(int(m), int(k), int(n), None, gpu).total_s
            / f8.linear_time(int(m), int(k), int(n), recipe, gpu, **kw).total_s
            for m, k, n in zip(M, K, N, strict=True)
        ]
        np.testing.assert_allclose(got, one, rtol=1e-12)


def test_grid_path_is_taken_and_equals_the_gemm_by_gemm_path(monkeypatch):
    M, K, N = (x.astype(np.float64) for x in _grid(5_000, seed=5))
    gpu = get_gpu("H100")
    opts = dict(
        fuse_input_with_prev=True,
        fuse_grad_output_with_prev=False,
        cache_weight_cast=False,
        dynamic_shapes=False,
        time_model=None,
    )
    for recipe in f8.supported_recipes(gpu):
        rec = f8.RECIPES[recipe]
        fast = decide._speedup_grid(M, K, N, rec, gpu, opts, None)
        assert fast is not None, recipe  # the shared-term path applies to a float64 grid on the calibrated model
        base = f8.linear_time(M, K, N, None, gpu).total_s
        lt = f8.linear_time(M, K, N, rec, gpu, fuse_input_with_prev=True)
        np.testing.assert_allclose(fast[0], base / lt.total_s, rtol=1e-12)
        np.testing.assert_array_equal(np.broadcast_to(fast[1], M.shape), np.broadcast_to(lt.eligible, M.shape))
    # numbers, a scalar M, or a model overriding the formula: the GEMM-by-GEMM path
    assert decide._speedup_grid(4096.0, K, N, f8.RECIPES["tensorwise"], gpu, opts, None) is None

    class Slower(CalibratedModel):
        def gemm_time_s(self, *a, **kw):
            return 2 * super().gemm_time_s(*a, **kw)

    cal = resolve(gpu)[0].load()
    import dataclasses

    slower = Slower(**{f.name: getattr(cal, f.name) for f in dataclasses.fields(CalibratedModel)})
    assert decide._speedup_grid(M, K, N, f8.RECIPES["tensorwise"], gpu, {**opts, "time_model": slower}, None) is None


def test_blocks_reuse_buffers_without_mixing_blocks(monkeypatch):
    M, K, N = _grid(10_000, seed=6)
    whole = np.ma.getdata(f8.speedup(M, K, N, "rowwise", "H100"))
    monkeypatch.setattr(decide, "GRID_BLOCK", 1_000)  # 10 blocks, the last ones reusing the first one's buffers
    blocked = np.ma.getdata(f8.speedup(M, K, N, "rowwise", "H100"))
    np.testing.assert_array_equal(blocked, whole)
    monkeypatch.setattr(decide, "GRID_BLOCK", 3_001)  # a short last block: views of the pooled buffers
    np.testing.assert_array_equal(np.ma.getdata(f8.speedup(M, K, N, "rowwise", "H100")), whole)
