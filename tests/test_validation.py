"""The validation report and the shipped H200 calibration are what the committed data gives."""

import pathlib
import re

import numpy as np
import pytest
from bench_modules import bench_module, validation_docs

import perfmodel as pm
from perfmodel.calibrate import load_calibration

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def validate():
    return bench_module("validate")


@pytest.fixture(scope="module")
def report(validate):
    return validate.evaluate(sorted(validate.DATA.glob("h200_*.json.gz")))


# The fit runs scipy's least squares and numpy's lstsq on top of OpenBLAS, whose kernels differ between
# CPUs (OPENBLAS_CORETYPE=Haswell vs. the auto-detected one moved fitted values by up to 3e-6 relative).
# Refitted numbers are therefore compared with a tolerance far above that and far below any change of
# the model that matters: 1e-4 relative for parameters, one unit of the last printed digit in the docs.
REL = 1e-4
#: parameters along a flat direction of their fit, with the tolerance they need: on an AMD EPYC machine with numpy
#: 2.4.6 / scipy 1.17.1 (OPENBLAS_CORETYPE=Haswell or not) the refit's bf16@fallback wave_quantization lands 1.2e-4
#: from the shipped 0.004836 while that group's other parameters move by at most 1.5e-5 and its held-out residuals
#: (MdAPE, p90, max) by at most 2e-5 relative: the fit's error does not see it
FLAT = {"calibration.gemm.bf16@fallback.wave_quantization": 1e-3}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def assert_close(got, want, path="calibration"):
    """Recursive equality of JSON-like values, floats within ``REL`` relative."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), path
        for key in want:
            assert_close(got[key], want[key], f"{path}.{key}")
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, f"{path}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert got == pytest.approx(want, rel=FLAT.get(path, REL), abs=1e-12), path
    else:
        assert got == want, path


def assert_same_text_but_rounding(got: str, want: str) -> None:
    """The same text, where every number may differ by one unit of its last printed digit."""
    got_nums, want_nums = _NUMBER.findall(got), _NUMBER.findall(want)
    assert _NUMBER.sub("#", got) == _NUMBER.sub("#", want)
    for g, w in zip(got_nums, want_nums, strict=True):
        ulp = 10.0 ** -len(w.partition(".")[2])
        assert abs(float(g) - float(w)) <= ulp * 1.001, (g, w)


def test_number_comparisons_can_fail():
    assert_same_text_but_rounding("| 5.6 / 15.8 | 30/32 |", "| 5.7 / 15.8 | 30/32 |")
    with pytest.raises(AssertionError):
        assert_same_text_but_rounding("| 5.6 / 15.8 |", "| 5.8 / 15.8 |")
    with pytest.raises(AssertionError):
        assert_same_text_but_rounding("| 5.6 / 15.8 | bf16 |", "| 5.6 / 15.8 | fp8 |")
    assert_close({"a": [1.0, 2]}, {"a": [1.00001, 2]})
    with pytest.raises(AssertionError):
        assert_close({"a": [1.0, 2]}, {"a": [1.001, 2]})


def test_docs_tables_are_reproducible(validate, report):
    doc = validation_docs()
    _, _, rest = doc.partition(validate.BEGIN + "\n")
    shipped, _, _ = rest.partition("\n" + validate.END)
    assert shipped, "docs/validation.md has no generated tables"
    assert_same_text_but_rounding(validate.markdown(report), shipped)


def test_shipped_calibration_is_the_fit(report):
    shipped = load_calibration(ROOT / "perfmodel" / "calibrations" / "h200.json")
    assert_close(report["calibration"].to_dict(), shipped.to_dict())
    assert pm.time_model("H200").load().to_dict() == shipped.to_dict()


def test_calibrated_beats_constant_fraction_rooflines(report):
    for group, by_model in report["gemm"].items():
        ours = by_model["perfmodel calibrated"]
        assert ours["n"] > 250, group
        assert ours["mdape"] < 8, group
        for name in ("original 60%/92%", "roofline 0.78"):
            assert ours["mdape"] < by_model[name]["mdape"] / 3, (group, name)
    for row, by_model in report["linear"].items():
        if row.endswith("(static)"):
            assert by_model["perfmodel calibrated"]["mdape"] < 6, row
            assert by_model["perfmodel calibrated"]["p90"] < 15, row
    for row, d in report["decisions"].items():
        ours = d["perfmodel calibrated"]
        assert ours["agree_clear"] == ours["n_clear"] or not row.endswith("(static)"), row
        assert ours["share"] >= d["original 60%/92%"]["share"], row


def test_h200_predicts_with_its_calibration_by_default():
    h200 = pm.get_gpu("H200")
    assert pm.provenance(h200).kind == "measured"
    assert pm.gemm_time_s(4096, 4096, 4096, "bf16", h200) != pm.gemm_time_s(
        4096, 4096, 4096, "bf16", h200, time_model="roofline"
    )
    from perfmodel import float8

    assert float8.linear_time(8192, 4096, 4096, "tensorwise", h200).model == "calibrated"
    # dynamic-shape compiles get the slower casts they measured
    assert float8.speedup(8192, 4096, 14336, "rowwise", h200, dynamic_shapes=True) < float8.speedup(
        8192, 4096, 14336, "rowwise", h200
    )


def test_measured_expected_error_is_the_reported_one(report):
    from perfmodel.models.registry import EXPECTED_ERRORS

    measured = EXPECTED_ERRORS["measured"]
    worst_gemm = max(by_model["perfmodel calibrated"]["mdape"] for by_model in report["gemm"].values())
    static = [by["perfmodel calibrated"]["mdape"] for row, by in report["linear"].items() if row.endswith("(static)")]
    assert measured.gemm_time_pct == pytest.approx(worst_gemm, abs=0.05)
    assert measured.speedup_pct == pytest.approx(max(static), abs=0.05)
    clear = [d["perfmodel calibrated"] for row, d in report["decisions"].items() if row.endswith("(static)")]
    assert measured.decisions_pct == pytest.approx(
        100 * sum(c["agree_clear"] for c in clear) / sum(c["n_clear"] for c in clear), abs=0.5
    )


def _section(validate, begin, end):
    doc = validation_docs()
    _, _, rest = doc.partition(begin + "\n")
    body, _, _ = rest.partition("\n" + end)
    assert body, f"docs/validation.md has no {begin} section"
    return body


def test_layout_section_is_reproducible(validate):
    lay = validate.score_layout_sweep()
    assert_same_text_but_rounding(
        validate.markdown_layouts(lay), _section(validate, validate.LAYOUTS_BEGIN, validate.LAYOUTS_END)
    )
    # what the section claims: the GEMMs the fallback rule sends to the fallback run pre-Hopper kernels (but the
    # few-row ones cuBLAS gives gemmSN), the others never
    for key, (n, old) in lay["choice"].items():
        assert (old / n > 0.95) if key.endswith(" fallback") else (old == 0), key
    # ... the second session chose the same kernels, its run-to-run floor lies under the target while the
    # model does not, and a kernel lookup (neighbour choice, per-kernel correction) does not close the gap
    same, n = lay["sessions"]["same_kernel"]
    assert same == n == 4725
    floor, model = lay["sessions"]["rows"]["all"]["kernel"]["floor"], lay["sessions"]["rows"]["all"]["kernel"]["model"]
    assert floor["mdape"] < 4 and floor["p90"] < 12 and model["p90"] > 12
    fb = lay["fallback"]  # the fallback kernel class prices misaligned GEMMs better than per-alignment factors
    assert fb["fallback"]["n"] == 822 and fb["fallback"]["p90"] < fb["factors"]["p90"] - 20
    assert fb["fallback"]["mdape"] < fb["factors"]["mdape"]
    fresh = lay["fresh"]  # fresh shapes: every format and layout scored, and the target still missed
    assert {g for g in fresh if g != "bf16, fallback kernels"} == {*lay["sessions"]["rows"]} and fresh["all"]["kernel"][
        "n"
    ] == 4725
    assert fresh["all"]["kernel"]["p90"] > 12
    cm = lay["choice_model"]
    assert cm["nearest_right"] / cm["test"] < 0.5
    assert abs(cm["oracle_corrected"]["mdape"] - cm["model"]["mdape"]) < 1.0
    assert cm["knn_corrected"]["p90"] > 20  # the residual is not smooth in the shape


def test_error_bars_are_what_the_data_gives(validate, report):
    import json

    bars = validate.score_error_bars(report)
    shipped = json.loads((ROOT / "perfmodel" / "calibrations" / "error_bars.json").read_text())
    assert shipped["schema"] == "perfmodel.error_bars/1"
    assert_close(bars, shipped["bars"], "error_bars")
    assert_same_text_but_rounding(
        validate.markdown_error_bars(bars), _section(validate, validate.ERRORBARS_BEGIN, validate.ERRORBARS_END)
    )


@pytest.fixture(scope="module")
def validate_tiles():
    """benchmarks/harness/validate_tiles.py (`validate.py tiles`), loaded once for the tests below (it caches each
    session's predictions and the
    floors, which its tables and the floor test share, and with the other test files that read the sweeps)."""
    return bench_module("validate_tiles")


def test_tile_model_section_is_reproducible(validate_tiles):
    module = validate_tiles
    doc = validation_docs()
    shipped = doc.split(module.BEGIN)[1].split(module.END)[0].strip()
    assert_same_text_but_rounding(module.markdown(module.evaluate()).strip(), shipped)


def test_kernel_time_told_its_event_time_is_no_better_than_the_lookup(validate_tiles):
    """docs/validation.md ("What limits it"): told each fresh llm GEMM's event time from the same session (times its
    median kernel / event ratio over the fit sessions), kernel time is still at p90 13-14 % per kind: above the
    12 % target, so the kernel-time p90 miss is the measurement's own spread."""
    module = validate_tiles
    floor = module.score_floor(module.FRESH_SESSIONS, "kernel")
    for k in module.KINDS:
        row = floor[k]
        assert row["told"]["n"] == row["floor"]["n"] > 900  # every fresh llm GEMM has its event time
        assert 12.0 < row["told"]["p90"] < 16.0
        assert row["told"]["mdape"] < row["floor"]["mdape"]  # better than one other order, at the median
    assert "told" not in module.score_floor(module.FRESH_SESSIONS, "event")["all"]


