"""The two training filters cannot silently mislead (issue 35 item 5).

* the Linear filter (``float8.module_filter`` / ``linear_filter``): ``gpu="auto"`` is the current CUDA device or a
  named error, never a silent H100; the filter is an object with a repr and a record of what it decided;
* the layer-group filter (``step.module_filter`` / ``layer_filter``): applied to a model whose names it does not
  know, it warns, and ``check()`` raises.
"""

from __future__ import annotations

import sys
import types
import warnings

import pytest

import perfmodel.float8 as f8
from perfmodel import step
from perfmodel.errors import NoCurrentGPUError, PerfModelError, PerfModelWarning, UnknownGPUError, UnknownLinearError


class Lin:
    def __init__(self, k: int, n: int) -> None:
        self.in_features, self.out_features = k, n


def _fake_torch(name: str | None) -> types.ModuleType:
    """A stand-in ``torch`` whose ``cuda`` reports ``name`` as the current device (``None``: no CUDA device)."""
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: name is not None, get_device_name=lambda *a: name)
    return torch


# ------------------------------------------------------------------------------------------------
# gpu="auto"
# ------------------------------------------------------------------------------------------------
def test_gpu_left_out_is_auto_and_without_cuda_a_named_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(None))
    with pytest.raises(NoCurrentGPUError, match=r'pass the GPU the job will run on, e\.g\. gpu="H100"'):
        f8.module_filter()
    with pytest.raises(NoCurrentGPUError, match="torch sees none"):
        f8.module_filter(gpu="auto", tokens=4096)
    assert issubclass(NoCurrentGPUError, UnknownGPUError)


def test_gpu_auto_without_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(NoCurrentGPUError, match=r'pip install "\.\[torch\]" from a perfmodel checkout'):
        f8.module_filter()


def test_gpu_auto_reads_the_current_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch("NVIDIA H100 80GB HBM3"))
    auto = f8.module_filter(tokens=8192)
    h100 = f8.module_filter("H100", 8192)
    assert auto.gpu.name == h100.gpu.name == "H100-SXM"
    for k, n in ((4096, 1024), (4096, 4096), (4096, 14336), (8192, 128256)):
        assert auto(Lin(k, n), "x") is h100(Lin(k, n), "x") is bool(f8.should_use(8192, k, n, "tensorwise", "H100"))
    monkeypatch.setitem(sys.modules, "torch", _fake_torch("NVIDIA B200"))
    b200 = f8.module_filter(tokens=8192)
    assert b200.gpu.name == "B200"
    monkeypatch.setitem(sys.modules, "torch", _fake_torch("NVIDIA GeForce GTX 1080"))
    with pytest.raises(UnknownGPUError, match="current CUDA device is 'NVIDIA GeForce GTX 1080'"):
        f8.module_filter()


def test_gpu_none_is_a_named_error():
    with pytest.raises(UnknownGPUError, match='gpu="auto"'):
        f8.module_filter(gpu=None)


