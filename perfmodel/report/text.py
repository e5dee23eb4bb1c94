"""The text of :class:`perfmodel.report.Report` (``str(report)``): the per-Linear table, the step totals,
the recommendation with the torchao code that applies it, and the whole-layer step section."""

from __future__ import annotations

from typing import Any

from ..float8.torchao_code import TORCHAO_VERSION, torchao_missing_reason

__all__ = ["format_report", "provenance_heading"]


def provenance_heading(prov: Any) -> str:
    """The words every answer's header carries about where it comes from: :meth:`Provenance.heading
    <perfmodel.models.base.Provenance.heading>` of ``prov``, e.g. ``"estimated answer, calibrated model"``."""
    return prov.heading()


def _names(names: tuple[str, ...], width: int) -> str:
    text = ", ".join(names)
    return text if len(text) <= width else text[: width - 1] + "…"


def format_report(rep: Any) -> str:
    """The aligned table of ``str(report)``: µs per Linear, ms per step; then the recommendation."""
    lines = [
        f"float8 training of the Linear layers of {rep.title} on {rep.gpu}: {rep.tokens} tokens per step, "
        f"{provenance_heading(rep.provenance) if rep.provenance is not None else rep.time_model + ' model'}, "
        f"enable from {rep.min_speedup:g}x",
        "Per Linear: fwd+bwd time in µs (speedup over bf16). Per step: saved = (bf16 - chosen) x count, ms.",
        "",
    ]
    table, name_w = _table_lines(rep)
    lines += table
    bar = rep.speedup_error_bar
    if any(row.close_call for row in rep.rows) and bar is not None:
        lines.append(
            f"~ close call: the measured spread of this model's speedups ({bar.short()}, p10-p90) "
            f"straddles {rep.min_speedup:g}x; measure these Linears before relying on the decision."
        )
    if any(row.float8_padded_to is not None for row in rep.rows):
        lines.append(
            "padded to: K, N of that row are not multiples of 16, so float8 cannot run it; its float8 prices are of "
            "the padded shape (a change to the model), its bf16 price of the shape as it is."
        )
    lines += _padding_lines(rep, name_w)
    lines += _policy_lines(rep)
    lines += ["", *_recommendation_lines(rep)]
    if rep.step is not None or rep.step_note:
        lines += ["", *_step_lines(rep)]
    from ..float8.published import known_wrong_lines

    lines += known_wrong_lines(rep.gpu, rep.recipes)
    if rep.alignment_note:
        lines.append(rep.alignment_note)
    if rep.provenance is not None:
        lines.append(f"provenance: {rep.provenance.line()}")
    if rep.recipes:
        lines.append(f"error bar: {bar}" if bar is not None else "error bar: not measured for this class of model")
    return "\n".join(lines)


def _table_lines(rep: Any) -> tuple[list[str], int]:
    """The per-Linear table (header, rule, one line per shape) and the width of its name column."""
    cells = [
        [f"{row.times_s[r] * 1e6:.1f} ({row.speedups[r]:.2f}x{_padded_mark(row)})" for r in rep.recipes]
        for row in rep.rows
    ]
    name_w = min(34, max(len("linear"), *(len(", ".join(r.names)) for r in rep.rows)))
    dim_w = max(6, *(len(str(v)) for r in rep.rows for v in (r.K, r.N, r.M)))
    count_w = max(5, *(len(str(r.count)) for r in rep.rows))
    bf16_w = max(9, *(len(f"{r.bf16_s * 1e6:.1f}") for r in rep.rows))
    rec_w = {r: max(len(r), 17, *(len(c[i]) for c in cells)) for i, r in enumerate(rep.recipes)}
    head = (
        f"{'linear':<{name_w}} {'K':>{dim_w}} {'N':>{dim_w}} {'M':>{dim_w}} {'count':>{count_w}} {'bf16':>{bf16_w}} "
        + "".join(f"{r:>{rec_w[r]}} " for r in rep.recipes)
        + f" {'decision':<18} {'saved ms':>9}"
    )
    lines = [head, "-" * len(head)]
    for row, row_cells in zip(rep.rows, cells, strict=True):
        decision = _decision_cell(rep, row)
        lines.append(
            f"{_names(row.names, name_w):<{name_w}} {row.K:>{dim_w}} {row.N:>{dim_w}} {row.M:>{dim_w}} "
            f"{row.count:>{count_w}} {row.bf16_s * 1e6:>{bf16_w}.1f} "
            + "".join(f"{c:>{rec_w[r]}} " for r, c in zip(rep.recipes, row_cells, strict=True))
            + f" {decision:<18} {row.saved_s * 1e3:>9.2f}"
        )
    return lines, name_w


