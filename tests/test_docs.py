"""Every ```python block of README.md and docs/**/*.md runs on its own, as a user would copy it.

Each block runs in a fresh interpreter whose working directory is an empty temporary folder and whose
``PYTHONPATH`` is only a wheel of this checkout installed once per session (numpy, sympy and matplotlib
come from the environment's site-packages): a block that uses a name defined in an earlier block, or a
file that is in the repository but not in the wheel, fails here. The runner checks that ``perfmodel``
resolves to the installed wheel, not to the checkout, before it runs the block.

A jupytext notebook under ``docs/notebooks/`` is one program (its cells build on each other): it runs as a
whole, from the wheel, with its lines at their places in the file.

A block that cannot run on a CPU machine is marked on the line just above its fence with
``<!-- no-run: REASON -->`` (the reason is said on the page); it is still compiled. Any other code fence
tagged as Python (``py``, ``python3``) must be ``python`` so that it cannot skip the test by its tag.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
PYTHON_TAGS = {"python", "py", "python3", "py3"}
NO_RUN = re.compile(r"^<!--\s*no-run:\s*(?P<reason>\S.*?)\s*-->[ \t]*$")
NOTEBOOKS = ROOT / "docs" / "notebooks"
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK_TIMEOUT_S = 120
STDERR_TAIL = 4000

# Runs in the fresh interpreter: argv = installed target, checkout root, doc name, code file.
RUNNER = r"""
import importlib.util, pathlib, sys
target, root, doc, code_file = sys.argv[1:5]
bad = [p for p in sys.path if p and pathlib.Path(p).resolve().is_relative_to(pathlib.Path(root))]
spec = importlib.util.find_spec("perfmodel")
where = pathlib.Path(spec.origin).resolve() if spec and spec.origin else None
if bad or where is None or not where.is_relative_to(pathlib.Path(target).resolve()):
    sys.exit(f"docs runner: perfmodel must come from the installed wheel in {target}; "
             f"it resolves to {where}; checkout entries on sys.path: {bad}")
sys.argv = [doc]
code = pathlib.Path(code_file).read_text()
exec(compile(code, doc, "exec"), {"__name__": "__main__", "__file__": doc})
"""


@dataclass(frozen=True)
class Block:
    """One runnable unit of a page: a code block, or a whole notebook."""

    doc: str  # path relative to the checkout
    line: int  # 1-based line of the first code line
    code: str  # padded with blank lines so that tracebacks give the page's line numbers
    no_run: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def _fences(text: str):
    """(tag, first code line, code, no-run reason or None) for every fenced block of a page."""
    lines = text.splitlines()
    for m in FENCE.finditer(text):
        fence_line = text.count("\n", 0, m.start())  # 0-based line of the opening fence
        above = lines[fence_line - 1] if fence_line else ""
        marker = NO_RUN.match(above.strip())
        yield m.group(1).lower(), fence_line + 2, m.group(2), marker.group("reason") if marker else None


def doc_blocks() -> list[Block]:
    """Every Python block of README.md and docs/**/*.md, each notebook as one block."""
    blocks = []
    for path in DOC_FILES:
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        fences = [f for f in _fences(text) if f[0] in PYTHON_TAGS]
        if not fences:
            continue
        if path.is_relative_to(NOTEBOOKS):
            padded = [""] * (text.count("\n") + 1)
            for _, line, code, _ in fences:
                for i, code_line in enumerate(code.splitlines()):
                    padded[line - 1 + i] = code_line
            blocks.append(Block(rel, fences[0][1], "\n".join(padded) + "\n"))
            continue
        for _, line, code, reason in fences:
            blocks.append(Block(rel, line, "\n" * (line - 1) + code, reason))
    return blocks


BLOCKS = doc_blocks()


def test_docs_have_examples():
    docs = {b.doc for b in BLOCKS}
    assert {"README.md", "docs/index.md", "docs/formulas.md", "docs/float8.md", "docs/measured.md"} <= docs
    assert "docs/hardware.md" in docs and "docs/notebooks/symbolic_break_even.md" in docs
    assert len(BLOCKS) >= 40


def test_python_fences_are_tagged_python():
    """A Python block is tagged ``python`` (a ``py`` tag would be a silent way out of the run below)."""
    odd = []
    for path in DOC_FILES:
        for tag, line, _, _ in _fences(path.read_text()):
            if tag in PYTHON_TAGS - {"python"}:
                odd.append(f"{path.relative_to(ROOT)}:{line} is tagged {tag!r}")
    assert not odd, "tag these blocks ```python (and mark one that needs a GPU <!-- no-run: REASON -->):\n" + "\n".join(
        odd
    )


def test_no_run_blocks_compile():
    """A block marked no-run is still valid Python, and says why it does not run."""
    marked = [b for b in BLOCKS if b.no_run is not None]
    for b in marked:
        compile(b.code, b.id, "exec")
        assert len(b.no_run) >= 8, f"{b.id}: say why it cannot run, e.g. 'needs a CUDA GPU'"


def test_shipped_examples_are_copies_of_the_test_data():
    """``perfmodel/examples`` (what the docs read from a wheel) holds byte-for-byte copies of ``tests/data`` files."""
    from perfmodel import examples

    pkg = ROOT / "perfmodel" / "examples"
    shipped = sorted(
        p.relative_to(pkg).as_posix() for p in pkg.rglob("*") if p.is_file() and p.suffix not in {".py", ".pyc"}
    )
    assert len(shipped) == 34 and set(examples.NAMES) == {"h200_triton3.6_scope_and_kernel.hatchet", "moe"}
    differ = [rel for rel in shipped if (pkg / rel).read_bytes() != (ROOT / "tests" / "data" / rel).read_bytes()]
    assert not differ, f"perfmodel/examples differs from tests/data (copy the fixture again): {differ}"
    moe_fixture = sorted(
        p.relative_to(ROOT / "tests" / "data").as_posix() for p in (ROOT / "tests/data/moe").rglob("*")
    )
    assert [r for r in moe_fixture if (ROOT / "tests" / "data" / r).is_file()] == [
        r for r in shipped if r.startswith("moe/")
    ]
    assert examples.path("moe").is_dir() and examples.path("moe").is_absolute()


def test_unknown_example_is_a_named_error():
    import perfmodel
    from perfmodel import examples

    with pytest.raises(perfmodel.PerfModelError, match=r"unknown example 'moe/'.*did you mean 'moe'.*Valid choices"):
        examples.path("moe/")
    with pytest.raises(LookupError, match=re.escape("Valid choices: h200_triton3.6_scope_and_kernel.hatchet, moe")):
        examples.path(None)


def test_fences_give_page_lines_and_markers():
    page = "# t\n\n```python\nx = 1\n```\n\n<!-- no-run: needs a CUDA GPU -->\n"
    page += "```python\nimport torch\n```\n```bash\nls\n```\n"
    assert list(_fences(page)) == [
        ("python", 4, "x = 1\n", None),
        ("python", 9, "import torch\n", "needs a CUDA GPU"),
        ("bash", 12, "ls\n", None),
    ]


def test_a_failing_block_names_its_page_line(wheel_site, tmp_path):
    """A block's traceback gives the page and line the user sees, and a name from another block is an error."""
    block = Block("docs/x.md", 7, "\n" * 6 + "import perfmodel\n\nprint(report)\n")
    rc, stderr, _ = _run_block(block, wheel_site, tmp_path)
    assert rc == 1 and 'File "docs/x.md", line 9' in stderr and "NameError" in stderr