# ------------------------------------------------------------------------------------------------
# the filter object
# ------------------------------------------------------------------------------------------------
def test_filter_object_records_every_decision():
    filt = f8.linear_filter("H100", 8192, "tensorwise", min_speedup=1.1, exclude="lm_head")
    assert isinstance(filt, f8.Float8ModuleFilter) and f8.linear_filter is f8.module_filter
    calls = [
        (Lin(4096, 14336), "layers.0.mlp.up_proj"),
        (Lin(4096, 1024), "layers.0.self_attn.k_proj"),
        (Lin(4096, 4100), "layers.0.odd"),
        (Lin(4096, 128256), "lm_head"),
        (object(), "layers.0.input_layernorm"),
    ]
    answers = [filt(m, fqn) for m, fqn in calls]
    s_up = float(f8.speedup(8192, 4096, 14336, "tensorwise", "H100"))
    s_k = float(f8.speedup(8192, 4096, 1024, "tensorwise", "H100"))
    assert answers == [s_up >= 1.1, s_k >= 1.1, False, False, False]
    d = {r.fqn: r for r in filt.decisions}
    assert [r.fqn for r in filt.decisions] == [fqn for _, fqn in calls]
    assert d["layers.0.mlp.up_proj"].speedup == pytest.approx(s_up, rel=1e-9)
    assert (d["layers.0.mlp.up_proj"].in_features, d["layers.0.mlp.up_proj"].out_features) == (4096, 14336)
    assert d["layers.0.self_attn.k_proj"].reason in ("slower than bf16", "below min_speedup 1.1")
    assert d["layers.0.odd"].reason.startswith("ineligible shape") and d["layers.0.odd"].speedup is None
    assert d["lm_head"].reason == "excluded (lm_head)"
    assert d["layers.0.input_layernorm"].reason == "not a Linear" and d["layers.0.input_layernorm"].in_features is None
    assert filt.fqns() == ["layers.0.mlp.up_proj"]
    assert filt.skip_fqns() == ["layers.0.self_attn.k_proj", "layers.0.odd", "lm_head"]  # Linears only
    text = filt.table()
    assert "layers.0.mlp.up_proj" in text and f"{s_up:.3f}x" in text and "input_layernorm" not in text
    assert "input_layernorm" in filt.table(linears_only=False)
    r = repr(filt)
    for part in ("gpu='H100-SXM'", "recipe='tensorwise'", "tokens=8192", "min_speedup=1.1", "tp=1", "4 Linears seen"):
        assert part in r
    assert d["lm_head"].to_dict()["reason"] == "excluded (lm_head)"
    # the same fqn asked again replaces its record
    filt(Lin(4096, 14336), "layers.0.mlp.up_proj")
    assert len(filt.decisions) == len(calls)


def test_no_tokens_entry_is_a_recorded_reason():
    filt = f8.module_filter("H100", {"mlp": 8192})
    assert filt(Lin(4096, 4096), "layers.0.attn.q") is False
    assert filt.decisions[-1].reason.startswith("no tokens entry") and "per-layer" in repr(filt)


def test_skip_fqns_warns_when_torchtitan_substring_matching_would_skip_a_converted_one():
    filt = f8.module_filter("H100", 8192, exclude="output")
    filt(Lin(4096, 4096), "output")
    filt(Lin(4096, 14336), "layers.0.output_proj")  # converted, but "output" is a substring of it
    with pytest.warns(PerfModelWarning, match="substring"):
        assert filt.skip_fqns() == ["output"]


def test_real_torch_linear_modules():
    torch = pytest.importorskip("torch")
    filt = f8.module_filter("H200", 8192)
    assert filt(torch.nn.Linear(4096, 14336, device="meta"), "mlp.up") is bool(
        f8.should_use(8192, 4096, 14336, "tensorwise", "H200")
    )
    assert filt(torch.nn.LayerNorm(4096, device="meta"), "norm") is False
    assert filt.decisions[-1].reason == "not a Linear"


def test_time_model_keyword_and_its_old_name():
    a = f8.module_filter("H100", 8192, time_model="roofline")
    b = f8.module_filter("H100", 8192, model="roofline")
    a(Lin(4096, 4096), "x")
    b(Lin(4096, 4096), "x")
    assert a.decisions[0].speedup == pytest.approx(
        float(f8.speedup(8192, 4096, 4096, gpu="H100", time_model="roofline"))
    )
    assert a.decisions[0].speedup == pytest.approx(b.decisions[0].speedup, rel=1e-12)
    with pytest.raises(PerfModelError, match="once"):
        f8.module_filter("H100", time_model="roofline", model="roofline")


# ------------------------------------------------------------------------------------------------
# the layer-group filter
# ------------------------------------------------------------------------------------------------
NEOX = {
    "attention.query_key_value": (4096, 12288),
    "attention.dense": (4096, 4096),
    "mlp.dense_h_to_4h": (4096, 16384),
    "mlp.dense_4h_to_h": (16384, 4096),
}


