"""The package's layers run one way: every import goes to the same floor or one below, and no two
modules import each other, directly or in a loop (docs/index.md, "Layers")."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "perfmodel"

#: floor of each module (dotted name under perfmodel); a module imports only from its floor or below.
FLOORS: dict[str, int] = {
    # 0: values, errors, formats, GPU specs (plain data; no time model)
    "_backend": 0,
    "_files": 0,
    "errors": 0,
    "formats": 0,
    "_specs": 0,
    "_gpu_docs": 0,
    "_gpu_hopper": 0,
    "_gpu_others": 0,
    "_gpu_table": 0,
    "_proton_specs": 0,
    "hardware": 0,
    # 1: counting (FLOPs, bytes, cast kernels) and PerfData
    "_counting": 1,
    "recipes": 1,
    "perfdata": 1,
    # 2: time models and the GPU -> time model registry
    "timemodel": 2,
    "errorbars": 2,
    "network": 2,
    "_network_table": 2,
    "calibrated_model": 2,
    "calibrations": 2,
    "calibrations.estimates": 2,
    "registry": 2,
    "tile_model": 2,
    "_boost": 2,
    "gemm": 2,
    "kernel_choice": 2,
    # 3: float8 decisions, model presets, report, the original model's names
    "_linear": 3,
    "_decide": 3,
    "_filter": 3,
    "float8": 3,
    "presets": 3,
    "report": 3,
    "_report_text": 3,
    "_torchao_code": 3,
    "compat": 3,
    "compat.roofline_utils": 3,
    # 3: the decoder-layer step model (beside float8: presets, registry and below)
    "step": 3,
    "train": 3,
    "_train_config": 3,
    "_train_compute": 3,
    "_train_comm": 3,
    "_step_core": 3,
    "_step_filter": 3,
    "_step_kernels": 3,
    "_step_names": 3,
    "_step_params": 3,
    # 4: measured data and charts
    "proton": 4,
    "_hatchet": 4,
    "plot": 4,
    "moe": 4,
    # 5: fitting and the GPU harness
    "calibrate": 5,
    "bench": 5,
    "calibrate_layer": 5,
    "calibrate_train": 5,
    "calibrate_tiles": 5,
    # 6: the command line and the package face
    "cli": 6,
    "__main__": 6,
    "__init__": 6,
}


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _floor(name: str) -> int:
    while name not in FLOORS and "." in name:
        name = name.rsplit(".", 1)[0]
    return FLOORS[name]


def _imports(path: pathlib.Path) -> set[str]:
    """perfmodel modules ``path`` imports anywhere in it (top level or inside functions)."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.removeprefix("perfmodel.") for a in node.names if a.name.startswith("perfmodel.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                mod = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.startswith("perfmodel"):
                mod = node.module.removeprefix("perfmodel").lstrip(".")
            else:
                continue
            targets = [f"{mod}.{a.name}" if mod else a.name for a in node.names] if not node.module else [mod]
            for t in targets:
                out.add(
                    t
                    if (PKG / t.replace(".", "/")).exists() or (PKG / f"{t.replace('.', '/')}.py").exists()
                    else t.rsplit(".", 1)[0]
                    if "." in t
                    else t
                )
    return {m for m in out if m and m != name}


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py")) if "__pycache__" not in p.parts}
GRAPH = {name: _imports(path) for name, path in MODULES.items() if name != "__init__"}


def test_every_module_has_a_floor():
    missing = sorted(m for m in MODULES if m != "__init__" and not any(m == k or m.startswith(k + ".") for k in FLOORS))
    assert not missing, f"add these modules to FLOORS: {missing}"


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_go_down_or_sideways(module):
    up = sorted(t for t in GRAPH[module] if t in MODULES and _floor(t) > _floor(module))
    assert not up, f"{module} (floor {_floor(module)}) imports from a higher floor: {up}"


def test_no_import_cycles():
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(GRAPH.get(node, ())):
            if nxt not in GRAPH:
                continue
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*stack[stack.index(nxt) :], nxt]))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(GRAPH):
        if node not in state:
            visit(node)


def test_the_checker_sees_function_level_and_relative_imports():
    # a cycle written inside a function must not hide from the test
    src = PKG / "_linear.py"
    assert "registry" in _imports(src) and "recipes" in _imports(src)
    assert "calibrated_model" in _imports(PKG / "calibrations" / "__init__.py")
