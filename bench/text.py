"""Formatting of bench results (plain text for the terminal, Markdown for the report)."""

from __future__ import annotations

from bench import riscv

_ABBR = {"distribution": "D", "cache_parallel": "Cp", "cache_reduction": "Cr",
         "vector_common_parallel": "Vp", "vector_reduction": "Vr", "vector_inner_parallel": "Vi"}


def fmt_config(cfg: dict | None) -> str:
    if not cfg:
        return "-"
    return " ".join(f"{_ABBR.get(k, k)}{v}".replace(" ", "") for k, v in cfg.items())


def t(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1e-1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def f(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def spread(s: dict) -> str:
    return f"±{s['iqr_rel'] * 100:.0f}%"


def short_op(r: dict) -> str:
    op = (r.get("root_op") or "?").replace("linalg.", "")
    return op


def e2e_lines(res: dict) -> list[str]:
    e = res.get("end_to_end")
    if not e:
        return []
    out = [f"End to end ({res['model']}, host; median of {e['reps']} interleaved runs after {e['warmup']} warm-up; "
           f"spread = IQR/median, [min..max]):"]
    names = {"tuned": f"tuned (//models:{res['model']}_host)", "default": f"IREE default (//models:{res['model']}_host_iree_default)",
             "framework": e["variants"]["framework"].get("description", "framework"),
             "framework_avx2": e["variants"].get("framework_avx2", {}).get("description", "") +
             " (ATEN_CPU_CAPABILITY=avx2)"}
    for v in ("tuned", "default", "framework", "framework_avx2"):
        if v not in e["variants"]:
            continue
        s = e["variants"][v]
        err = s.get("max_abs_err_vs_golden")
        out.append(f"  {names[v]:<52} {t(s['median']):>10} {spread(s):>6}  [{t(s['min'])} .. {t(s['max'])}]"
                   f"  max|err| vs golden {f(err, '.2g')}")
    out.append(f"  tuned/default   = {e['tuned_over_default']:.3f}   (< 1: tuned faster; noise band "
               f"±{e.get('tuned_over_default_noise', 0):.1%})")
    out.append(f"  tuned/framework = {e['tuned_over_framework']:.3f}")
    if "tuned_over_framework_avx2" in e:
        out.append(f"  tuned/torch-avx2 = {e['tuned_over_framework_avx2']:.3f}")
    return out


def zoo_table(results: list[dict]) -> str:
    """One line per model, calibration and held-out apart, with each set's geomean."""
    from common import stats

    lines = []
    for split in ("calibration", "held_out"):
        sel = [r for r in results if r.get("split") == split and r.get("end_to_end")]
        if not sel:
            continue
        lines.append(f"{split} models (host end to end, median of interleaved runs):")
        lines.append(f"  {'model':<22} {'tuned':>10} {'default':>10} {'tuned/def':>9} {'noise':>6} "
                     f"{'torch':>10} {'torch-avx2':>10}  riscv p670 tuned/def")
        for r in sel:
            e = r["end_to_end"]
            v = e["variants"]
            ratio = next((c["tuned_over_default"] for c in (r.get("riscv") or {}).get("cores", [])
                          if c.get("core") == "sifive-p670"), None)
            lines.append(f"  {r['model']:<22} {t(v['tuned']['median']):>10} {t(v['default']['median']):>10} "
                         f"{e['tuned_over_default']:>9.3f} {e.get('tuned_over_default_noise', 0):>6.1%} "
                         f"{t(v['framework']['median']):>10} "
                         f"{t(v['framework_avx2']['median']) if 'framework_avx2' in v else '-':>10}  "
                         f"{f(ratio, '.3f')}")
        g = stats.geomean([r["end_to_end"]["tuned_over_default"] for r in sel])
        lines.append(f"  geomean tuned/default ({split}): {g:.3f}")
    return "\n".join(lines)


def dispatch_table_rows(res: dict) -> tuple[list[str], list[list[str]]]:
    head = ["#", "dispatch", "op", "shape", "calls", "tuned", "±", "default", "±", "def/tuned",
            "predicted", "meas/pred", "MAC/cyc t|d", "prov", "tuned config", "IREE default config"]
    rows = []
    for i, r in enumerate(res.get("dispatches", [])):
        mpc = (f"{r['tuned_macs_per_cycle']:.1f}|{r['default_macs_per_cycle']:.1f}" if "tuned_macs_per_cycle" in r else "-")
        rows.append([
            str(i), r["executable"] or r["name"], short_op(r), r["shape"], str(r["calls"]),
            t(r["tuned"]["median"]), spread(r["tuned"]), t(r["default"]["median"]), spread(r["default"]),
            f"{r['speedup']:.2f}", t(r["predicted_s"]), f(r["measured_over_predicted"], ".1f"), mpc,
            r["provenance"] + ("" if r["config_verified"] in (True, None) else " (!cfg)"),
            fmt_config(r["tuned_config"]), fmt_config(r["default_config"]),
        ])
    return head, rows


def text_table(head, rows) -> list[str]:
    w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w[i]) for i, c in enumerate(cells)).rstrip()
    return [line(head), line(["-" * x for x in w])] + [line(r) for r in rows]


