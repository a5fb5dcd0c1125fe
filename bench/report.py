#!/usr/bin/env python3
"""Results of bench/run.py -> JSON, markdown tables, PNG plots, and the terminal summary.

Re-render from a saved run (no GPU needed):

    python bench/report.py bench/results/<gpu-name>/results.json [--out DIR]

Speedup convention everywhere: "×2.0" under a peer means the peer took 2.0 times as long
as the case's first nvfp4 row (nvfp4 is 2x faster); "×0.5" means the peer is 2x faster.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections import OrderedDict

PLOT_FILES = {"time_over_sol": "time_over_sol.png", "speedup": "speedup.png", "sweeps": "sweeps.png"}
SWEEPS = [  # (suite, x key in dims, x label, y key, y label, ceiling key)
    ("gemm_m", "M", "M (N = K fixed)", "tflops", "TFLOP/s", "math"),
    ("gemv_m", "M", "M (K fixed, L = 1)", "gbps", "GB/s", "copy"),
    ("gemm_k", "K", "K (M, N fixed)", "tflops", "TFLOP/s", "math"),
    ("moe", "M_total", "tokens (ΣM over the experts)", "tflops", "TFLOP/s", "math"),
]


# ---------------------------------------------------------------------------------------
# Grouping
# ---------------------------------------------------------------------------------------

def cases(rows) -> "OrderedDict":
    """(suite, spec) -> rows of that case, in run order."""
    out = OrderedDict()
    for r in rows:
        out.setdefault((r.get("suite", ""), r["spec"]), []).append(r)
    return out


def primary(case_rows):
    """The row speedups are relative to: the case's first nvfp4 row."""
    for r in case_rows:
        if r.get("is_nvfp4"):
            return r
    return None


def speedup(row, prim):
    """peer µs / nvfp4 µs (> 1: nvfp4 faster), or None."""
    if not prim or not row.get("us") or not prim.get("us"):
        return None
    return row["us"] / prim["us"]


def groups(doc):
    """[(suite name, suite title, op, [case rows lists])] — one pivot table each."""
    titles = {s["name"]: s["title"] for s in doc.get("suites", [])}
    order = [s["name"] for s in doc.get("suites", [])]
    by = OrderedDict()
    for (suite, _spec), rs in cases(doc["rows"]).items():
        by.setdefault((suite, rs[0]["op"]), []).append(rs)
    keys = sorted(by, key=lambda k: order.index(k[0]) if k[0] in order else len(order))
    return [(s, titles.get(s, s), op, by[(s, op)]) for s, op in keys]


def other_impls(case_list):
    """Names of the non-primary impls of a group of cases, in first-seen order."""
    names = []
    for rs in case_list:
        prim = primary(rs)
        for r in rs:
            if r is not prim and r["impl"] not in names:
                names.append(r["impl"])
    return names


def geomean(values):
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def summary(doc):
    """[(suite, op, impl, geomean speedup of nvfp4 over it, cases)]."""
    out = []
    for suite, _title, op, cl in groups(doc):
        for name in other_impls(cl):
            sp = []
            for rs in cl:
                prim = primary(rs)
                for r in rs:
                    if r is not prim and r["impl"] == name:
                        sp.append(speedup(r, prim))
            g = geomean(sp)
            if g is not None:
                out.append((suite, op, name, g, len([s for s in sp if s])))
    return out


# ---------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------

def fmt(v, spec, dash="–"):
    return dash if v is None else format(v, spec)


def check_cell(r) -> str:
    if r.get("skipped"):
        return "skipped"
    if r.get("error"):
        return "error"
    rel = r.get("rel_err")
    rel_s = "–" if rel is None else f"{rel:.1e}"
    if r.get("ok") is None:
        return rel_s
    return ("ok " if r["ok"] else "**FAIL** ") + rel_s


def us_cell(r) -> str:
    if r.get("us") is None:
        return "–"
    eager = (r.get("timing") or {}).get("mode") == "eager"
    return f"{r['us']:.1f}" + ("*" if eager else "")


def peer_cell(r, prim) -> str:
    if r is None:
        return ""
    if r.get("skipped"):
        return "skipped"
    if r.get("error"):
        return "error"
    sp = speedup(r, prim)
    return f"{us_cell(r)} (×{sp:.2f})" if sp else us_cell(r)


