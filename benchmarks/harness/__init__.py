"""The frozen tile model's harness and the validation command's parts (not shipped in the perfmodel wheel).

* :mod:`benchmarks.harness.gemm_layouts` — the GEMM layout sweep (``python -m benchmarks.harness.gemm_layouts``);
* :mod:`benchmarks.harness.calibrate_tiles` — the tile model's fitter
  (``python -m benchmarks.harness.calibrate_tiles``);
* :mod:`benchmarks.harness.tables` — the one markdown table and document writer of the validation command;
* ``validate_*`` — one module per model scored by ``python benchmarks/validate.py <subcommand>``.

Run everything from the repository root (``python -m`` finds ``benchmarks`` there)."""

__all__: list[str] = []