def test_runner_refuses_the_checkout(wheel_site, tmp_path):
    """The runner's own check works: with the checkout first on sys.path it refuses to run the block."""
    code = tmp_path / "block.py"
    code.write_text("raise SystemExit(0)\n")
    env = _env(f"{ROOT}{os.pathsep}{wheel_site}", tmp_path)
    cmd = [sys.executable, "-c", RUNNER, str(wheel_site), str(ROOT), "probe.md", str(code)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "must come from the installed wheel" in proc.stderr


@pytest.fixture(scope="session")
def wheel_site(tmp_path_factory) -> pathlib.Path:
    """The checkout's wheel installed in a folder of its own, once per session."""
    return install_wheel(tmp_path_factory.mktemp("docs_wheel"))


def install_wheel(base: pathlib.Path) -> pathlib.Path:
    """Build a wheel of the checkout from a copy of its sources under ``base`` (the checkout gets no build/
    folder), install it with ``pip install --no-deps --target``; returns the target folder."""
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "setup.py", "setup.cfg"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "perfmodel", src / "perfmodel", ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    wheels = base / "wheels"
    # the environment's setuptools when it has one (no download); else pip fetches pyproject's build requirements
    have_backend = all(importlib.util.find_spec(m) for m in ("setuptools", "wheel"))
    isolation = ["--no-build-isolation"] if have_backend else []
    _pip([*pip, "wheel", "--no-deps", *isolation, "-w", str(wheels), str(src)], "build the wheel")
    (wheel,) = wheels.glob("perfmodel-*.whl")
    site = base / "site"
    _pip([*pip, "install", "--no-deps", "--target", str(site), str(wheel)], "install the wheel")
    return site


def _pip(cmd: list[str], what: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.fail(f"could not {what} ({' '.join(cmd[3:])}): exit {proc.returncode}\n{proc.stderr[-STDERR_TAIL:]}")


def _env(pythonpath: str, home: pathlib.Path, mplconfig: pathlib.Path | None = None) -> dict[str, str]:
    """The block's environment: only the wheel on PYTHONPATH; home and temporary files in its own folder;
    matplotlib's font cache shared by the session (built once, not once per block)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "MPL"))}
    env.update(PYTHONPATH=pythonpath, MPLBACKEND="Agg", HOME=str(home), TMPDIR=str(home), PYTHONHASHSEED="0")
    if mplconfig is not None:
        env["MPLCONFIGDIR"] = str(mplconfig)
    return env


def _run_block(block: Block, site: pathlib.Path, base: pathlib.Path) -> tuple[int, str, float]:
    """Run one block in a fresh interpreter in its own empty folder; (exit code, stderr, seconds)."""
    cwd = pathlib.Path(tempfile.mkdtemp(prefix="block_", dir=base))
    code = base / f"{cwd.name}.py"  # outside the cwd: the block finds an empty folder
    code.write_text(block.code)
    cmd = [sys.executable, "-c", RUNNER, str(site), str(ROOT), block.doc, str(code)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
            env=_env(str(site), cwd, base / "mplconfig"),
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {BLOCK_TIMEOUT_S} s", time.perf_counter() - start
    return proc.returncode, proc.stderr, time.perf_counter() - start


def _expected_cost(block: Block) -> tuple[bool, bool, int]:
    """A rough rank of a block's run time: a notebook runs many cells, importing torch takes seconds."""
    torch = "import torch" in block.code or "from torch" in block.code or "torchao" in block.code
    return block.doc.startswith("docs/notebooks/"), torch, len(block.code.strip().splitlines())


#: pytest-xdist names its worker processes in this variable: there the workers are the lanes (each worker's
#: ``session.items`` holds every collected test, not the ones it is sent, so a pool there would run every block in
#: every worker, two lanes each, on the same 2 cores)
XDIST_WORKER = "PYTEST_XDIST_WORKER"


class _LazyResults(dict):
    """Under xdist: each block run when its test asks for it (once), with the same no-writes check as the pool's, made
    around each block on its own."""

    def __init__(self, site: pathlib.Path, base: pathlib.Path):
        super().__init__()
        self.site, self.base = site, base

    def __missing__(self, block_id: str) -> tuple[int, str, float]:
        (block,) = [b for b in BLOCKS if b.id == block_id]
        before = _files_of(self.site)
        self[block_id] = got = _run_block(block, self.site, self.base)
        changed = before ^ _files_of(self.site)
        assert not changed, f"{block_id} wrote into the installed package (it may write only in its cwd): {changed}"
        return got


@pytest.fixture(scope="session")
def block_results(request, wheel_site, tmp_path_factory) -> dict[str, tuple[int, str, float]]:
    """Runs the selected blocks, two at a time (this runs on 2-core machines), once per session; under pytest-xdist
    each block when its test runs, in the worker that runs it (:class:`_LazyResults`)."""
    if os.environ.get(XDIST_WORKER):
        return _LazyResults(wheel_site, tmp_path_factory.mktemp("docs_blocks"))
    selected = {
        item.callspec.params["block"].id
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_block_runs_alone" and hasattr(item, "callspec")
    }
    todo = [b for b in BLOCKS if b.no_run is None and b.id in selected]
    todo.sort(key=_expected_cost, reverse=True)  # the slow ones first: the pool's two lanes end together
    base = tmp_path_factory.mktemp("docs_blocks")
    before = _files_of(wheel_site)
    with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        results = dict(
            zip([b.id for b in todo], pool.map(lambda b: _run_block(b, wheel_site, base), todo), strict=True)
        )
    changed = before ^ _files_of(wheel_site)
    assert not changed, f"docs blocks wrote into the installed package (they may write only in their cwd): {changed}"
    return results


def _files_of(folder: pathlib.Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if "__pycache__" not in p.parts}


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_block_runs_alone(block, block_results):
    if block.no_run is not None:
        pytest.skip(f"no-run: {block.no_run}")
    rc, stderr, _ = block_results[block.id]
    assert rc == 0, f"{block.id} failed on its own (exit {rc}); stderr tail:\n{stderr[-STDERR_TAIL:]}"


def test_lazy_results_run_a_block_once_and_check_it(wheel_site, tmp_path, monkeypatch):
    """The xdist lane (:class:`_LazyResults`) runs a block only when asked, once, and finds a write into the package."""
    runs = []
    monkeypatch.setattr(sys.modules[__name__], "_run_block", lambda b, site, base: runs.append(b.id) or (0, "", 0.0))
    lazy, first = _LazyResults(wheel_site, tmp_path), BLOCKS[0].id
    assert not lazy and lazy[first] == (0, "", 0.0) and lazy[first] == (0, "", 0.0) and runs == [first]
    junk = wheel_site / "perfmodel" / "junk_from_a_block.txt"
    monkeypatch.setattr(
        sys.modules[__name__], "_run_block", lambda b, site, base: junk.write_text("x") and (0, "", 0.0)
    )
    try:
        with pytest.raises(AssertionError, match="wrote into the installed package"):
            lazy[BLOCKS[1].id]
    finally:
        junk.unlink()