def _md_escape(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def header_lines(doc) -> list:
    d, c = doc["device"], doc["ceilings"]
    cc = d.get("compute_capability", [0, 0])
    parts = [f"- device: **{d.get('name')}** (CC {cc[0]}.{cc[1]}"]
    if d.get("multiprocessors"):
        parts[0] += f", {d['multiprocessors']} SMs"
    if d.get("l2_bytes"):
        parts[0] += f", L2 {d['l2_bytes'] / 2**20:.0f} MiB"
    parts[0] += f"); nvfp4 {d.get('nvfp4')} (backend auto = {d.get('backend')}), torch {d.get('torch')}"
    if d.get("cuda_runtime_torch"):
        parts[0] += f" (CUDA {d['cuda_runtime_torch']})"
    t = doc.get("timing", {})
    return parts + [
        f"- run: {doc.get('created', '?')}, `{' '.join(doc.get('argv', []))}`, {doc.get('elapsed_s', 0):.0f} s",
        f"- ceilings: copy {c['copy_bytes_per_s'] / 1e12:.2f} TB/s, bf16 matmul {c['bf16_flops_per_s'] / 1e12:.0f} "
        f"TFLOP/s — {c['source']}",
        f"- SOL = max(bytes / copy bandwidth, flops / {c['math_flops_per_s'] / 1e12:.0f} TFLOP/s) "
        f"({c.get('math_note', '')}); bytes = each NVFP4 input read once + the fp16 output written once",
        f"- timing: median of up to {t.get('reps', '?')} batches; each batch "
        f"{'a CUDA graph' if t.get('graphs', True) else 'a run'} of back-to-back launches "
        f"(~{t.get('target_batch_us', 2000) / 1000:.0f} ms) rotating over ≥ {t.get('rotate_bytes', 0) / 2**20:.0f} MiB "
        "of input sets; warm-up first; `*` = timed eagerly (the op could not be captured in a graph)",
        "- (×N) after a peer's µs: the peer took N times as long as nvfp4 (N > 1: nvfp4 faster)",
    ]


def markdown(doc) -> str:
    lines = [f"# nvfp4 benchmarks — {doc['device'].get('name')}", ""] + header_lines(doc) + [""]
    summ = summary(doc)
    if summ:
        lines += ["## Summary: nvfp4 speedup over each peer (geometric mean over the cases)", "",
                  "| suite | op | peer | nvfp4 speedup | cases |", "|---|---|---|---:|---:|"]
        lines += [f"| {s} | {op} | {_md_escape(n)} | ×{g:.2f} | {k} |" for s, op, n, g, k in summ]
        lines.append("")
    bad = [r for r in doc["rows"] if r.get("is_nvfp4") and not r.get("skipped") and not r.get("ok")]
    if bad:
        lines += ["## Failed checks / errors", ""]
        lines += [f"- `{r['spec']}` {r['impl']} [{r.get('backend')}]: {_md_escape(r.get('error') or check_cell(r))}"
                  for r in bad]
        lines.append("")
    last_suite = None
    for suite, title, op, cl in groups(doc):
        if suite != last_suite:
            lines += [f"## {title}", ""]
            last_suite = suite
        others = other_impls(cl)
        lines += [f"### {op}", "",
                  "| shape | nvfp4 µs | TFLOP/s | GB/s | SOL µs | t/SOL | check | " + " | ".join(map(_md_escape, others)) + " |",
                  "|---|---:|---:|---:|---:|---:|---|" + "---:|" * len(others)]
        for rs in cl:
            prim = primary(rs) or {}
            by = {r["impl"]: r for r in rs if r is not prim}
            label = prim.get("shape") or rs[0]["shape"]
            cells = [peer_cell(by.get(n), prim) for n in others]
            lines.append(f"| {_md_escape(label)} | {us_cell(prim)} | {fmt(prim.get('tflops'), '.1f')} | "
                         f"{fmt(prim.get('gbps') if prim.get('us') else None, '.0f')} | {fmt(prim.get('sol_us'), '.1f')} | "
                         f"{fmt(prim.get('t_over_sol'), '.2f')} | {check_cell(prim) if prim else '–'} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## All rows", "",
              "| suite | op | shape | impl | backend | µs | min–max µs | spread | mode | TFLOP/s | GB/s | t/SOL | check | note |",
              "|---|---|---|---|---|---:|---:|---:|---|---:|---:|---:|---|---|"]
    for r in doc["rows"]:
        tm = r.get("timing") or {}
        rng = f"{tm['us_min']:.1f}–{tm['us_max']:.1f}" if tm else "–"
        spread = f"{100 * tm['spread']:.1f}%" if tm else "–"
        note = r.get("skipped") or r.get("error") or tm.get("note", "")
        lines.append(f"| {r.get('suite', '')} | {r['op']} | {_md_escape(r['shape'])} | {_md_escape(r['impl'])} | "
                     f"{r.get('backend') or '–'} | {us_cell(r)} | {rng} | {spread} | {tm.get('mode', '–')} | "
                     f"{fmt(r.get('tflops'), '.1f')} | {fmt(r.get('gbps') if r.get('us') else None, '.0f')} | "
                     f"{fmt(r.get('t_over_sol'), '.2f')} | {check_cell(r)} | {_md_escape(note)} |")
    lines.append("")
    return "\n".join(lines)


def terminal_summary(doc) -> str:
    """Short enough to be the last thing a remote run shows: one line per case."""
    out = []
    for suite, _title, op, cl in groups(doc):
        others = other_impls(cl)
        short = [n.replace("cuBLAS ", "").replace("torch.", "")[:16] for n in others]
        out.append(f"[{suite}] {op:<10} {'shape':<30} {'µs':>9} {'t/SOL':>6} {'check':<13} " +
                   " ".join(f"{s:>16}" for s in short))
        for rs in cl:
            prim = primary(rs) or {}
            by = {r["impl"]: r for r in rs if r is not prim}
            cells = []
            for n in others:
                r = by.get(n)
                sp = speedup(r, prim) if r else None
                cells.append(f"{'x' + format(sp, '.2f') if sp else ('skip' if r and r.get('skipped') else '-'):>16}")
            ck = check_cell(prim).replace("**", "") if prim else "-"
            out.append(f"{'':<{len(suite) + 3}}{'':<10} {(prim.get('shape') or rs[0]['shape'])[:30]:<30} "
                       f"{us_cell(prim):>9} {fmt(prim.get('t_over_sol'), '.2f', '-'):>6} {ck:<13} " + " ".join(cells))
    summ = summary(doc)
    if summ:
        out.append("nvfp4 speedup, geomean: " + "; ".join(f"{s}/{op} vs {n} x{g:.2f}" for s, op, n, g, _ in summ))
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------

def _short_label(r) -> str:
    """Two lines under a bar group: the op, then the dims (gemv MxKxL, gemm MxNxK,
    grouped G:ΣMxNxK, others MxK)."""
    d = r.get("dims", {})
    if r["op"] == "gemv":
        return f"gemv\n{d['M']}x{d['K']}\nx{d['L']}"
    if "M_g" in d:
        return f"{r['op']}\nG{d['G']}:{d['M_total']}\nx{d['N']}x{d['K']}"
    if "N" in d:
        return f"{r['op']}\n{d['M']}x{d['N']}\nx{d['K']}"
    return f"{r['op']}\n{d.get('M')}\nx{d.get('K')}"


def _impl_colors(plt, rows) -> dict:
    """One color per implementation name, the same in every plot."""
    names = []
    for r in rows:
        if r["impl"] not in names:
            names.append(r["impl"])
    palette = plt.get_cmap("tab20")
    return {n: palette((2 * i) % 20 + (i // 10) % 2) for i, n in enumerate(names)}


def _bar_panel(ax, case_list, values, colors, ylabel, title):
    """Grouped bars on a log axis: per case only the impls that have a value, centred
    on the case's tick; a line at 1."""
    from matplotlib.ticker import FuncFormatter

    most = max([len(v) for v in values] + [1])
    width = 0.8 / most
    seen = []
    for i, vals in enumerate(values):
        for j, (n, y) in enumerate(vals):
            # bars grow from 1 (up: slower than SOL / nvfp4 faster; down: the opposite)
            ax.bar(i + (j - (len(vals) - 1) / 2) * width, y - 1.0, width, bottom=1.0, color=colors[n],
                   label=None if n in seen else n)
            if n not in seen:
                seen.append(n)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.tick_params(axis="y", which="minor", labelsize=6)
    ax.set_xticks(range(len(case_list)))
    ax.set_xticklabels([_short_label(rs[0]) for rs in case_list], fontsize=7)
    ax.set_xlim(-0.6, len(case_list) - 0.4)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def make_plots(doc, outdir) -> dict:
    """Write the PNGs; {name: path}. Raises ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = {}
    name = doc["device"].get("name", "")
    colors = _impl_colors(plt, doc["rows"])
    titles = {s["name"]: s["title"] for s in doc.get("suites", [])}
    by_suite = OrderedDict()
    for (suite, _), rs in cases(doc["rows"]).items():
        if suite in ("shapes", "quant"):
            by_suite.setdefault(suite, []).append(rs)

    def bar_figure(kind, ylabel, title, values_of):
        panels = [(s, cl, values_of(cl)) for s, cl in by_suite.items()]
        panels = [pn for pn in panels if any(pn[2])]
        if not panels:
            return
        width = max(10, 0.8 * max(len(cl) for _, cl, _ in panels) + 2)
        fig, axes = plt.subplots(len(panels), 1, figsize=(width, 4.2 * len(panels)), squeeze=False)
        for ax, (suite, cl, vals) in zip(axes[:, 0], panels):
            _bar_panel(ax, cl, vals, colors, ylabel, titles.get(suite, suite))
        fig.suptitle(f"{title} — {name}")
        fig.tight_layout()
        path = os.path.join(outdir, PLOT_FILES[kind])
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written[f"plot: {title}"] = path

    bar_figure("time_over_sol", "time / SOL (1 = speed of light)", "time / SOL per shape",
               lambda cl: [[(r["impl"], r["t_over_sol"]) for r in rs if r.get("t_over_sol")] for rs in cl])

    def speedups(cl):
        out = []
        for rs in cl:
            prim = primary(rs)
            out.append([(r["impl"], speedup(r, prim)) for r in rs if r is not prim and speedup(r, prim)])
        return out

    bar_figure("speedup", "other's time / nvfp4's (> 1: nvfp4 faster)", "nvfp4 speedup over each peer", speedups)

    present = {r.get("suite") for r in doc["rows"]}
    if any(sw[0] in present for sw in SWEEPS):
        fig, axes = plt.subplots(2, 2, figsize=(12, 9))
        c = doc["ceilings"]
        for ax, (suite, xkey, xlabel, ykey, ylabel, ceil) in zip(axes.flat, SWEEPS):
            rs = [r for r in doc["rows"] if r.get("suite") == suite and r.get(ykey)]
            if not rs:
                ax.set_title(f"{suite}: not run")
                ax.axis("off")
                continue
            names = []
            for r in rs:
                if r["impl"] not in names:
                    names.append(r["impl"])
            for n in names:
                pts = sorted((r["dims"][xkey], r[ykey]) for r in rs if r["impl"] == n)
                ax.plot([q[0] for q in pts], [q[1] for q in pts], marker="o", ms=3, label=n, color=colors[n])
            ceiling = c["math_flops_per_s"] / 1e12 if ceil == "math" else c["copy_bytes_per_s"] / 1e9
            ax.axhline(ceiling, color="k", ls="--", lw=0.8, label="ceiling (SOL)")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(titles.get(suite, suite), fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(f"TFLOP/s and GB/s vs M, K, tokens — {name}")
        fig.tight_layout()
        path = os.path.join(outdir, PLOT_FILES["sweeps"])
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written["plot: TFLOP/s vs M (sweeps)"] = path
    return written


# ---------------------------------------------------------------------------------------
# Files
# ---------------------------------------------------------------------------------------

def write_all(doc, outdir, plots: bool = True) -> dict:
    """results.json (rows without per-batch samples), raw/samples.json (git-ignored;
    only when the rows carry samples), results.md, the plots. Returns {what: path}."""
    os.makedirs(outdir, exist_ok=True)
    samples = [{"suite": r.get("suite"), "spec": r["spec"], "impl": r["impl"], "backend": r.get("backend"),
                "samples_us": r.get("samples")} for r in doc["rows"] if r.get("samples")]
    slim = dict(doc)
    slim["rows"] = [{k: v for k, v in r.items() if k != "samples"} for r in doc["rows"]]
    written = {}
    path = os.path.join(outdir, "results.json")
    with open(path, "w") as f:
        json.dump(slim, f, indent=1, default=str)
    written["json"] = path
    if samples:
        os.makedirs(os.path.join(outdir, "raw"), exist_ok=True)
        path = os.path.join(outdir, "raw", "samples.json")
        with open(path, "w") as f:
            json.dump(samples, f, default=str)
        written["raw samples"] = path
    path = os.path.join(outdir, "results.md")
    with open(path, "w") as f:
        f.write(markdown(slim))
    written["markdown"] = path
    if plots:
        try:
            written.update(make_plots(slim, outdir))
        except ImportError:
            print("matplotlib is not installed: no plots (pip install matplotlib, then "
                  f"python bench/report.py {os.path.join(outdir, 'results.json')})")
    return written



def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python bench/report.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", help="a results.json written by bench/run.py")
    ap.add_argument("--out", default=None, help="output folder (default: the JSON's folder)")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    with open(args.results) as f:
        doc = json.load(f)
    outdir = args.out or os.path.dirname(os.path.abspath(args.results))
    written = write_all(doc, outdir, plots=not args.no_plots)
    print(terminal_summary(doc))
    for what, path in written.items():
        print(f"{what}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
