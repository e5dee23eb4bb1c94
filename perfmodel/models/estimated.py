"""Estimated time models for architectures nothing was measured on here.

An estimate starts from the nearest *measured* architecture's calibration (Hopper, fitted on the
H200) and replaces what published measurements of the target architecture pin down: the GEMM rate
as a fraction of the dense peak per format, and the bandwidth fraction that memory-bound kernels
reach. Everything else — tiles, per-tile K overhead, latencies, wave quantization, throttling,
cast-kernel efficiency relative to a copy — is carried over from the measured architecture and
listed as an assumption. Every replaced number cites its source in :data:`ESTIMATES`.

The published numbers used here are GEMM throughputs and memory bandwidths only. Published float8
*training* speedups are kept apart (``benchmarks/published/``) and used only to score the
estimates (docs/validation.md), never to set them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import CalibrationError
from ..specs.gpu import get_gpu
from .calibrated import FALLBACK, CalibratedModel, GemmParams, ReferenceGPU, _fmt_of, fallback_kernels

__all__ = [
    "ALIGNMENT_NOT_MODELLED",
    "ESTIMATES",
    "Comparison",
    "Estimate",
    "EstimatedModel",
    "Published",
    "alignment_note",
    "estimated_model",
    "linear_gemms",
]


#: What an estimate does not carry over from the H200 calibration: its misalignment rule. On the H200, cuBLAS runs
#: a 16-bit GEMM whose leading dimensions are not multiples of 8 elements (or whose K is below 8) on pre-Hopper
#: fallback kernels, up to ~5x slower (the ``bf16@fallback`` group and the main groups' ``misaligned_factors``,
#: measured on the 2026-12-01 layout sweeps: perfmodel.models.calibrated). That is a fact of Hopper's cuBLAS
#: kernels; nothing measured says what another architecture's GEMM library (cuBLAS on Ampere, Ada or Blackwell,
#: hipBLASLt on CDNA) does there, so estimates price such GEMMs as aligned ones and say so in the answer.
ALIGNMENT_NOT_MODELLED = (
    "alignment penalty: not modelled for this GPU — the H200's cuBLAS rule (16-bit GEMMs with a leading dimension "
    "not a multiple of 8, or K < 8, run pre-Hopper fallback kernels, up to ~5x slower) does not transfer to another "
    "architecture's GEMM library; such GEMMs are priced as aligned ones"
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Published:
    """One published measurement, as a fraction of the spec-sheet peak (or bandwidth) of its GPU.

    ``value = measured / spec``; ``source`` names the document, the benchmark, the shape and the software.
    """

    value: float
    source: str

    def __post_init__(self) -> None:
        if not 0 < self.value <= 1.05:
            raise ValueError(f"Published.value is a fraction of a peak, in (0, 1.05]; got {self.value!r}")
        if not self.source:
            raise ValueError("Published.source is required")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Comparison:
    """The same published benchmark on the target architecture and on the measured one.

    Only the ratio ``target.value / measured.value`` is used: it carries the target's efficiency over
    to our fitted parameters while the benchmark's own method (shape search, timing, clocks) cancels.
    """

    target: Published
    measured: Published

    @property
    def ratio(self) -> float:
        """How much closer to (or further from) its peak the target runs than the measured architecture."""
        return self.target.value / self.measured.value


@dataclasses.dataclass(frozen=True, kw_only=True)
class Estimate:
    """How one architecture's model is estimated from a measured one.

    Attributes:
        family: a readable name (``"Blackwell (sm100)"``).
        archs: ``GPUSpec.arch`` values it covers.
        representative: the table GPU whose spec the estimate is written against (its fractions apply
            to every GPU of ``archs``, rescaled as a transfer is).
        base_arch: the measured architecture it starts from.
        gemm: format name -> :class:`Comparison` of published large-GEMM throughput; every fitted GEMM
            group of that format gets its rate fraction multiplied by the ratio.
        gemm_assume: format -> the format whose ratio it takes where nothing was published for it
            (an assumption, listed in :attr:`assumptions`).
        gemm_like: new GEMM group -> the measured group whose shape parameters it borrows
            (``"mxfp8/mx"`` -> ``"fp8_e4m3/tensorwise"``), priced at its own peak.
        memory: published achievable HBM bandwidth (a copy) on the target and on the measured
            architecture; scales every memory-bound kernel. ``None``: nothing published, the measured
            architecture's fraction is kept (an assumption).
        drop: formats the architecture has no tensor-core path for (their groups are not carried over).
        assumptions: what is carried over unmeasured.
    """

    family: str
    archs: tuple[str, ...]
    representative: str
    base_arch: str = "90"
    gemm: Mapping[str, Comparison]
    gemm_assume: Mapping[str, str] = dataclasses.field(default_factory=dict)
    gemm_like: Mapping[str, str] = dataclasses.field(default_factory=dict)
    memory: Comparison | None = None
    assumptions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if ALIGNMENT_NOT_MODELLED not in self.assumptions:  # every estimate: the Hopper rule does not transfer
            object.__setattr__(self, "assumptions", (*self.assumptions, ALIGNMENT_NOT_MODELLED))

    def ratio(self, fmt: str) -> float:
        """The GEMM efficiency ratio used for format ``fmt`` (1.0 where neither published nor assumed)."""
        key = fmt if fmt in self.gemm else self.gemm_assume.get(fmt)
        return self.gemm[key].ratio if key in self.gemm else 1.0

    def summary(self) -> str:
        """One line: what it is estimated from."""
        rates = ", ".join(f"{f} x{c.ratio:.2f}" for f, c in self.gemm.items())
        mem = f"HBM x{self.memory.ratio:.2f}" if self.memory else "HBM fraction kept"
        return (
            f"estimate for {self.family} written against {self.representative}: the sm{self.base_arch} calibration "
            f"measured on an H200 with published GEMM efficiency ratios ({rates}; {mem})"
        )

    def sources(self) -> list[str]:
        """Every published figure used, as ``"what: value (source)"``."""
        out = []
        for fmt, c in self.gemm.items():
            out.append(f"{fmt} GEMM on {self.representative}: {c.target.value:.3f} of peak ({c.target.source})")
            out.append(f"{fmt} GEMM on Hopper, same benchmark: {c.measured.value:.3f} of peak ({c.measured.source})")
        if self.memory is not None:
            out.append(
                f"HBM copy on {self.representative}: {self.memory.target.value:.3f} ({self.memory.target.source})"
            )
            out.append(
                f"HBM copy on Hopper, same benchmark: {self.memory.measured.value:.3f} ({self.memory.measured.source})"
            )
        return out


def alignment_note(provenance: Any, gemms: Any) -> str:
    """:data:`ALIGNMENT_NOT_MODELLED` where ``provenance`` (a :class:`~perfmodel.models.base.Provenance`) lists it
    among its assumptions (an estimate's) and one of ``gemms`` — ``(M, K, N, lead_a, lead_b)`` tuples of numbers or
    arrays, the leading dimensions being those that decide alignment (K and N for each of a Linear's GEMMs) — is
    one the H200 rule would price as misaligned (:func:`~perfmodel.models.calibrated.fallback_kernels`); else
    ``""``. Symbolic sizes: the note whenever the provenance lists it."""
    if ALIGNMENT_NOT_MODELLED not in tuple(getattr(provenance, "assumptions", ())):
        return ""
    for M, K, _N, a, b in gemms:
        try:
            hit = bool(np.any(fallback_kernels(*(np.asarray(x, dtype=np.float64) for x in (M, K, a, b)))))
        except (TypeError, ValueError):  # sympy sizes: no number to test
            return ALIGNMENT_NOT_MODELLED
        if hit:
            return ALIGNMENT_NOT_MODELLED
    return ""


def linear_gemms(M: Any, K: Any, N: Any) -> list[tuple[Any, Any, Any, Any, Any]]:
    """The three GEMMs of ``nn.Linear(K, N)`` on ``M`` tokens as :func:`alignment_note` takes them: output ``(M, K,
    N)``, grad_input ``(M, N, K)``, grad_weight ``(K, M, N)``, each with the features K, N as leading dimensions."""
    return [(M, K, N, K, N), (M, N, K, K, N), (K, M, N, K, N)]


@dataclasses.dataclass(frozen=True, kw_only=True)
class EstimatedModel(CalibratedModel):
    """A :class:`CalibratedModel` built by :func:`estimated_model`; ``estimate`` says how."""

    estimate: Estimate


# -- published figures (GEMM throughput and memory bandwidth only; see the module doc) ---------------
_MAMF = (
    "S. Bekman, Machine Learning Engineering, 'Maximum Achievable Matmul FLOPS comparison table' "
    "(best shape of a brute-force search, torch.matmul / torch._scaled_mm, mean of 100 after 50 warm-up), "
    "https://github.com/stas00/ml-engineering/blob/744d01e18b79512572f64a6bbd8b5f4a725203a7/compute/accelerator/README.md"
)
_MAG = (
    "mag-/gpu_benchmark README (MAMF-style shape search, bf16), "
    "https://github.com/mag-/gpu_benchmark/blob/2218e0a33df689202cde34c794231c3f1acdeca3/README.md"
)
_AZ = "Azure AI benchmarking guide, https://github.com/Azure/AI-benchmarking-guide/tree/8fd0c6e1bd0f853ef8f0500a3640a7d80a2a92ef/Azure_Results"
_AZ_MI300X = (
    "Azure AI benchmarking guide, ND MI300X v5 results (fork), https://github.com/samuel-bohman/AI-benchmarking-guide/"
    "blob/3de0c294fd1059a91a2c158712c4a078619d73e8/Azure_Results/ND_MI300X_v5_results.md"
)
_H100_MAMF_BF16 = Published(
    value=794.5e12 / 989.5e12, source=f"{_MAMF}: H100 SXM bf16 794.5 TFLOP/s, torch 2.7.0+cu126"
)
_H100_MAMF_FP8 = Published(
    value=1402.6e12 / 1979e12, source=f"{_MAMF}: H100 SXM fp8 e4m3 1402.6 TFLOP/s, torch 2.7.0+cu126"
)
_H200_COPY = Published(value=4.01e12 / 4.8e12, source=f"{_AZ}/ND_H200_v5_results.md: BabelStream Copy 4.01 TB/s")
_NO_FP8 = "no published fp8 GEMM throughput: fp8 groups take the bf16 efficiency ratio"
_CROSS_VENDOR = (
    "tiles, per-tile K overhead, latencies, wave quantization and throttling are the measured NVIDIA Hopper "
    "kernels' (cuBLAS); the target's own GEMM library is described by its large-GEMM efficiency only"
)
_NO_MEMORY = "no published HBM copy bandwidth: memory-bound kernels keep the Hopper fraction of the spec bandwidth"

#: architecture -> its estimate. GPUs of an architecture without one get the roofline.
ESTIMATES: dict[str, Estimate] = {
    "80": Estimate(
        family="Ampere (sm80: A100)",
        archs=("80",),
        representative="A100-SXM-80GB",
        gemm={
            "bf16": Comparison(
                target=Published(value=271.2e12 / 312e12, source=f"{_MAMF}: A100 SXM bf16 271.2 TFLOP/s, torch 2.6.0"),
                measured=_H100_MAMF_BF16,
            )
        },
        memory=Comparison(
            target=Published(
                value=1.61e12 / 2.039e12, source=f"{_AZ}/ND_A100_v4_results.md: BabelStream Copy 1.61 TB/s"
            ),
            measured=_H200_COPY,
        ),
        assumptions=(
            "no fp8 on Ampere: float8 recipes are refused there",
            "Hopper's tiles and latencies stand in for Ampere's cuBLAS kernels",
        ),
    ),
    "89": Estimate(
        family="Ada (sm89: L40S)",
        archs=("89",),
        representative="L40S",
        gemm={
            "bf16": Comparison(
                target=Published(value=252.0e12 / 362.05e12, source=f"{_MAG}: L40S 252.0 TFLOP/s"),
                measured=Published(value=821.2e12 / 989.5e12, source=f"{_MAG}: H100 SXM 80GB 821.2 TFLOP/s"),
            )
        },
        gemm_assume={"fp8_e4m3": "bf16", "fp8_e5m2": "bf16"},
        assumptions=(_NO_FP8, _NO_MEMORY, "Hopper's tiles and latencies stand in for Ada's cuBLAS kernels"),
    ),
    "100": Estimate(
        family="Blackwell (sm100: B200, GB200)",
        archs=("100",),
        representative="B200",
        gemm={
            "bf16": Comparison(
                target=Published(value=1745.0e12 / 2250e12, source=f"{_MAMF}: B200 bf16 1745.0 TFLOP/s, torch 2.7.1"),
                measured=_H100_MAMF_BF16,
            ),
            "fp8_e4m3": Comparison(
                target=Published(value=3432.5e12 / 4500e12, source=f"{_MAMF}: B200 fp8 3432.5 TFLOP/s, torch 2.7.1"),
                measured=_H100_MAMF_FP8,
            ),
        },
        gemm_assume={"fp8_e5m2": "fp8_e4m3", "mxfp8": "fp8_e4m3"},
        gemm_like={"mxfp8/mx": "fp8_e4m3/tensorwise"},
        assumptions=(
            "no published MXFP8 GEMM throughput: mxfp8 GEMMs take the fp8 tensorwise kernels' shape parameters and "
            "efficiency at the mxfp8 peak",
            _NO_MEMORY,
            "Hopper's tiles, latencies and cast kernels stand in for Blackwell's (tcgen05 GEMMs, 2-SM tiles)",
        ),
    ),
    "103": Estimate(
        family="Blackwell Ultra (sm103: B300)",
        archs=("103",),
        representative="B300",
        gemm={
            "bf16": Comparison(
                target=Published(value=1769.0e12 / 2250e12, source=f"{_MAMF}: B300 bf16 1769.0 TFLOP/s, torch 2.9.1"),
                measured=_H100_MAMF_BF16,
            ),
            "fp8_e4m3": Comparison(
                target=Published(value=3353.3e12 / 4500e12, source=f"{_MAMF}: B300 fp8 3353.3 TFLOP/s, torch 2.9.1"),
                measured=_H100_MAMF_FP8,
            ),
        },
        gemm_assume={"fp8_e5m2": "fp8_e4m3", "mxfp8": "fp8_e4m3"},
        gemm_like={"mxfp8/mx": "fp8_e4m3/tensorwise"},
        assumptions=(
            "no published MXFP8 GEMM throughput: mxfp8 GEMMs take the fp8 tensorwise kernels' shape parameters and "
            "efficiency at the mxfp8 peak",
            _NO_MEMORY,
            "Hopper's tiles, latencies and cast kernels stand in for Blackwell Ultra's",
        ),
    ),
    "gfx942": Estimate(
        family="CDNA 3 (gfx942: MI300X, MI325X)",
        archs=("gfx942",),
        representative="MI300X",
        gemm={
            "bf16": Comparison(
                target=Published(
                    value=668.4e12 / 1307.4e12,
                    source=f"{_MAMF}: MI300X bf16 668.4 TFLOP/s, torch 2.5.1+rocm6.3, TunableOp",
                ),
                measured=_H100_MAMF_BF16,
            ),
            "fp8_e4m3": Comparison(
                target=Published(
                    value=1159.2e12 / 2614.9e12, source=f"{_AZ_MI300X}: hipBLASLt fp8 8192^3 1159.2 TFLOP/s"
                ),
                measured=Published(
                    value=1290.1e12 / 1979e12, source=f"{_AZ}/ND_H100_v5_results.md: cuBLASLt fp8 8192^3 1290.1 TFLOP/s"
                ),
            ),
        },
        gemm_assume={"fp8_e5m2": "fp8_e4m3"},
        memory=Comparison(
            target=Published(value=4.11e12 / 5.3e12, source=f"{_AZ_MI300X}: BabelStream Copy 4.11 TB/s"),
            measured=_H200_COPY,
        ),
        assumptions=(
            _CROSS_VENDOR,
            "inductor's Triton cast kernels reach the same share of SM (CU) throughput as on Hopper, capped by the "
            "copy bandwidth",
        ),
    ),
    "gfx950": Estimate(
        family="CDNA 4 (gfx950: MI355X)",
        archs=("gfx950",),
        representative="MI355X",
        gemm={
            "bf16": Comparison(
                target=Published(
                    value=1565.0e12 / 2516.6e12, source=f"{_MAMF}: MI355X bf16 1565.0 TFLOP/s, torch 2.8.0+rocm7.0.2"
                ),
                measured=_H100_MAMF_BF16,
            )
        },
        gemm_assume={"fp8_e4m3": "bf16", "fp8_e5m2": "bf16", "mxfp8": "bf16"},
        gemm_like={"mxfp8/mx": "fp8_e4m3/tensorwise"},
        assumptions=(
            _NO_FP8 + " (also mxfp8, priced with the fp8 tensorwise kernels' shape parameters)",
            _NO_MEMORY,
            _CROSS_VENDOR,
        ),
    ),
}

_BUILT: dict[str, EstimatedModel] = {}


def estimated_model(arch: str, measured: Mapping[str, Any]) -> EstimatedModel:
    """The estimated model of ``arch`` (built once), from the measured calibrations ``measured``
    (architecture -> a model with ``.load()``, as :data:`perfmodel.models.registry` holds them)."""
    if arch in _BUILT:
        return _BUILT[arch]
    est = ESTIMATES.get(arch)
    if est is None:
        raise CalibrationError(f"no estimate for arch {arch!r}; estimated: {', '.join(sorted(ESTIMATES))}")
    base: CalibratedModel = measured[est.base_arch].load()
    rep = get_gpu(est.representative)
    ref = ReferenceGPU.from_spec(rep)
    base_ref = base.reference
    assert base_ref is not None
    gemm: dict[str, GemmParams] = {}
    for key, params in base.gemm.items():
        fmt = _fmt_of(key)
        if not rep.supports(fmt) or key.endswith("@" + FALLBACK):  # no fp8 on Ampere; Hopper-only fallback kernels
            continue
        fitted = params.rate_flops_per_s / base_ref.peaks_flops_per_s[fmt]
        gemm[key] = dataclasses.replace(
            params,
            rate_flops_per_s=fitted * est.ratio(fmt) * rep.peak_flops_per_s(fmt),
            misaligned_factors=(1.0, 1.0, 1.0),  # ALIGNMENT_NOT_MODELLED
        )
    for key, like in est.gemm_like.items():
        fmt, like_fmt = _fmt_of(key), _fmt_of(like)
        if not rep.supports(fmt):
            continue
        fitted = base.gemm[like].rate_flops_per_s / base_ref.peaks_flops_per_s[like_fmt]
        gemm[key] = dataclasses.replace(
            base.gemm[like],
            rate_flops_per_s=fitted * est.ratio(fmt) * rep.peak_flops_per_s(fmt),
            misaligned_factors=(1.0, 1.0, 1.0),
        )
    # memory-bound kernels keep the measured fraction of HBM bandwidth, times the published copy ratio
    bw_scale = rep.mem_bw_bytes_per_s / base_ref.mem_bw_bytes_per_s * (est.memory.ratio if est.memory else 1.0)

    def mem(p: GemmParams) -> GemmParams:
        return dataclasses.replace(p, mem_bw_bytes_per_s=p.mem_bw_bytes_per_s * bw_scale)

    # casts: SM-bound where fitted (see perfmodel.models.calibrated): rate x SM throughput, capped by the copy
    copy_bw = base.kernels.bw_bytes_per_s * bw_scale
    sm = rep.sm_throughput_ratio(base_ref)

    def cast_bw(bw: float) -> float:
        return min(bw * sm, copy_bw)

    model = EstimatedModel(
        gpu=rep.name,
        gemm={k: mem(p) for k, p in gemm.items()},
        kernels=dataclasses.replace(base.kernels, bw_bytes_per_s=copy_bw),
        casts={
            k: dataclasses.replace(
                c,
                activation_bw_bytes_per_s=cast_bw(c.activation_bw_bytes_per_s),
                weight_bw_bytes_per_s=cast_bw(c.weight_bw_bytes_per_s),
            )
            for k, c in base.casts.items()
        },
        step_gemm_factors={
            **{k: v for k, v in base.step_gemm_factors.items() if k in gemm},
            **{k: base.step_gemm_factors[v] for k, v in est.gemm_like.items() if v in base.step_gemm_factors},
        },
        source=est.summary(),
        reference=ref,
        estimate=est,
    )
    assert not any(k.endswith("@" + FALLBACK) for k in model.gemm)  # the Hopper rule is not carried over
    _BUILT[arch] = model
    return model
