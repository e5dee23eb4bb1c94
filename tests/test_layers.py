"""The package's layers run one way, as ``tests/layers.json`` draws them: the one source of truth for which part
may import which (``farm-studio draw tests/layers.json`` draws the same file over the code).

* every module of ``perfmodel/`` sits in exactly one part (``parts[*].is``: files, or folders ending in ``/``);
* an import from one part into another is drawn as an arrow, or goes to ``Base`` or ``Specs`` (which every part may
  use: the file's note), and none runs along a ``never``;
* every arrow drawn between two built parts exists in the code (the file matches the code);
* no module imports itself through others (no cycles), and the parts stack at most 12 floors high.
"""

import ast
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "perfmodel"
LAYERS = json.loads((ROOT / "tests" / "layers.json").read_text())
#: parts every part may import (the layering file's note: "every part may use Base and Specs")
UNDRAWN_OK = {"Base", "Specs"}
MAX_FLOORS = 12


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: pathlib.Path) -> set[str]:
    """perfmodel modules ``path`` imports anywhere in it (top level or inside functions)."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    if name == "__init__":
        package = []
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.removeprefix("perfmodel.") for a in node.names if a.name.startswith("perfmodel.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                mod = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and (node.module == "perfmodel" or node.module.startswith("perfmodel.")):
                mod = node.module.removeprefix("perfmodel").lstrip(".")
            else:
                continue
            for a in node.names:
                t = f"{mod}.{a.name}" if mod else a.name
                out.add(t if t in MODULES else mod)
    return {m for m in out if m and m != name}


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py")) if "__pycache__" not in p.parts}
GRAPH = {name: _imports(path) for name, path in MODULES.items()}


def part_of(module: str) -> str:
    rel = MODULES[module].relative_to(ROOT).as_posix()
    hits = [
        part
        for part, spec in LAYERS["parts"].items()
        for place in spec["is"]
        if rel == place or (place.endswith("/") and rel.startswith(place))
    ]
    if len(hits) != 1:
        raise AssertionError(f"{rel} is in {len(hits)} parts of tests/layers.json ({hits}); it must be in one")
    return hits[0]


PART = {m: part_of(m) for m in MODULES}
ARROWS = {(a[0], a[1]) for a in LAYERS["arrows"]}
NEVER = {(n[0], n[1]): n[2] for n in LAYERS["never"]}
EDGES = {(m, t) for m, ts in GRAPH.items() for t in ts if t in MODULES and PART[m] != PART[t]}


def test_every_module_is_in_one_part():
    assert set(PART) == set(MODULES)


def test_no_import_runs_along_a_never():
    broken = sorted(f"{m} -> {t} ({NEVER[PART[m], PART[t]]})" for m, t in EDGES if (PART[m], PART[t]) in NEVER)
    assert not broken, "imports the layering file forbids:\n" + "\n".join(broken)


def test_every_import_between_parts_is_drawn():
    undrawn = sorted(
        f"{PART[m]} -> {PART[t]}: {m} -> {t}"
        for m, t in EDGES
        if (PART[m], PART[t]) not in ARROWS and PART[t] not in UNDRAWN_OK
    )
    assert not undrawn, "draw these arrows in tests/layers.json, or remove the import:\n" + "\n".join(undrawn)


def test_every_drawn_arrow_is_in_the_code():
    built = set(LAYERS["parts"])
    found = {(PART[m], PART[t]) for m, t in EDGES}
    missing = sorted(f"{a} -> {b}" for a, b in ARROWS if a in built and b in built and (a, b) not in found)
    assert not missing, "arrows of tests/layers.json that no import makes:\n" + "\n".join(missing)


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


def test_the_parts_stack_at_most_twelve_floors():
    edges = {(PART[m], PART[t]) for m, t in EDGES}
    floor: dict[str, int] = {}

    def height(part: str, seen: tuple[str, ...] = ()) -> int:
        if part in seen:
            raise AssertionError("parts import each other: " + " -> ".join([*seen, part]))
        if part not in floor:
            floor[part] = 1 + max((height(b, (*seen, part)) for a, b in edges if a == part), default=0)
        return floor[part]

    assert max(height(p) for p in LAYERS["parts"]) <= MAX_FLOORS, floor


def test_at_most_two_private_top_level_modules():
    privates = sorted(p.name for p in PKG.glob("_*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(privates) <= 2, privates


def test_the_checker_sees_function_level_and_relative_imports():
    # a cycle written inside a function must not hide from the test
    assert "models.registry" in GRAPH["float8.linear"] and "float8.recipes" in GRAPH["float8.linear"]
    assert "models.calibrated" in GRAPH["models.shipped"]
    assert "models.registry" in GRAPH["models.kernel_choice"]  # imported inside a function


def test_float8_report_is_handed_on_by_the_face_not_imported():
    """``perfmodel.float8.report`` is the report's function, wired by the package face: importing float8 (and
    reading any other float8 name) never loads the floor above, and float8's source names no module above it."""
    import subprocess
    import sys

    code = (
        "import sys, perfmodel.float8 as f; f.speedup; assert 'perfmodel.report' not in sys.modules; "
        "import perfmodel.report as r; assert f.report is r.report; "
        "import perfmodel\n"
        "try:\n    perfmodel._handed_on('perfmodel.float8', 'nope')\nexcept AttributeError as e:\n    print(e)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "has no attribute 'nope'" in out
    src = (ROOT / "perfmodel" / "float8" / "__init__.py").read_text()
    assert "perfmodel.report" not in src.replace("perfmodel.report.report", "")


def layers_table() -> str:
    """The layering file as the markdown table of ``docs/index.md`` (floor, part, where, what it holds, what it
    imports and never imports)."""
    rows = [
        "| floor | part | where | holds | imports (besides Base, Specs) | never imports |",
        "| ---: | --- | --- | --- | --- | --- |",
    ]
    for part, spec in LAYERS["parts"].items():
        floor, _, holds = spec["says"].partition(": ")
        where = ", ".join(f"`{p.removeprefix('perfmodel/')}`" for p in spec["is"])
        ups = sorted(b for a, b in ARROWS if a == part and b not in UNDRAWN_OK)
        nevers = "; ".join(f"{b} ({why})" for (a, b), why in sorted(NEVER.items()) if a == part)
        cells = (floor.removeprefix("floor "), part, where, holds, ", ".join(ups) or "—", nevers or "—")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


_BEGIN, _END = "<!-- layers:begin -->\n", "<!-- layers:end -->"


def test_the_docs_show_the_layering_file():
    """``docs/index.md``'s layer table is :func:`layers_table` (regenerate: ``python tests/test_layers.py``)."""
    text = (ROOT / "docs" / "index.md").read_text()
    assert _BEGIN in text and _END in text, "docs/index.md lost its layers markers"
    shown = text.split(_BEGIN, 1)[1].split(_END, 1)[0]
    assert shown == layers_table(), "docs/index.md's layer table is stale: run python tests/test_layers.py"


if __name__ == "__main__":
    _doc = ROOT / "docs" / "index.md"
    _text = _doc.read_text()
    _head, _rest = _text.split(_BEGIN, 1)
    _doc.write_text(_head + _BEGIN + layers_table() + _END + _rest.split(_END, 1)[1])
