"""``benchmarks/data/MANIFEST.json`` matches the tree: every listed file exists with its size and SHA-256, no file
under ``benchmarks/data`` is unlisted (README.md files aside, as ``benchmarks/make_manifest.py`` leaves them out), and
the script's output is stable. After adding or changing data: ``python benchmarks/make_manifest.py``."""

import gzip
import json
import time
from pathlib import Path

import pytest

from benchmarks import make_manifest as mm

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
HINT = "run python benchmarks/make_manifest.py and commit benchmarks/data/MANIFEST.json"

pytestmark = pytest.mark.skipif(not (DATA / "MANIFEST.json").is_file(), reason="needs a checkout's benchmarks/data")


@pytest.fixture(scope="module")
def manifest():
    return json.loads((DATA / "MANIFEST.json").read_text(encoding="utf-8"))


def test_every_listed_file_has_its_size_and_sha256(manifest):
    start = time.perf_counter()
    bad = []
    for e in manifest["files"]:
        path = DATA / e["path"]
        if not path.is_file():
            bad.append(f"{e['path']}: missing")
        elif path.stat().st_size != e["bytes"]:
            bad.append(f"{e['path']}: {path.stat().st_size} bytes, listed {e['bytes']}")
        elif mm.sha256(path) != e["sha256"]:
            bad.append(f"{e['path']}: SHA-256 differs")
    assert not bad, f"{len(bad)} files differ from the manifest ({HINT}): " + "; ".join(bad[:10])
    seconds = time.perf_counter() - start
    total = sum(e["bytes"] for e in manifest["files"])
    assert total == manifest["total_bytes"] and len(manifest["files"]) == manifest["n_files"]
    print(f"hashed {total / 2**20:.1f} MiB in {seconds:.2f} s")


def test_no_file_is_unlisted(manifest):
    listed = {e["path"] for e in manifest["files"]}
    on_disk = {p.relative_to(DATA).as_posix() for p in DATA.rglob("*") if p.is_file()}
    unlisted = sorted(p for p in on_disk - listed if Path(p).name not in mm.SKIPPED)
    assert not unlisted, (
        f"{len(unlisted)} files under benchmarks/data are not in the manifest ({HINT}): {unlisted[:10]}"
    )
    assert not listed & {p for p in on_disk if Path(p).name in mm.SKIPPED}  # READMEs and the manifest stay out


def test_the_manifest_is_sorted_and_rendered_as_the_script_writes_it(manifest):
    paths = [e["path"] for e in manifest["files"]]
    assert paths == sorted(paths) and len(set(paths)) == len(paths)
    assert all(tuple(e) == mm.FIELDS for e in manifest["files"])
    assert mm.render(manifest) == (DATA / "MANIFEST.json").read_text(encoding="utf-8")


def test_known_files_have_the_counts_their_readme_gives(manifest):
    by = {e["path"]: e for e in manifest["files"]}
    gemm = by["h200_2026-11-30/h200_gemm_2026-11-30.json.gz"]  # README: 2907 gemm records (969 shapes x 3 formats)
    assert gemm["rows"] == 2907 and gemm["date"] == "2026-11-30" and gemm["date_from"] == "meta"
    assert gemm["gpu"] == {"name": "NVIDIA H200", "uuid": None}
    assert by["h200_2026-11-30/h200_memory_2026-11-30.json.gz"]["rows"] == 33  # 13 copy + 20 cast
    grouped = by["h200_2026-12-03/grouped_gemm_time.json.gz"]
    assert grouped["gpu"]["uuid"].startswith("GPU-") and grouped["gpu"]["name"] == "NVIDIA H200"
    for e in manifest["files"]:
        if not e["path"].endswith((".json", ".json.gz")):
            assert e["rows"] is None and e["gpu"] is None, e["path"]
    assert not any(e["path"].startswith(("perfmodel/", "/")) or ".." in e["path"] for e in manifest["files"])


def test_the_script_on_a_small_tree_is_stable_and_counts_as_documented(tmp_path):
    (tmp_path / "day_2026-01-02").mkdir()
    recs = {"meta": {"date": "2026-01-01", "gpu_name": "G", "gpu_uuid": "GPU-1"}, "records": [{}, {}, {}]}
    (tmp_path / "day_2026-01-02" / "a_2025-12-31.json.gz").write_bytes(gzip.compress(json.dumps(recs).encode()))
    (tmp_path / "day_2026-01-02" / "plan.json").write_text(json.dumps({"meta": {"gpu": "H200"}, "items": [1, 2]}))
    (tmp_path / "day_2026-01-02" / "list_2025-11-11.json").write_text("[1, 2, 3, 4]")
    (tmp_path / "day_2026-01-02" / "other.json").write_text('{"x": 1}')
    (tmp_path / "day_2026-01-02" / "log.txt").write_text("hello\n")
    (tmp_path / "README.md").write_text("prose")
    assert mm.main(["--root", str(tmp_path)]) == 0
    text = (tmp_path / "MANIFEST.json").read_text()
    got = {e["path"].split("/")[-1]: e for e in json.loads(text)["files"]}
    assert sorted(got) == ["a_2025-12-31.json.gz", "list_2025-11-11.json", "log.txt", "other.json", "plan.json"]
    a = got["a_2025-12-31.json.gz"]
    assert (a["rows"], a["gpu"], a["date"], a["date_from"]) == (3, {"name": "G", "uuid": "GPU-1"}, "2026-01-01", "meta")
    assert (got["plan.json"]["rows"], got["plan.json"]["gpu"]) == (2, {"name": "H200", "uuid": None})
    assert (got["list_2025-11-11.json"]["rows"], got["list_2025-11-11.json"]["date_from"]) == (4, "name")
    assert got["list_2025-11-11.json"]["date"] == "2025-11-11" and got["list_2025-11-11.json"]["gpu"] is None
    assert (got["other.json"]["rows"], got["other.json"]["gpu"], got["other.json"]["date_from"]) == (
        None,
        None,
        "folder",
    )
    assert (got["log.txt"]["rows"], got["log.txt"]["date"], got["log.txt"]["date_from"]) == (
        None,
        "2026-01-02",
        "folder",
    )
    assert got["log.txt"]["sha256"] == "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"  # sha256sum
    assert mm.main(["--root", str(tmp_path), "--check"]) == 0
    assert mm.main(["--root", str(tmp_path), "--recompute"]) == 0 and (tmp_path / "MANIFEST.json").read_text() == text
    (tmp_path / "day_2026-01-02" / "log.txt").write_text("changed\n")
    assert mm.main(["--root", str(tmp_path), "--check"]) == 1


def test_the_wheel_ships_no_raw_data():
    tomllib = pytest.importorskip("tomllib")
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = conf["tool"]["setuptools"]["package-data"]["perfmodel"]
    examples = ["examples/*.hatchet", "examples/moe/**/*"]  # the docs' small example profiles (perfmodel.examples)
    assert sorted(patterns) == ["calibrations/*.json", "calibrations/*.json.gz", *examples, "py.typed"]
    shipped = [p for p in (ROOT / "perfmodel" / "examples").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert sum(p.stat().st_size for p in shipped) < 100_000  # examples stay small: real sweeps go to benchmarks/data
    cal = ROOT / "perfmodel" / "calibrations"
    assert not [p for p in cal.iterdir() if p.is_dir() and p.name != "__pycache__"]  # no data/ folder to ship
    assert (cal / "h200_tiles.json.gz").is_file() and not (cal / "h200_tiles.json").exists()  # compressed only
