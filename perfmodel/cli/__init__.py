"""The ``perfmodel`` command line (also ``python -m perfmodel``).

Subcommands::

    perfmodel gpus [--json]
    perfmodel gemm M K N [--dtype bf16] [--gpu h100] [--scaling tensorwise] [--layout rc] [--timing kernel]
                   [--time-model roofline] [--calibration FIT.json] [--json]
    perfmodel float8 --gpu h100 (--tokens 8192 | --seq-len 8192 [--batch 1])
                     (--model llama3-8b | --shapes 4096x14336,14336x4096)
                     [--recipes tensorwise,rowwise] [--min-speedup 1.0] [--calibration FIT.json] [--kernels] [--json]
    perfmodel break-even KxN [KxN ...] [--recipe tensorwise] [--gpu h100] [--calibration FIT.json] [--json]
    perfmodel train --model llama3-70b --gpu h100 --gpus 256 [--tp 8] [--seq-len 8192] [--batch 1]
                    [--recipe rowwise] [--convert auto|w13,w2] [--float8-all-gather] [--async-tp] [--ac selective]
                    [--network NAME] [--json]
    perfmodel models [--json]

plus subcommands other modules register (``roofline`` from :mod:`perfmodel.measured.moe_bench`, ``calibrate``
from :mod:`perfmodel.calibrate`). Units at this edge: µs, ms, TFLOP/s, TB/s, GB.

Exit status: 0 ok; 2 a usage or input error (argparse's ``usage: ...`` or ``perfmodel: error: <message>``
naming the bad value, on stderr); 3 an internal error (a bug: one line ``perfmodel: internal error:
...``, never a traceback). Importing this package imports argparse, numpy and perfmodel's errors only: each verb
imports the modules it runs when it runs (issue #35); sympy, torch and matplotlib are never imported here.

Modules: :mod:`.args` (argument types, shared options), :mod:`.output` (tables, JSON, provenance lines),
:mod:`.tables` (``gpus``, ``models``), :mod:`.gemm`, :mod:`.float8`, :mod:`.break_even`, :mod:`.train` (each verb
with its subparser), :mod:`.parser` (:func:`build_parser`), :mod:`.run` (:func:`main`, exit statuses).
"""

# ruff: noqa: F401  (the old flat module's names stay importable from here; __all__ is its public list)

from __future__ import annotations

from .args import (
    _TIME_MODELS,
    _add_calibration,
    _add_gpu,
    _add_time_model,
    _gpu,
    _list,
    _positive_float,
    _positive_int,
    _split,
)
from .break_even import _cmd_break_even
from .float8 import _cmd_float8, _float8_tp, _kernels_dict, _routed_experts
from .gemm import _alignment_note, _cmd_gemm, _gemm_kernel_record
from .output import _error_bar_line, _heading, _print_json, _provenance_line, _table
from .parser import build_parser
from .run import _VERB_NEEDS, _check_environment, main
from .tables import _cmd_gpus, _cmd_models
from .train import _cmd_train

__all__ = ["build_parser", "main"]
