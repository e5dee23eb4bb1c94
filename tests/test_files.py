"""perfmodel._files and every reader/writer built on it: only regular files of bounded size are read
(FIFOs and devices refused at once, never blocking), JSON of any depth parses without touching process
state, writes are atomic and never replace a file (or an input) unless asked, and no reader lets
anything but perfmodel's own errors out."""

from __future__ import annotations

import json
import math
import os
import stat
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from proton_synth import frame, kernel, profile, write

from perfmodel import _files
from perfmodel.calibrate import load_dataset
from perfmodel.errors import CalibrationError, FileRefusedError, PerfModelError, ProfileError
from perfmodel.measured import proton
from perfmodel.measured.moe_bench import read_log_metadata
from perfmodel.models.calibrated import load_calibration

READERS: dict[str, Callable[[Any], Any]] = {
    "proton.read": proton.read,
    "load_calibration": load_calibration,
    "load_dataset": load_dataset,
    "read_log_metadata": read_log_metadata,
}


def _in_thread(fn: Callable[[], Any], timeout_s: float = 10.0) -> Any:
    """Run ``fn`` in a daemon thread; fail (instead of hanging the suite) if it has not returned in time."""
    out: dict[str, Any] = {}

    def work() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(timeout_s)
    assert not t.is_alive(), f"still running after {timeout_s} s (blocked?)"
    if "error" in out:
        raise out["error"]
    return out.get("value")


# -- reading: what is refused ----------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("reader", sorted(READERS))
def test_fifo_is_refused_at_once(tmp_path: Path, reader: str) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    try:
        with pytest.raises(FileRefusedError, match=r"pipe\.json: a FIFO \(named pipe\), not a regular file"):
            _in_thread(lambda: READERS[reader](fifo))
    finally:  # should the read have blocked, a writer releases it
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("reader", sorted(READERS))
def test_devices_are_refused(reader: str) -> None:
    for device in ("/dev/zero", "/dev/null"):
        with pytest.raises(FileRefusedError, match=rf"{device}: a character device, not a regular file"):
            _in_thread(lambda device=device: READERS[reader](device))


@pytest.mark.parametrize("reader", sorted(READERS))
def test_folders_are_refused(tmp_path: Path, reader: str) -> None:
    with pytest.raises(FileRefusedError, match="a folder, not a regular file") as info:
        READERS[reader](tmp_path)
    assert isinstance(info.value, OSError) and isinstance(info.value, PerfModelError)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_size_limit_env_and_argument(tmp_path: Path, reader: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"records": [], "pad": "x" * 5000}))
    size = path.stat().st_size
    monkeypatch.setenv(_files.MAX_FILE_BYTES_ENV, "1000")
    with pytest.raises(FileRefusedError, match=rf"big\.json: {size} bytes .*above the 1000-byte .*limit"):
        READERS[reader](path)
    with pytest.raises(FileRefusedError, match="PERFMODEL_MAX_FILE_BYTES"):
        READERS[reader](path, max_bytes=size - 1)  # the argument beats the variable
    with pytest.raises(PerfModelError) as info:  # now read (and refused for its content, not its size)
        READERS[reader](path, max_bytes=size)
    assert not isinstance(info.value, FileRefusedError)
    monkeypatch.setenv(_files.MAX_FILE_BYTES_ENV, "lots")
    with pytest.raises(FileRefusedError, match=r"PERFMODEL_MAX_FILE_BYTES='lots' is not a whole number"):
        READERS[reader](path)


def test_default_limits() -> None:
    assert _files.PROFILE_MAX_BYTES == 2**30 and _files.DATA_MAX_BYTES == 64 * 2**20
    assert _files.max_file_bytes(_files.PROFILE_MAX_BYTES) in (_files.PROFILE_MAX_BYTES, _files.max_file_bytes(1))


def test_missing_files_keep_their_domain_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    for reader, error in (
        (proton.read, ProfileError),
        (load_calibration, CalibrationError),
        (load_dataset, CalibrationError),
        (read_log_metadata, ProfileError),
    ):
        with pytest.raises(error, match=r"missing\.json: cannot read the .*No such file"):
            reader(missing)


# -- JSON of any depth, without process-wide changes -----------------------------------------------
def _deep_profile_text(levels: int) -> str:
    head = '{"frame": {"name": "s", "type": "function"}, "metrics": {}, "children": ['
    leaf = json.dumps(kernel("_matmul_deep", 7, flops={16: 3}, nbytes=5))
    return "[" + head * levels + leaf + "]}" * levels + ', {"CUDA": {"0": ' + json.dumps(_h200()) + "}}]"


