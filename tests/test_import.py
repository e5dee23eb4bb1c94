"""`import perfmodel` stays light: numpy only (sympy, torch, triton, matplotlib are lazy)."""

import subprocess
import sys

HEAVY = ("sympy", "torch", "triton", "matplotlib", "pandas", "hatchet")


def _modules_after(stmt: str) -> set[str]:
    code = f"import sys; {stmt}; print(','.join(sorted(m.split('.')[0] for m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(out.strip().split(","))


def test_import_perfmodel_pulls_no_heavy_module():
    loaded = _modules_after("import perfmodel")
    assert "numpy" in loaded
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_formulas_on_numbers_do_not_import_sympy():
    loaded = _modules_after(
        "import perfmodel, perfmodel.float8 as f; f.speedup(8192, 4096, 4096, 'tensorwise', 'H100');"
        "f.break_even_tokens(4096, 4096); import perfmodel.compat.roofline_utils as r; r.get_float8_mem_sympy(1, 2, 3)"
    )
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