def test_repeat_pairs_are_what_they_say(validate_tiles):
    """Each pair of validate_tiles.REPEATS measured the same GEMMs: its "same order" pairs in the same run order,
    its "another order" ones not (the order the records were measured in is the files' order)."""
    module = validate_tiles
    kinds = set()
    for first, again, where in module.REPEATS:
        for timing in ("kernel", "event"):
            a = [r["id"] for r in module.records(timing, first)]
            b = [r["id"] for r in module.records(timing, again)]
            common = set(a) & set(b)
            assert len(common) > 0.9 * max(len(a), len(b)), (first, again)
            same = [i for i in a if i in common] == [i for i in b if i in common]
            assert same == where.endswith(module.SAME_ORDER), (first, again, where)
        kinds.add(where.split(", ")[-1])
    assert kinds == {module.SAME_ORDER, module.OTHER_ORDER}


def test_load_before_sums_the_items_measured_just_before(validate_tiles, monkeypatch):
    module = validate_tiles
    fake = tuple({"id": f"g{i}", "time_s": float(i + 1)} for i in range(40))  # item i took i + 1 s
    monkeypatch.setattr(module, "records", lambda timing, suffix: fake)
    got = module._load_before("_any", "event", [fake[i] for i in (0, 29, 30, 39)])
    assert module.LOAD_ITEMS == 30
    assert np.isnan(got[0]) and np.isnan(got[1])  # fewer than 30 items before them
    assert got[2] == pytest.approx(sum(range(1, 31)))  # items 0-29: 1 + ... + 30 = 465 s
    assert got[3] == pytest.approx(sum(range(10, 40)))  # items 9-38: 10 + ... + 39 = 735 s