def md_table(head, rows) -> list[str]:
    esc = lambda c: c.replace("|", "\\|")
    return ["| " + " | ".join(esc(h) for h in head) + " |", "|" + "|".join("---" for _ in head) + "|"] + \
        ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]


def summary_lines(res: dict) -> list[str]:
    s = res.get("summary")
    if not s:
        return []
    hw = res["hardware"]
    sz, sa = s["spearman_zigzag"], s["spearman_all_costed"]
    out = [
        f"Spearman rank correlation predicted vs measured (tuned): ZigZag-costed {f(sz['spearman'], '.3f')} (n={sz['n']}), "
        f"all costed {f(sa['spearman'], '.3f')} (n={sa['n']})   [target >= 0.8]",
        f"Geomean speedup default/tuned over dispatches (> 1: tuned faster): all {f(s['geomean_speedup_all'], '.3f')} "
        f"(tuned faster on {s['tuned_faster']}/{s['dispatches']}), conv/matmul {f(s['geomean_speedup_contractions'], '.3f')} "
        f"(tuned faster on {s['tuned_faster_contractions']}/{s['contractions']}), ZigZag-tiled {f(s['geomean_speedup_zigzag'], '.3f')}",
        f"Measured/predicted latency (geomean, predicted cycles at {hw['clock_ghz']} GHz): ZigZag {f(s['geomean_measured_over_predicted_zigzag'], '.2f')}x, "
        f"all costed {f(s['geomean_measured_over_predicted_all'], '.2f')}x",
        f"Sum over dispatch sites (median x calls): tuned {t(s['sum_dispatch_tuned_s'])}, default {t(s['sum_dispatch_default_s'])}, "
        f"predicted {t(s['sum_predicted_s'])}",
        f"Configs: {s['configs_applied']} applied, {s['configs_verified']} verified in the rebuilt dispatch benchmarks",
        "Per kind (time = sum of median x calls):",
    ]
    for k, v in sorted(s["by_kind"].items(), key=lambda kv: -kv[1]["tuned_s"]):
        out.append(f"  {k:<16} n={v['n']:<3} tuned {t(v['tuned_s']):>9}  default {t(v['default_s']):>9}  "
                   f"geomean def/tuned {f(v['geomean_speedup'], '.2f')}  meas/pred {f(v['geomean_measured_over_predicted'], '.1f')}x")
    return out


def text_report(res: dict) -> str:
    out = e2e_lines(res)
    if res.get("dispatches"):
        st = res["settings"]
        out += ["", f"Per dispatch (iree-benchmark-module on {st['dispatch_device']}, batch {st['dispatch_batch']}, "
                    f"median of {st['dispatch_rounds']} interleaved rounds; time per dispatch; calls = dispatch sites in the model; "
                    f"config levels D=distribution Cp/Cr=cache parallel/reduction Vp/Vr=vector parallel/reduction):"]
        out += text_table(*dispatch_table_rows(res))
        out += [""] + summary_lines(res)
    if res.get("riscv"):
        for core in res["riscv"]["cores"]:
            out += ["", f"RISC-V {riscv.heading(core)}:"]
            out += text_table(*riscv.table(core))
        out += [""] + riscv.summary_lines(res["riscv"])
    env = res["environment"]
    out += ["", f"Machine: {env.get('cpu_model')} ({env.get('cpus')} cpus), load average before {env['loadavg_before'][0]:.2f}, "
                f"after {env['loadavg_after'][0]:.2f}; wall {env['wall_s']:.0f} s"]
    return "\n".join(out)