def test_layer_filter_on_a_model_it_does_not_know_warns_then_check_raises():
    filt = step.layer_filter("llama3-8b", gpu="H200", seq_len=4096)
    assert step.layer_filter is step.module_filter and isinstance(filt, step.LayerGroupFilter)
    seen = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(4):
            for name, (k, n) in NEOX.items():
                assert filt(Lin(k, n), f"gpt_neox.layers.{i}.{name}") is False
                seen += 1
                got = [w for w in caught if issubclass(w.category, PerfModelWarning)]
                assert len(got) == (1 if seen >= step.UNMATCHED_WARN_AFTER else 0)  # once, at the N-th
    assert "matched none" in str(got[0].message) and "perfmodel.float8.module_filter" in str(got[0].message)
    assert (filt.matched, filt.unmatched) == (0, 16)
    with pytest.raises(UnknownLinearError, match="matched no Linear"):
        filt.check()
    with pytest.raises(UnknownLinearError, match="never asked"):
        step.layer_filter("llama3-8b", gpu="H200", seq_len=4096).check()


def test_layer_filter_on_its_own_model_is_quiet_and_check_counts():
    filt = step.module_filter("llama3-8b", gpu="H200", seq_len=4096, recipe="tensorwise")
    shapes = {lin.name: (lin.in_features, lin.out_features) for lin in filt._layer.linears()}
    names = step.CONVENTIONS["torchtitan"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PerfModelWarning)
        for i in range(32):
            for canon, path in names.items():
                filt(Lin(*shapes[canon]), f"layers.{i}.{path}")
        for j in range(20):  # many unmatched Linears after matches: no warning
            filt(Lin(4096, 4096), f"vision.{j}.proj")
    summary = filt.check()
    assert summary["matched"] == 32 * 7 and summary["unmatched"] == 20
    assert (
        summary["converted"]
        == len(filt.fqns())
        == 32 * sum(any(c in filt._layer.groups[g] for g in filt.groups) for c in names)
    )


def test_layer_filter_with_a_fixed_choice_needs_no_gpu():
    filt = step.module_filter("llama3-70b", convert=["wo", "w13"])
    for canon, (k, n) in {"wq": (8192, 8192), "wo": (8192, 8192), "w1": (8192, 28672), "w2": (28672, 8192)}.items():
        assert filt(Lin(k, n), f"layers.0.{step.CONVENTIONS['torchtitan'][canon]}") is (canon in ("wo", "w1"))
    with pytest.raises(PerfModelError, match="needs gpu and seq_len"):
        step.module_filter("llama3-8b")
    with pytest.raises(PerfModelError, match="needs seq_len"):
        step.module_filter("llama3-8b", gpu="H200")
    assert step.torchtitan_filter_fqns("llama3-8b", ["w13", "w2"]) == [
        "attention.wq",
        "attention.wk",
        "attention.wv",
        "attention.wo",
        "output",
    ]


def test_layer_filter_gpu_auto(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(None))
    with pytest.raises(NoCurrentGPUError):
        step.module_filter("llama3-8b", gpu="auto", seq_len=4096)
    monkeypatch.setitem(sys.modules, "torch", _fake_torch("NVIDIA H200"))
    auto = step.module_filter("llama3-8b", gpu="auto", seq_len=4096)
    assert auto.decisions == step.module_filter("llama3-8b", gpu="H200", seq_len=4096).decisions


# ------------------------------------------------------------------------------------------------
# the CLI says which filter to use
# ------------------------------------------------------------------------------------------------
def test_cli_float8_prints_one_recommended_filter(capsys):
    from perfmodel.cli import main

    assert main(["float8", "--gpu", "h100", "--model", "llama3-8b", "--seq-len", "8192"]) == 0
    out = capsys.readouterr().out
    assert out.count("module_filter_fn=perfmodel.") == 1  # one filter to paste: the layer-group one
    assert "Recommended filter (the layer-group filter" in out
    assert "module_filter_fn=perfmodel.step.module_filter('llama3-8b'" in out
    line = next(x for x in out.splitlines() if "Linear filter for this table" in x)
    assert 'perfmodel.float8.module_filter(gpu="H100-SXM", tokens=8192, recipe="tensorwise")' in line
    assert main(["float8", "--gpu", "h100", "--model", "llama3-8b"]) == 0  # no layer model: the Linear filter
    out = capsys.readouterr().out
    assert out.count("module_filter_fn=perfmodel.") == 1 and "module_filter_fn=perfmodel.float8.module_filter(" in out
    assert "the other filter, perfmodel.step.module_filter" in out and "--seq-len" in out