def _decision_cell(rep: Any, row: Any) -> str:
    """A row's decision column: the recipe, or ``bf16`` with why in short, ``" ~"`` on a close call."""
    if not row.reason:
        decision = row.decision
    elif not rep.recipes:
        decision = "bf16 (no float8)"
    elif not row.eligible:
        decision = "bf16 (not /16)"
    else:
        decision = "bf16 (slower)" if max(row.speedups.values()) < 1 else f"bf16 (<{rep.min_speedup:g}x)"
    if row.close_call:
        decision += " ~"
    return decision


def _policy_lines(rep: Any) -> list[str]:
    """The step time of the Linears under each policy (bf16, the decisions, each recipe everywhere or where it
    pays), ms, with its speedup and saving."""
    tot = rep.totals
    n_linears = sum(r.count for r in rep.rows)
    policies = [("bf16 everywhere", tot.bf16_s), ("best recipe per shape (the decisions)", tot.best_s)]
    for r in rep.recipes:
        policies.append((f"{r} on every Linear it can run", tot.everywhere_s[r]))
        policies.append((f"{r} only where it pays", tot.filtered_s[r]))
    label_w = max(len(label) for label, _ in policies)
    what = "this Linear" if n_linears == 1 else f"these {n_linears} Linears"
    lines = [
        "",
        f"Step time of {what} (fwd+bwd):",
        f"  {'policy':<{label_w}} {'ms':>10} {'speedup':>8} {'saved ms':>10}",
    ]
    for label, seconds in policies:
        lines.append(
            f"  {label:<{label_w}} {seconds * 1e3:>10.2f} {tot.bf16_s / seconds:>7.2f}x "
            f"{(tot.bf16_s - seconds) * 1e3:>10.2f}"
        )
    return lines


def _padded_mark(row: Any) -> str:
    """``", padded to N=50272"`` in a float8 cell of a row float8 cannot run (:attr:`ReportRow.float8_padded_to`):
    the dimensions padding changes, as they would be; ``""`` elsewhere."""
    if row.float8_padded_to is None:
        return ""
    kp, np_ = row.float8_padded_to
    dims = [f"{d}={v}" for d, v, own in (("K", kp, row.K), ("N", np_, row.N)) if v != own]
    return f", padded to {', '.join(dims)}"


def _padding_lines(rep: Any, name_w: int) -> list[str]:
    """The shapes that padding their features to multiples of 16 would speed up (:attr:`ReportRow.padding`)."""
    pads = [row for row in rep.rows if row.padding is not None]
    if not pads:
        return []
    lines = [
        "",
        "Padding pays: K and N rounded up to multiples of 16 (float8 needs them; a feature size that is not a "
        "multiple of 8 also sends bf16 GEMMs to slower kernels, on Hopper cuBLAS's pre-Hopper ones: "
        "perfmodel.gemm_kernel). It changes the model (e.g. its vocabulary); per Linear, fwd+bwd, same model:",
    ]
    for row in pads:
        best, seconds = row.padding
        shape = f"{row.K}x{row.N}"
        name = "" if row.names == (shape,) else f"{_names(row.names, name_w)}: "
        times = [("bf16", row.padded_s["bf16"])] + ([(best, seconds)] if best != "bf16" else [])
        lines.append(
            f"  {name}{shape} -> {row.padded[0]}x{row.padded[1]}: "
            + ", ".join(f"{r} {t * 1e6:.1f} µs ({row.chosen_s / t:.2f}x)" for r, t in times)
            + f" against {row.decision}'s {row.chosen_s * 1e6:.1f} µs now"
        )
    return lines