def _h200() -> dict[str, Any]:
    from proton_synth import H200_INFO

    return H200_INFO


def test_deep_profile_parses_without_touching_recursion_or_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "deep.hatchet"
    path.write_text(_deep_profile_text(10_000))
    limit, stack = sys.getrecursionlimit(), threading.stack_size()

    def forbidden(*args: Any) -> None:
        raise AssertionError("process-wide state changed")

    monkeypatch.setattr(sys, "setrecursionlimit", forbidden)
    monkeypatch.setattr(threading, "stack_size", forbidden)
    stop = threading.Event()
    depths: list[int] = []

    def recurse(n: int) -> int:  # another thread, recursing until Python stops it (as runaway code does)
        return recurse(n + 1)

    def other() -> None:
        while not stop.is_set():
            try:
                recurse(0)
            except RecursionError:  # at the limit in force: had the parse raised it, this would overflow the stack
                depths.append(1)

    t = threading.Thread(target=other, daemon=True)
    t.start()
    try:
        prof = _in_thread(lambda: proton.read(path), timeout_s=60)
    finally:
        stop.set()
        t.join(10)
    monkeypatch.undo()
    assert sys.getrecursionlimit() == limit and threading.stack_size() == stack
    assert depths and not t.is_alive()
    (k,) = prof.kernels
    assert len(k.path) == 10_001 and prof.perfdata(gpu="H200").flops == 3


def test_deep_calibration_and_dataset_are_named_errors(tmp_path: Path) -> None:
    deep = "[" * 50_000 + "]" * 50_000
    cal = tmp_path / "c.json"
    cal.write_text('{"schema": "perfmodel.calibration/3", "gpu": ' + deep + "}")
    with pytest.raises(CalibrationError, match=r"c\.json: "):
        load_calibration(cal)
    data = tmp_path / "d.json"
    data.write_text('{"records": [{"op": "gemm", "K": 8, "N": 8, "dtype": "bf16", "time_s": 1, "M": ' + deep + "}]}")
    with pytest.raises(CalibrationError, match=r"d\.json: records\[0\]\.M is \[\[\[.*\]\]\], expected a whole"):
        load_dataset(data)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(value=_JSON, indent=st.sampled_from([None, 0, 2]))
def test_iterative_parser_equals_json_loads(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent)
    assert _files._loads_iterative(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": NaN, "b": [Infinity, -Infinity, -0.0, 1e400, 12, 1.5e-3]}',
        ' \n[{"": {}}, [], "\\u00e9\\n"] ',
        '{"k": 1, "k": 2}',
    ],
)
def test_iterative_parser_extensions_and_duplicates(text: str) -> None:
    got, want = _files._loads_iterative(text), json.loads(text)
    assert json.dumps(got) == json.dumps(want) and list(got) == list(want)


@pytest.mark.parametrize(
    "text",
    ["", "[1,]", '{"a" 1}', '{"a": 1,}', "[1 2]", "nul", '"\x01"', "[] []", "{1: 2}", "[", "\ufeff[]", "-", "01"],
)
def test_iterative_parser_rejects_what_json_rejects(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        _files._loads_iterative(text)


def test_deep_json_values() -> None:
    value = _files.loads_json('{"a": ' + "[" * 20_000 + "1" + "]" * 20_000 + ', "b": 2}')
    depth, node = 0, value["a"]
    while isinstance(node, list):
        depth, node = depth + 1, node[0]
    assert (depth, node, value["b"]) == (20_000, 1, 2)


# -- metrics and messages --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("metrics", "match"),
    [
        ({"time (ns)": 10, "bytes": -5}, r"metric 'bytes' is -5, expected a number >= 0"),
        ({"time (ns)": 10, "flops16": -1.5}, r"metric 'flops16' is -1\.5, expected a number >= 0"),
        ({"time (ns)": -3}, r"metric 'time \(ns\)' is -3, expected a number >= 0"),
        ({"time (ns)": 0}, r"metric 'time \(ns\)' is 0, expected a device time > 0"),
        ({"time (ns)": math.nan}, r"metric 'time \(ns\)' is nan, expected a finite number"),
        ({"time (ns)": 10, "bytes": math.inf}, r"metric 'bytes' is inf, expected a finite number"),
        ({"time (ns)": 10, "count": 2.5}, r"metric 'count' is 2\.5, expected a whole number"),
        ({"time (ns)": 10, "bytes": 10**40}, r"metric 'bytes' is 1000.*, expected at most 1e30"),
        ({"time (ns)": [5, -1]}, r"metric 'time \(ns\)' is \[5, -1\], expected finite numbers >= 0"),
        ({"time (ns)": 10, "device_id": [0]}, r"metric 'device_id' is \[0\], expected a string or an integer"),
        ({"time (ns)": True}, r"metric 'time \(ns\)' is True, expected a number"),
    ],
)
def test_bad_metrics_name_file_frame_and_value(tmp_path: Path, metrics: dict[str, Any], match: str) -> None:
    path = write(tmp_path / "bad.hatchet", profile(frame("layer", {}, frame("_matmul_x", metrics))))
    with pytest.raises(ProfileError, match=r"bad\.hatchet: frame 'layer / _matmul_x': " + match):
        proton.read(path)


