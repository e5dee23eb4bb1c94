"""``perfmodel gemm M K N``: the predicted time of one GEMM, its roofline numbers, and on Hopper the kernel class
cuBLAS runs (with the nearest aligned shape's time where it is a fallback)."""

from __future__ import annotations

import argparse
from typing import Any

from .args import _add_calibration, _add_gpu, _add_time_model, _gpu, _positive_int
from .output import _error_bar_line, _heading, _print_json, _provenance_line

__all__ = ["_alignment_note", "_cmd_gemm", "_gemm_kernel_record", "add_gemm_parser"]


def _cmd_gemm(args: argparse.Namespace) -> int:
    from ..gemm import gemm_perfdata

    pd = gemm_perfdata(
        args.M,
        args.K,
        args.N,
        args.dtype,
        _gpu(args),
        args.scaling,
        time_model=args.time_model,
        layout=args.layout,
        timing=args.timing,
    )
    bar = pd.meta["error_bar"]
    record = {
        "M": args.M,
        "K": args.K,
        "N": args.N,
        "dtype": pd.dtype.name,
        "scaling": pd.meta["scaling"],
        "layout": args.layout,
        "timing": args.timing,
        "gpu": pd.gpu.name,
        "time_model": pd.meta["provenance"].time_model,
        "time_s": float(pd.time_s),
        "flops": float(pd.flops),
        "bytes": float(pd.bytes),
        "tflops": float(pd.tflops),
        "tbps": float(pd.tbps),
        "opint_flop_per_byte": float(pd.opint),
        "bound": str(pd.bound),
        "util": float(pd.util),
        "provenance": pd.meta["provenance"].to_dict(),
        "error_bar": None if bar is None else bar.to_dict(),
        "time_s_p10_p90": None if bar is None else [float(x) for x in bar.interval(pd.time_s)],
    }
    kern = _gemm_kernel_record(args, pd)
    record["kernel"] = kern
    record["alignment_note"] = _alignment_note(pd.meta["provenance"], args.M, args.K, args.N, args.layout, pd.dtype)
    if args.json:
        _print_json(record)
        return 0
    scaling = f", {record['scaling']} scaling" if record["scaling"] else ""
    layout = "" if args.layout == "rc" else f", layout {args.layout}"
    print(
        f"GEMM [{args.M}, {args.K}] @ [{args.K}, {args.N}] in {record['dtype']}{scaling}{layout} on {record['gpu']} "
        f"({_heading(pd.meta['provenance'])}, {args.timing} time):"
    )
    rng = "" if bar is None else "   ({:.2f}-{:.2f} us, p10-p90)".format(*(x * 1e6 for x in record["time_s_p10_p90"]))
    print(f"  time       {record['time_s'] * 1e6:12.2f} us{rng}")
    print(f"  compute    {record['tflops']:12.1f} TFLOP/s  (peak {pd.max_tflops:.0f})")
    print(f"  memory     {record['tbps']:12.3f} TB/s     (peak {pd.max_tbps:.2f})")
    print(f"  intensity  {record['opint_flop_per_byte']:12.1f} FLOP/B")
    print(f"  bound      {record['bound']:>12}")
    print(f"  util       {record['util']:12.1%}   of the roofline")
    if kern is not None:
        print(f"  kernel     {kern['kernel']:>12}   {kern['line']}")
        if kern["aligned_shape"] is not None:
            m, k, n = kern["aligned_shape"]
            t = kern["aligned_time_s"]
            ratio = record["time_s"] / t
            said = (
                f"{ratio:.2f}x faster, same model"
                if ratio >= 1.05
                else "this model prices the two alike: it does not tell cuBLAS's fallback kernels apart"
            )
            print(f"  aligned    {m} x {k} x {n} runs cuBLAS's Hopper kernels: {t * 1e6:.2f} us ({said})")
        print(f"kernel: {kern['kind']} — {kern['basis']}")
    if record["alignment_note"]:
        print(record["alignment_note"])
    print(_provenance_line(pd.meta["provenance"]))
    print(_error_bar_line(bar, "the time's p10-p90 range above"))
    return 0


def _alignment_note(prov: Any, M: int, K: int, N: int, layout: str, fmt: Any) -> str:
    """The estimate's note that the H200's misalignment rule is not modelled, where this 16-bit GEMM would fall
    under it (:func:`perfmodel.models.estimated.alignment_note`); ``""`` otherwise."""
    from ..counting import layout_lead_dims
    from ..models.estimated import alignment_note

    if fmt.bits < 16:
        return ""
    return alignment_note(prov, [(M, K, N, *layout_lead_dims(layout, M, K, N))])


def _gemm_kernel_record(args: argparse.Namespace, pd: Any) -> dict[str, Any] | None:
    """The kernel class cuBLAS runs for the GEMM (:func:`perfmodel.gemm_kernel`) and, where it is a fallback, the
    time of the nearest aligned shape under the same model; ``None`` off Hopper GPUs and for formats the rule does not
    cover (not measured)."""
    from ..gemm import gemm_time_s
    from ..models.kernel_choice import FORMATS, gemm_kernel

    if pd.gpu.arch != "90" or pd.dtype.name not in FORMATS:
        return None
    k = gemm_kernel(args.M, args.K, args.N, args.dtype, pd.gpu, args.scaling, layout=args.layout)
    aligned = None
    if k.aligned_shape is not None:
        aligned = float(
            gemm_time_s(*k.aligned_shape, args.dtype, pd.gpu, args.scaling, time_model=args.time_model,
                        layout=args.layout, timing=args.timing)
        )  # fmt: skip
    return {
        "kernel": k.kernel,
        "description": k.description,
        "reason": k.reason,
        "line": k.line(),
        "alignment": k.alignment,
        "alternative": k.alternative,
        "split_k": k.split_k,
        "aligned_shape": None if k.aligned_shape is None else list(k.aligned_shape),
        "aligned_time_s": aligned,
        "kind": k.kind,
        "basis": k.basis,
    }


def add_gemm_parser(sub: Any) -> None:
    """``perfmodel gemm``'s subparser, added to ``sub``."""
    p = sub.add_parser("gemm", help="predicted time of one GEMM [M, K] @ [K, N]")
    for dim in ("M", "K", "N"):
        p.add_argument(dim, type=_positive_int)
    p.add_argument("--dtype", default="bf16", help="number format (bf16, fp8, mxfp8, ...; default bf16)")
    _add_gpu(p)
    p.add_argument("--scaling", default=None, help="tensorwise | rowwise | blockwise | mx (low-precision formats)")
    p.add_argument(
        "--layout",
        default="rc",
        choices=("rr", "rc", "cr"),
        help="operand layout: rc = x @ W.T (a Linear's forward; default), rr = x @ W (its grad_input), "
        "cr = gO.T @ x (its grad_weight); fp8 runs rc only",
    )
    p.add_argument(
        "--timing",
        default="kernel",
        choices=("kernel", "event"),
        help="kernel = GPU kernel time, what profilers and a training step see (default); "
        "event = one call timed with CUDA events / triton.testing.do_bench (adds the launch gap)",
    )
    _add_time_model(p, "--time-model", "--model")
    _add_calibration(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_gemm)