def _recommendation_lines(rep: Any) -> list[str]:
    """The recommendation, and the torchao code that applies it (indented four spaces) or why there is none."""
    rec = rep.recommendation
    if rec == "bf16":
        return [f"Recommendation: keep bf16 — {rep.reason}."]
    marginal = " — marginal (< 5 %), measure before switching" if rep.speedup < 1.05 else ""
    lines = [
        f"Recommendation: {rec} where it pays, {rep.speedup:.2f}x on these Linears{marginal}; "
        f"keep bf16 for: {', '.join(rep._kept()) or 'none'}."
    ]
    code = rep.torchao_code()
    if code is None:
        lines.append(f"  no torchao code: {torchao_missing_reason(rec)}.")
        return lines
    if rep.step is not None and rep.step.chosen:  # the layer-group filter below is the one to paste
        call = _filter_call(code)
        lines.append(
            f"  Linear filter for this table (each nn.Linear priced by its own shape; for models the layer model does "
            f"not price): {call}"
        )
        return lines
    api, caveat = ("torchao", "") if rec != "mxfp8" else ("torchao's MX training prototype", ", whose names change")
    lines.append(f"Apply it with {api} (code for torchao {TORCHAO_VERSION}{caveat}; `model` is your nn.Module):")
    lines += [f"    {line}" if line else "" for line in code.splitlines()]
    if rep.gpu_modified or (rep.calibration_attached and rep.calibration_file is None):
        what = "GPUSpec you built" if rep.gpu_modified else "calibration attached to your GPUSpec"
        lines.append(f"  note: the table used the {what}: pass that GPUSpec as gpu=.")
    if rep.step is None:
        how = "not for this model (see below)" if rep.step_note else "for a dense preset, give --seq-len to see it"
        lines.append(
            "  (the other filter, perfmodel.step.module_filter, prices a dense preset's whole decoder layer and "
            f"converts groups of Linears: {how})"
        )
    moe = [row for row in rep.rows if row.M != rep.tokens]
    if moe:
        example = ", ".join(f"{row.names[0]!r}: {row.M}" for row in moe[:2])
        lines.append(
            f"  note: the filter prices every Linear at tokens={rep.tokens}; routed experts see fewer (column M): "
            f"give module_filter per-layer tokens with your model's module names, e.g. tokens={{{example}, "
            f"'*': {rep.tokens}}}, or exclude them."
        )
        lines.append(
            "  note: the routed-expert rows price each expert as its own nn.Linear at M rows (balanced routing), as a "
            "model whose experts are separate nn.Linear modules runs them, one after another; "
            "convert_to_float8_training converts only such modules. Experts held as one grouped GEMM (torchtitan's "
            "GroupedExperts, torch._grouped_mm) are not nn.Linear: they are priced as a grouped-GEMM block "
            "(perfmodel.moe; the CLI's 'Routed experts' section), and converted with torchao's quantize_ and its MoE "
            "training config."
        )
    return lines


def _filter_call(code: str) -> str:
    """The ``perfmodel.float8.module_filter(...)`` call of torchao code, on one line."""
    start = code.index("perfmodel.float8.module_filter(")
    depth, stop = 0, len(code)
    for i, ch in enumerate(code[start:], start):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ")" and depth == 0:
            stop = i + 1
            break
    call = " ".join(code[start:stop].split())
    return call.replace("( ", "(").replace(", )", ")").replace(",)", ")")