@pytest.mark.parametrize(
    ("info", "match"),
    [
        ({"num_sms": 0}, r"'num_sms' is 0, expected a whole number > 0"),
        ({"num_sms": 13.5}, r"'num_sms' is 13\.5, expected a whole number > 0"),
        ({"clock_rate": -1}, r"'clock_rate' is -1, expected a finite number > 0"),
        ({"bus_width": "wide"}, r"'bus_width' is 'wide', expected a whole number > 0"),
        ({"memory_clock_rate": None}, r"'memory_clock_rate' is None"),
        ({"arch": [9, 0]}, r"'arch' is \[9, 0\], expected a string"),
    ],
)
def test_bad_device_metadata_is_named(tmp_path: Path, info: dict[str, Any], match: str) -> None:
    devices = {"CUDA": {"0": {**_h200(), **info}}}
    path = write(tmp_path / "dev.hatchet", profile(kernel("_matmul", 10), devices=devices))
    with pytest.raises(ProfileError, match=r"dev\.hatchet: device CUDA:0: " + match):
        proton.read(path)


def test_unknown_arch_error_names_the_file(tmp_path: Path) -> None:
    devices = {"CUDA": {"0": {**_h200(), "arch": "77"}}}
    prof = proton.read(write(tmp_path / "arch.hatchet", profile(kernel("_matmul", 10), devices=devices)))
    with pytest.raises(LookupError, match=r"arch\.hatchet: device CUDA:0: no Proton peak formula for CUDA arch '77'"):
        prof.perfdata()
    assert prof.perfdata(gpu="H200").time_s == 10e-9  # readable all the same, with gpu=


def test_messages_never_echo_megabytes(tmp_path: Path) -> None:
    huge = "k" * 5_000_000
    cases = [
        profile(frame(huge, {"time (ns)": -1})),
        profile(frame("k", {huge: "x", "time (ns)": 1, "bytes": [huge]})),
        profile(kernel("k", 1), devices={"CUDA": {"0": {**_h200(), "arch": huge}}}),
        profile(kernel("k", 1), devices={"CUDA": {"0": {**_h200(), "clock_rate": huge}}}),
    ]
    for i, data in enumerate(cases):
        path = write(tmp_path / f"h{i}.hatchet", data)
        with pytest.raises(PerfModelError) as info:
            proton.read(path).perfdata(".*")
        assert len(str(info.value)) < 1000, i
    names = write(tmp_path / "names.hatchet", profile(kernel(huge, 1)))
    with pytest.raises(ProfileError) as info:
        proton.read(names).perfdata("nothing", gpu="H200")
    assert len(str(info.value)) < 1000
    cal = tmp_path / "c.json"
    cal.write_text(json.dumps({"schema": huge}))
    with pytest.raises(CalibrationError) as info:
        load_calibration(cal)
    assert len(str(info.value)) < 1000