def test_the_order_floors_are_as_the_docs_say(validate_tiles):
    """docs/validation.md ("What limits it", "The order of the sweep"): another order spreads the same GEMMs more than
    a repeat in the same order, more so after heavy GEMMs; by event time most for bf16 rr, the first GEMM of each
    shape, above the 12 % target; and one session against the many-order median is closer than two sessions."""
    module = validate_tiles
    od = module.score_orders()
    assert od["positions"] == {k: i for i, k in enumerate(module.KINDS, 1)}
    assert module.positions("") == od["positions"]  # the first fit session ran them in the same order
    for timing in ("kernel", "event"):
        for k in (*module.KINDS, "all"):
            same, other = od[timing][module.SAME_ORDER][k], od[timing][module.OTHER_ORDER][k]
            assert other["floor_other"]["p90"] > (2 if timing == "kernel" else 1) * same["floor_other"]["p90"], k
            assert other["corr"] > 0.2, (timing, k)
            assert other["lookup"]["p90"] < other["floor_llm"]["p90"], (timing, k)
    event = od["event"][module.OTHER_ORDER]
    p90 = [event[k]["floor_other"]["p90"] for k in module.KINDS]
    assert p90[0] == max(p90) > 15.0
    rr = event[module.KINDS[0]]
    assert rr["lookup"]["p90"] < rr["tiles_other"]["p90"] < rr["floor_other"]["p90"]


