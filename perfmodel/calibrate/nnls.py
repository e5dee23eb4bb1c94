"""Non-negative least squares (Lawson–Hanson), the linear solver of the kernel and cast fits."""

from __future__ import annotations

import numpy as np

__all__: list[str] = []  # private: _nnls


def _nnls(A: np.ndarray, b: np.ndarray, iters: int = 200) -> np.ndarray:
    """Non-negative least squares ``min ||A x - b||, x >= 0`` (Lawson–Hanson active set)."""
    n = A.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, bool)
    w = A.T @ (b - A @ x)
    for _ in range(iters):
        if passive.all() or w[~passive].max(initial=-np.inf) <= 1e-12 * np.abs(w).max(initial=1.0):
            break
        j = np.argmax(np.where(passive, -np.inf, w))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(A[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > 1e-15
        w = A.T @ (b - A @ x)
    return x
