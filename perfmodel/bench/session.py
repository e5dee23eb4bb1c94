"""What a GPU sweep's process does around its measurements, shared by :mod:`perfmodel.bench.grouped_gemm`,
:mod:`perfmodel.bench.layer` and the repository's layout sweep (``benchmarks/harness/gemm_layouts.py``): warming
the GPU clocks, time-stamped log lines and positive-number command-line arguments. torch is imported by the caller.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

__all__ = ["log", "positive", "warm_gpu"]


def warm_gpu(torch: Any, seconds: float) -> None:
    """8192³ bf16 GEMMs for ``seconds`` (wall clock), so the clocks are up before the first measurement."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            torch.mm(a, a)
        torch.cuda.synchronize()
    del a


def log(msg: str) -> None:
    """``msg`` on stdout after the local time (``[HH:MM:SS]``), flushed at once (a sweep's log is read live)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def positive(kind: str) -> Callable[[str], float]:
    """An ``argparse`` type: a finite number above 0; the error names ``kind`` (e.g. ``"a time in ms"``)."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind} (a number above 0), got {text!r}") from None
        if not (math.isfinite(v) and v > 0):
            raise argparse.ArgumentTypeError(f"expected {kind} above 0, got {text!r}")
        return v

    return parse
