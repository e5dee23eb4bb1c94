"""Every relative import in the package names a module that exists, including the imports inside functions
(GPU-only paths that no CPU test runs: a moved module once left ``from ._device import`` dangling)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "perfmodel"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def test_every_relative_import_resolves():
    missing = []
    for path in sorted(PKG.rglob("*.py")):
        name = _module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                if importlib.util.find_spec(target) is None:
                    missing.append(f"{path.relative_to(PKG.parent)}:{node.lineno}: {target}")
    assert not missing, "relative imports of modules that do not exist:\n" + "\n".join(missing)