# -- writing ---------------------------------------------------------------------------------------
def test_write_atomic_new_and_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    assert _files.write_atomic(out, "one\n", force=False) == out
    assert out.read_text() == "one\n"
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~_files._umask()
    with pytest.raises(FileRefusedError, match=r"out\.json: exists; not overwriting it\. Pass force=True"):
        _files.write_atomic(out, "two\n", force=False)
    assert out.read_text() == "one\n"
    out.chmod(0o600)
    assert _files.write_atomic(out, b"two\n", force=True) == out
    assert out.read_text() == "two\n" and stat.S_IMODE(out.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left behind


def test_write_atomic_refuses_inputs_even_with_force(tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    data.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(data)
    for name in (data, link, tmp_path / "." / "data.json"):
        with pytest.raises(FileRefusedError, match="this is the input"):
            _files.write_atomic(name, "x", force=True, inputs=[data])
    assert data.read_text() == "{}"
    _files.write_atomic(link, "new", force=True)  # a link is followed: the file it names is replaced
    assert link.is_symlink() and data.read_text() == "new"


def test_write_atomic_missing_folder_and_special_targets(tmp_path: Path) -> None:
    with pytest.raises(FileRefusedError, match=r"the folder '.*nope' does not exist; perfmodel does not create"):
        _files.write_atomic(tmp_path / "nope" / "x.json", "x", force=True)
    assert not (tmp_path / "nope").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(FileRefusedError, match="is not a folder"):
        _files.write_atomic(tmp_path / "file" / "x.json", "x", force=True)
    with pytest.raises(FileRefusedError, match="exists and is a folder, not a regular file"):
        _files.write_atomic(tmp_path, "x", force=True)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        with pytest.raises(FileRefusedError, match="a FIFO"):
            _in_thread(lambda: _files.write_atomic(fifo, "x", force=True))
        assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_write_atomic_failure_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "cal.json"
    out.write_text("old")

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space left"):
        _files.write_atomic(out, "new" * 1000, force=True)
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]
    monkeypatch.undo()

    def broken_replace(src: str, dst: Any) -> None:
        raise KeyboardInterrupt  # even an interrupt between write and rename leaves nothing behind

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(KeyboardInterrupt):
        _files.write_atomic(out, "new", force=True)
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["cal.json"]


def test_write_atomic_to_stdout(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    assert _files.write_atomic("-", "text\n", force=False) == Path("-")
    assert _files.write_atomic("/dev/stdout", b"\x89PNG", force=False) == Path("/dev/stdout")
    assert capsysbinary.readouterr().out == b"text\n\x89PNG"


# -- fuzz: only perfmodel's own errors come out of the readers ------------------------------------
_JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats()
    | st.sampled_from(["CUDA", "HIP", "90", "gfx90a", "ROOT", "time (ns)", "flops8", "bytes", "count", "x"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "frame",
                    "name",
                    "metrics",
                    "children",
                    "time (ns)",
                    "flops16",
                    "bytes",
                    "count",
                    "device_id",
                    "device_type",
                    "CUDA",
                    "0",
                    "arch",
                    "num_sms",
                    "clock_rate",
                    "memory_clock_rate",
                    "bus_width",
                    "schema",
                    "gpu",
                    "gemm",
                    "kernels",
                    "reference",
                    "records",
                    "op",
                    "M",
                    "K",
                    "N",
                    "dtype",
                    "time_s",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=25,
)
_FUZZ_READERS = {"proton": proton.read, "calibration": load_calibration, "dataset": load_dataset}


def _only_our_errors(path: Path) -> None:
    for name, reader in _FUZZ_READERS.items():
        try:
            result = reader(path)
            if name == "proton":
                assert isinstance(result.kernels, list)
                result.perfdata(".*", gpu="H200")
        except PerfModelError:
            pass


@settings(max_examples=120, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.binary(max_size=300))
def test_fuzz_bytes(tmp_path: Path, blob: bytes) -> None:
    path = tmp_path / "fuzz.bin"
    path.write_bytes(blob)
    _only_our_errors(path)


@settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_JSONISH, shape=st.sampled_from(["plain", "profile", "calibration", "dataset"]))
def test_fuzz_json(tmp_path: Path, value: Any, shape: str) -> None:
    if shape == "profile":
        value = [{"frame": {"name": "ROOT"}, "metrics": {}, "children": [value]}, value]
    elif shape == "calibration":
        value = {"schema": "perfmodel.calibration/3", "gpu": "H200", "source": "s", "reference": value, "gemm": value}
    elif shape == "dataset":
        value = {"meta": {}, "records": [value, {"op": "gemm", **(value if isinstance(value, dict) else {})}]}
    path = tmp_path / "fuzz.json"
    path.write_text(json.dumps(value))
    _only_our_errors(path)


def test_gzipped_json_is_read_and_its_decompressed_size_bounded(tmp_path):
    import gzip
    import json

    from perfmodel._files import load_json
    from perfmodel.errors import CalibrationError, FileRefusedError

    p = tmp_path / "d.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"records": [1, 2, 3]}).encode()))
    assert load_json(p, what="dataset", error=CalibrationError) == {"records": [1, 2, 3]}
    # 1 MB of zeros compresses to ~1 kB: the limit applies to what comes out
    bomb = tmp_path / "b.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b"0," * 500_000 + b"0]"))
    with pytest.raises(FileRefusedError, match="once decompressed"):
        load_json(bomb, what="dataset", error=CalibrationError, limit_bytes=100_000)
    bad = tmp_path / "x.json.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(CalibrationError, match="cannot read"):
        load_json(bad, what="dataset", error=CalibrationError)
