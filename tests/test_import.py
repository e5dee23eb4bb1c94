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


def test_import_perfmodel_leaves_the_tile_model_sympy_and_matplotlib_unloaded():
    # issue #35 item 9: `import perfmodel` <= numpy + 30 ms; the tile model (and its trees) load for a tile answer
    loaded = _full_modules_after("import perfmodel")
    lazy = {
        "sympy",
        "matplotlib",
        "perfmodel.models.tiles",
        "perfmodel.models.trees",
        "perfmodel.models.estimated",
        "perfmodel.models.kernel_choice",
    }
    assert not loaded & lazy, loaded & lazy


def test_lazy_public_names_still_resolve():
    loaded = _full_modules_after("import perfmodel as p; p.gemm_kernel, p.GemmKernel, p.kernel_class")
    assert "perfmodel.models.kernel_choice" in loaded
    assert "perfmodel.models.trees" not in loaded  # the kernel class needs no tile trees


def test_split_k_flag_reads_no_tile_trees():
    # `perfmodel gemm ... --gpu h200` reports split-K from the tile model's formula kinds, never its 5 MB of trees
    code = (
        "import perfmodel as p; from perfmodel.models import registry as r; "
        "k = p.gemm_kernel(8192, 8192, 8192, 'bf16', 'H200'); assert k.split_k is not None; "
        "assert 'model' not in r._TILES and not r._TILES['kinds'].corrections"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_core_cli_verb_skips_the_module_owned_parsers():
    loaded = _full_modules_after("from perfmodel.cli import main; main(['gpus'])")  # the module list prints last
    assert not loaded & {"perfmodel.calibrate", "perfmodel.measured.moe_bench", "perfmodel.measured.summary"}


def _full_modules_after(stmt: str) -> set[str]:
    code = f"import sys; {stmt}; print(','.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(out.strip().splitlines()[-1].split(","))