def test_places_count_each_shapes_gemms_in_file_order(validate_tiles):
    rs = [{"group": g} for g in (7, 7, 3, 7, 3, 9, 3)]
    assert validate_tiles.places(rs).tolist() == [1, 2, 1, 3, 2, 1, 3]
    assert validate_tiles.places([]).tolist() == []


def test_leave_one_out_median_by_hand(validate_tiles):
    times = np.array([[1.0, 10.0], [2.0, 30.0], [4.0, 20.0], [8.0, 40.0]])
    got = validate_tiles.leave_one_out_median(times)
    # GEMM 0 without session 0: median(2, 4, 8) = 4; without 1: median(1, 4, 8) = 4; without 2: 2; without 3: 2
    assert got[:, 0].tolist() == [4.0, 4.0, 2.0, 2.0]
    # GEMM 1: median(30, 20, 40) = 30, (10, 20, 40) = 20, (10, 30, 40) = 30, (10, 30, 20) = 20
    assert got[:, 1].tolist() == [30.0, 20.0, 30.0, 20.0]
    with pytest.raises(ValueError, match="at least 3 sessions"):
        validate_tiles.leave_one_out_median(times[:2])


def test_rotated_and_many_order_sessions_are_what_they_say(validate_tiles):
    """The rotated sessions start each kind first for about a fifth of the shapes (every other session starts each
    shape with bf16 rr); seed 2083's six sessions measure the same GEMMs, each in an order of its own."""
    module = validate_tiles
    for sfx in (*module.ROTATED, "_fresh2082", "_fresh2083"):
        for timing in ("kernel", "event"):
            rs = list(module.records(timing, sfx))
            first = [module.kind_of(r) for r, q in zip(rs, module.places(rs), strict=True) if q == 1]
            share = {k: first.count(k) / len(first) for k in module.KINDS}
            if sfx in module.ROTATED:
                assert all(0.15 < v < 0.25 for v in share.values()), (sfx, share)
            else:
                assert share[module.KINDS[0]] == 1.0, sfx
    orders = []
    for sfx in module.MANY_ORDERS:
        ids = [r["id"] for r in module.records("event", sfx)]
        assert sorted(ids) == sorted(r["id"] for r in module.records("event", module.MANY_ORDERS[0])), sfx
        orders.append(tuple(ids))
    assert len(set(orders)) == len(module.MANY_ORDERS)
    assert module.MANY_ORDERS[0] in module.FRESH_SESSIONS
    assert not set(module.MANY_ORDERS[1:]) & set(module.FRESH_SESSIONS)  # the others measure its GEMMs again


def test_the_place_and_settled_time_claims_are_as_the_docs_say(validate_tiles):
    """docs/validation.md ("The order of the sweep", "One session against the settled time"): by event time every
    kind is wider first after another shape than later, with no shift of its median, and bf16 rr later still misses
    the p90 target; against the time settled over six orders the tile model meets the whole target for every kind
    and timing, one session's own scatter is above it by kernel time, and one session scores the model worse than
    the settled time does."""
    module = validate_tiles
    target_md, target_p90 = module.TARGET
    ev = module.score_places()["event"]
    for k in module.KINDS:
        assert ev[k]["first"]["p90"] > ev[k]["later"]["p90"], k
        assert abs(ev[k]["first"]["bias"]) < 1.0, k
        assert ev[k]["first"]["n"] + ev[k]["later"]["n"] == 3 * 945, k
    assert ev[module.KINDS[0]]["later"]["p90"] > target_p90
    mo = module.score_many_orders()
    assert mo["sessions"] == 6
    for timing in ("kernel", "event"):
        for k in module.KINDS:
            row = mo[timing][k]["all"]
            assert row["settled"]["n"] == 945 and row["floor"]["n"] == row["tiles"]["n"] == 6 * 945
            assert row["settled"]["mdape"] <= target_md and row["settled"]["p90"] <= target_p90, (timing, k)
            assert row["tiles"]["p90"] > row["settled"]["p90"], (timing, k)
            if timing == "kernel":
                assert row["floor"]["p90"] > target_p90, k
    rr = mo["event"][module.KINDS[0]]["all"]
    assert rr["settled"]["p90"] < rr["floor"]["p90"] < rr["tiles"]["p90"]
    for k in module.KINDS[:3]:  # the fallback kernels' settled error is above the Hopper kernels'
        by = mo["event"][k]["by_kernel"]
        assert by["nvjet sm90"]["settled"]["p90"] < max(by[c]["settled"]["p90"] for c in module.KERNEL_CLASSES[1:])


