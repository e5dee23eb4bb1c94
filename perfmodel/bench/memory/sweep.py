"""The sweep: each configuration in its own subprocess until the deadline (:func:`run_configs`), and the compile
warm-up (:func:`warm`)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .config import _70B, MemConfig
from .estimate import estimate_record

__all__ = ["run_configs", "warm"]


def _child_cmd(cfg: MemConfig, extra: Sequence[str] = ()) -> list[str]:
    return [sys.executable, "-m", "perfmodel.bench.memory", "one", "--config", cfg.name, *extra]


def _last_json(text: str) -> dict[str, Any] | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def _spawn(cmd: Sequence[str], timeout_s: float) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Run ``cmd``; its JSON record (last stdout line starting ``{``) and how it ended."""
    t = time.perf_counter()
    try:
        p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout_s)
        how = {"rc": p.returncode, "stderr_tail": p.stderr[-2500:], "wall_s": time.perf_counter() - t}
        return _last_json(p.stdout), how
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return None, {"rc": None, "timeout_s": timeout_s, "stderr_tail": err[-2500:], "wall_s": time.perf_counter() - t}


def _expected_s(cfg: MemConfig, warmed: bool) -> float:
    """A guess of one configuration's wall seconds (process start, build, steps; compile cold or warm)."""
    return 14.0 + (0 if not cfg.compile else (15.0 if warmed else 60.0)) + (6.0 if cfg.model == _70B else 0.0)


def run_configs(
    configs: Sequence[MemConfig],
    *,
    deadline_s: float,
    write: Callable[[dict[str, Any]], None],
    child_cmd: Callable[[MemConfig], list[str]] = _child_cmd,
    cap_s: float = 150.0,
    warmed: bool = False,
    estimate: bool = True,
    clock: Callable[[], float] = time.perf_counter,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Each configuration in its own subprocess, in order. One starts only if its guessed seconds fit before
    ``deadline_s`` (seconds from now); each is killed at ``min(cap_s, time left)``. Every configuration gives
    a record passed to ``write``: the child's (``ok`` / ``oom`` / ``error``), or ``crash`` (no record, rc),
    ``timeout``, ``skipped``. ``estimate``: add :func:`estimate_record` to each."""
    t0 = clock()
    out = []
    for cfg in configs:
        left = deadline_s - (clock() - t0)
        base = {"op": "train_memory", "name": cfg.name, "config": cfg.to_dict()}
        guess = _expected_s(cfg, warmed)
        if guess > left:
            rec = {**base, "status": "skipped", "why": f"{left:.0f} s left, guessed {guess:.0f} s"}
        else:
            log(f"memory: {cfg.name} starts ({left:.0f} s left)")
            child, how = _spawn(child_cmd(cfg), max(1.0, min(cap_s, left)))
            if child is not None:
                rec = {**base, **child}
            elif how["rc"] is None:
                rec = {**base, "status": "timeout"}
            else:
                rec = {**base, "status": "crash"}
            rec["process"] = how
        if estimate:
            rec["estimate"] = estimate_record(rec)
        out.append(rec)
        write(rec)
        log(f"memory: {cfg.name}: {_line(rec)}")
    return out


def _line(rec: Mapping[str, Any]) -> str:
    gib = 2.0**30
    peak = (rec.get("after_3_steps") or rec.get("at_oom") or {}).get("max_memory_allocated")
    est = (rec.get("estimate") or {}).get("memory_bytes")
    parts = [rec.get("status", "?")]
    if peak:
        parts.append(f"peak {peak / gib:.1f} GiB")
    if est:
        parts.append(f"estimate {est / gib:.1f} GiB")
    if rec.get("step_time_s"):
        parts.append(f"step {rec['step_time_s'] * 1e3:.0f} ms, {rec['tokens_per_s']:,.0f} tok/s")
    if rec.get("error"):
        parts.append(str(rec["error"])[:160])
    return "; ".join(parts)


def warm(
    configs: Sequence[MemConfig],
    *,
    deadline_s: float,
    parallel: int = 2,
    child_cmd: Callable[[MemConfig, Sequence[str]], list[str]] = _child_cmd,
    min_left_s: float = 45.0,
) -> list[dict[str, Any]]:
    """Compile the ``compile`` configurations ``parallel`` at a time (``one --warm-only``) so that a later
    ``run`` finds inductor's cache warm. A batch starts only with ``min_left_s`` left; every process still
    alive at the deadline, or when this function is left by an exception (SIGTERM: see :func:`main`), is
    killed. Returns how each ended."""
    todo = [c for c in configs if c.compile]
    t0 = time.perf_counter()
    results: list[dict[str, Any]] = []
    live: list[subprocess.Popen] = []
    try:
        for i in range(0, len(todo), parallel):
            if deadline_s - (time.perf_counter() - t0) < min_left_s:
                results += [{"name": c.name, "status": "skipped"} for c in todo[i:]]
                break
            batch = todo[i : i + parallel]
            live = [subprocess.Popen(child_cmd(c, ["--warm-only"]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True) for c in batch]  # fmt: skip
            for c, p in zip(batch, live, strict=True):
                results.append(_collect(c, p, max(1.0, deadline_s - (time.perf_counter() - t0))))
    finally:
        for p in live:
            if p.poll() is None:
                p.kill()
    return results


def _collect(cfg: MemConfig, p: subprocess.Popen, timeout_s: float) -> dict[str, Any]:
    """How one warm-up process ended (killed after ``timeout_s``)."""
    try:
        so, se = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return {"name": cfg.name, "status": "timeout", "timeout_s": timeout_s}
    rec = _last_json(so) or {}
    return {"name": cfg.name, "status": rec.get("status", "crash"), "rc": p.returncode,
            "first_step_s": rec.get("first_step_s"), "error": rec.get("error"), "stderr_tail": se[-800:]}  # fmt: skip