def _step_lines(rep: Any) -> list[str]:
    """The whole decoder layer: bf16, every eligible Linear in each recipe, and the groups that pay."""
    if rep.step is None:
        return [f"Whole decoder layer: not priced — {rep.step_note}."]
    st = rep.step
    lay = st.layer
    lines = [
        f"Whole decoder layer ({lay.name}: hidden {lay.hidden}, ffn {lay.ffn}, {lay.heads} heads / {lay.kv_heads} kv; "
        f"seq {rep.seq_len} x batch {rep.batch}; the step model, docs/step.md), ms per layer fwd+bwd:",
        f"  {'recipe':<20} {'bf16':>9} {'all Linears':>12} {'speedup':>8}  {'groups that pay':<16} {'ms':>9} "
        f"{'speedup':>8}",
    ]
    if rep.step_unpriced:
        lines.insert(1, f"  not in these times: {rep.step_unpriced} (the layer is under-estimated by it)")
    for recipe, r in rep.step_by_recipe.items():
        lines.append(
            f"  {recipe:<20} {float(r.bf16.step_s) * 1e3:>9.3f} {float(r.all_converted.step_s) * 1e3:>12.3f} "
            f"{r.speedup_all:>7.2f}x  {', '.join(r.chosen) or 'none (bf16)':<16} {float(r.best.step_s) * 1e3:>9.3f} "
            f"{r.speedup_best:>7.2f}x"
        )
    for recipe, r in rep.step_by_recipe.items():
        mix = [k for k in r.all_converted.kernels if k.kind == "mix_order_cast" and float(k.bytes) > 0]
        if mix:
            extra = sum(float(k.step_s) for k in mix) * 1e3
            lines.append(
                f"  note ({recipe}): q, k and v all in float8 at batch 1 make torch.compile (torch 2.10 and "
                "later) fuse their transposed cast into a slow"
            )
            lines.append(
                f"    persistent norm-backward kernel, +{extra:.2f} ms per layer (docs/step.md); for torch 2.9 or "
                "older use perfmodel.step.layer_time(..., mix_order_norm_bwd=False)"
            )
    if bool(st.bf16.host_bound_risk):
        lines.append(
            f"  note: {float(st.bf16.kernel_s) * 1e3:.1f} ms of GPU work per layer step; steps under 7 ms may wait for "
            "the host's launches (2.0-5.9 ms a step on our H200"
        )
        lines.append(
            "    machines' CPUs; float8 adds launches), which these times leave out: more tokens per step, or CUDA "
            "graphs (torch.compile(mode='reduce-overhead')), remove that (docs/step.md)"
        )
    parts = ", ".join(f"{k} {float(v) * 1e3:.2f}" for k, v in st.best.parts.items())
    lines.append(f"  breakdown of the best ({st.recipe}: {', '.join(st.chosen) or 'bf16'}), ms: {parts}")
    lines.append(
        f"  x {st.layers} layers: {float(st.bf16.step_s) * st.layers * 1e3:.1f} ms in bf16, "
        f"{float(st.best.step_s) * st.layers * 1e3:.1f} ms with float8 where it pays ({st.speedup_best:.2f}x); "
        "decoder layers only: embedding, output head, optimizer, communication and data loading are not in it."
    )
    ignored = [
        flag
        for flag, on in (
            ("--dynamic-shapes", rep.dynamic_shapes),
            ("--cache-weight-cast", rep.cache_weight_cast),
            ("--fuse-with-prev", rep.fuse_input_with_prev or rep.fuse_grad_output_with_prev),
        )
        if on
    ]
    if ignored:
        lines.append(
            f"  note: the layer model prices the casts torch.compile fuses as measured; {', '.join(ignored)} "
            "change(s) the Linear table above only"
        )
    if st.chosen:
        lines.append(
            "  Recommended filter (the layer-group filter: the whole layer priced, shared and fused casts included). "
            "Convert by groups of Linears that share an input:"
        )
        lines += [f"    {line}" for line in _step_filter_code(rep, st.recipe)]
        if st.recipe in ("tensorwise", "rowwise", "rowwise_with_gw_hp"):
            lines.append(
                f"  apply it with torchao {TORCHAO_VERSION} (`model` is your nn.Module): import perfmodel.step; "
                "from torchao.float8 import Float8LinearConfig, convert_to_float8_training;"
            )
            lines.append(
                f"  convert_to_float8_training(model, config=Float8LinearConfig.from_recipe_name({st.recipe!r}), "
                "module_filter_fn=module_filter_fn)"
            )
    return lines


def _step_filter_code(rep: Any, recipe: str) -> list[str]:
    """The ``perfmodel.step.module_filter(...)`` call that reproduces the layer table's choice: the same GPU (with
    the calibration read from ``--calibration``), time model and ``min_speedup`` (as ``min_gain``)."""
    pre: list[str] = []
    gpu = repr(rep.gpu)
    if rep.calibration_file is not None:
        pre = [
            "# gpu: the GPU with your calibration attached, as the table used it:",
            f"gpu = dataclasses.replace(perfmodel.get_gpu({rep.gpu!r}), "
            f"calibration=perfmodel.calibrate.load_calibration({rep.calibration_file!r}))",
        ]
        gpu = "gpu"
    elif rep.gpu_modified or rep.calibration_attached:
        pre = ["# gpu=: pass the GPUSpec the table used (yours, modified or with a calibration attached)"]
    if rep.step_layer_arg is None:
        pre.insert(0, "# layer: the LayerShape you passed")
    layer = "layer" if rep.step_layer_arg is None else repr(rep.step_layer_arg)
    args = [layer, f"gpu={gpu}", f"seq_len={rep.seq_len}", f"batch={rep.batch}"]
    args.append(f"recipe={recipe!r}")
    if rep.min_speedup > 1:
        args.append(f"min_gain={round(rep.min_speedup - 1, 6)!r}")
    if rep.time_model_arg is not None:
        args.append(f"time_model={rep.time_model_arg!r}")
    return [*pre, f"module_filter_fn=perfmodel.step.module_filter({', '.join(args)})"]