def test_default_do_bench_sessions_are_what_they_say(validate_tiles):
    """Each do_bench-defaults session timed its seed's own GEMMs (a subset, in the same order) with warmup 25 ms and
    rep 100 ms right after that seed's session with the sweep's settings, on the same GPU, and kept each GEMM's mean
    beside its median; they are no session of the score."""
    import gzip
    import json

    module = validate_tiles
    for dfl, std in module.DEFAULTS.items():
        path = module.sweep_path("time", dfl, module.DATA)
        meta = json.loads(gzip.decompress(path.read_bytes()))["meta"]["sections"]["gemm_layouts_time"]
        assert (meta["warmup_ms"], meta["rep_ms"]) == (25.0, 100.0), dfl
        assert meta["seed"] == meta["order_seed"] == module.SESSIONS[std][1], dfl
        ids = [r["id"] for r in module.records("event", dfl)]
        own = [r["id"] for r in module.records("event", std)]
        assert 0.3 * len(own) < len(ids) < len(own) and ids == own[: len(ids)], dfl  # a budget cut of the same order
        rs = module.records("event", dfl)
        assert all(r["time_s_mean"] > 0 and r["reps"] >= 1 for r in rs), dfl
        # ~100 ms of runs: about a thousand for most GEMMs, a few for those of 10 ms and more
        assert sorted(r["reps"] for r in rs)[len(rs) // 2] >= 100, dfl
        assert all(r["time_s_p20"] <= r["time_s"] <= r["time_s_p80"] for r in rs), dfl
        assert module.FRESH_GPUS[std] in (module.DATA / f"log_gemm_layouts{dfl}.txt").read_text(), dfl
        assert dfl not in module.FRESH_SESSIONS and std in module.FRESH_SESSIONS


def test_the_default_do_bench_claims_are_as_the_docs_say(validate_tiles):
    """docs/validation.md ("The held-out score"): against do_bench(fn) at its defaults (the runs' mean) the tile
    model meets the whole event-time target for every kind; by the median of the same runs bf16 rr does not, nor
    with the sweep's settings on the same GEMMs; the two settings' medians agree within 1 % over all."""
    module = validate_tiles
    target_md, target_p90 = module.TARGET
    df = module.score_defaults()
    n = sum(len(module.records("event", d)) for d in module.DEFAULTS)
    assert df["kinds"]["all"]["mean"]["n"] == n == 7095
    for k in module.KINDS:
        mean = df["kinds"][k]["mean"]
        assert mean["mdape"] <= target_md and mean["p90"] <= target_p90, k
    rr = df["kinds"][module.KINDS[0]]
    assert rr["median"]["p90"] > target_p90 and rr["sweep"]["p90"] > target_p90
    # held out by shape (the GEMMs of shapes no fit session measured) bf16 rr misses the p90 target against the mean
    assert 0 < rr["mean_unseen"]["n"] < rr["mean"]["n"] and rr["mean_unseen"]["p90"] > target_p90
    assert abs(df["kinds"]["all"]["ratio"][1] - 1) < 0.01
    doc = " ".join(validation_docs().split())
    assert f"bf16 `rr` {rr['mean']['mdape']:.1f} % / {rr['mean']['p90']:.1f} %" in doc
    assert f"by the median of the same runs bf16 `rr` is at {rr['median']['p90']:.1f} %" in doc
