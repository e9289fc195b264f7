"""Turn raw records into the published form: medians, ratios, Markdown tables, PNG charts.

Owns aggregation (median over rounds; a case that failed in any round is reported failed, since
a fast wrong answer is a failure, not a win), ratios to sluicegate, the report.md layout (one
table per scenario case, then machine, versions, install outcomes, the exact command) and the
charts (matplotlib, one PNG per scenario, sluicegate's bar highlighted, anchors grey; plus a
headline chart), and has bench/standing.py write standing.md (the table BENCHMARKS.md shows).
Works from results.json alone: `python3 benchmarks/run.py report RESULTS_DIR` rebuilds all three.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

OURS = "sluicegate"
COLORS = {"ours": "#e8590c", "peer": "#4263eb", "anchor": "#adb5bd"}
# The case of each scenario that the headline chart shows (the first prefix with a peer measured).
HEADLINE = {
    "S1": ("64MiB [bytes]",),
    # the static feature where peers have one in the run; else the app returning bytes (the
    # file_wrapper case mostly shows the peers' Nagle stalls, see BENCHMARKS.md)
    "S2": ("21 KiB, wrk -c100, static", "21 KiB, wrk -c100, app, [file", "21 KiB, wrk -c100, app, file_wrapper"),
    "S3": ("2.5 MB in 128 B",),
    "S4": ("ab -c1",),
    "S5": ("1,000 clients",),
    "S6": ("wrk -t1 -c64",),
    "S7": ("wrk -c16 beside",),
    "S8": ("64 MiB upload, chunked",),
    "S9": ("2 workers",),
    "S11": ("hello world",),
    "S13": ("c100, CONN_MAX_AGE=0, peers 8",),
    "S14": ("hello world, wrk",),
    "S15": ("S15b",),
    "S16": ("hello world, (a)",),
}


def sid_key(sid: str) -> tuple[int, str]:
    """S2 before S10: scenarios in their numeric order."""
    return (int(sid[1:]), sid) if sid[1:].isdigit() else (10**6, sid)


def aggregate(records: list[dict]) -> dict:
    """{scenario: {case: {server: summary}}} with medians over rounds."""
    grouped: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in records:
        grouped[r["scenario"]][r["case"]][r["server"]].append(r)
    out: dict = {}
    for sid, cases in grouped.items():
        out[sid] = {}
        for case, by_server in cases.items():
            out[sid][case] = {}
            for server, recs in by_server.items():
                out[sid][case][server] = _summarize(recs)
    return out


def _median(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _summarize(recs: list[dict]) -> dict:
    statuses = [r["status"] for r in recs]
    ok = [r for r in recs if r["status"] == "ok"]
    failed = [r for r in recs if r["status"] == "failed"]
    s = {
        "metric": recs[0]["metric"],
        "better": recs[0]["better"],
        "rounds": len(recs),
        "settings": recs[0]["settings"] or next((r["settings"] for r in recs if r["settings"]), ""),
        "errors": sum(r["errors"] for r in recs),
        "requests": sum(r["requests"] for r in recs),
        "cpu_us_per_req": _median([r["cpu_us_per_req"] for r in ok]),
        "peak_rss": _median([r["peak_rss"] for r in ok] or [r["peak_rss"] for r in recs]),
        "values": [r["value"] for r in recs],
        "notes": sorted({r["note"] for r in recs if r["note"]}),
        "extra": _merge_extra([r["extra"] for r in ok] or [r["extra"] for r in recs]),
    }
    if failed:
        s["status"] = "failed"
        s["value"] = None
        s["why"] = failed[0]["note"] + (f" ({len(failed)} of {len(recs)} rounds)" if len(recs) > 1 else "")
    elif all(st in ("n/a",) for st in statuses):
        s["status"], s["value"] = "n/a", None
    elif not ok:
        s["status"], s["value"] = statuses[0], None
        s["why"] = recs[0]["note"]
    else:
        s["status"] = "ok"
        s["value"] = _median([r["value"] for r in ok])
    return s


def _merge_extra(extras: list[dict]) -> dict:
    """Median of numeric extras over rounds; the first value for the rest."""
    keys = {k for e in extras for k in e}
    out = {}
    for k in sorted(keys):
        vals = [e.get(k) for e in extras if k in e]
        nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        out[k] = _median(nums) if nums and len(nums) == len(vals) else vals[0]
    return out


# ---- formatting ------------------------------------------------------------------------------

def fmt_value(v: float | None, metric: str) -> str:
    if v is None:
        return "—"
    if metric == "req/s":
        return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"
    if metric == "s":
        if v < 0.01:
            return f"{v * 1000:,.2f} ms"
        return f"{v * 1000:,.1f} ms" if v < 1 else f"{v:,.2f} s"
    if metric == "segments":
        return f"{v:.2f}"
    if metric == "replies":
        return f"{v:,.0f}"
    return f"{v:,.4g}"


def fmt_cpu(us: float | None) -> str:
    if us is None:
        return "—"
    return f"{us:,.1f} µs" if us < 1000 else f"{us / 1000:,.2f} ms"


def fmt_latency(us: float) -> str:
    return f"{us:,.0f} µs" if us < 1000 else f"{us / 1000:,.1f} ms"


def fmt_bytes(b: float | None) -> str:
    if not b:
        return "—"
    return f"{b / 2**20:,.1f} MiB"


def ratio(v: float | None, ours: float | None) -> str:
    if v is None or not ours:
        return "—"
    return f"{v / ours:.2f}×"


def _order(servers: dict, kinds: dict) -> list[str]:
    def key(name: str):
        s = servers[name]
        if s["status"] != "ok":
            return (1, 0, name)
        v = s["value"]
        return (0, -v if s["better"] == "higher" else v, name)
    return sorted((n for n in servers if servers[n]["status"] != "n/a"), key=key)


def _notes(s: dict) -> str:
    if s["status"] == "failed":
        text = "**FAILED**: " + s.get("why", "")
    elif s["status"] != "ok":
        text = f"{s['status']}: " + s.get("why", "")
    else:
        text = "verified" + ("; " + "; ".join(s["notes"]) if s["notes"] else "")
    ex = s["extra"]
    bits = []
    if ex.get("p50_us") is not None and s["metric"] == "req/s" and s["status"] == "ok":
        bits.append(f"p50 {fmt_latency(ex['p50_us'])}, p99 {fmt_latency(ex['p99_us'])}")
    if ex.get("every_p99_us") is not None:
        bits.append(f"every request's p99 {fmt_latency(ex['every_p99_us'])}, max {fmt_latency(ex['every_max_us'])}, "
                    f"answers per client {ex['every_fewest']}-{ex['every_most']}"
                    + (f", {ex['every_unanswered']} unanswered" if ex["every_unanswered"] else ""))
    if ex.get("nginx_us_per_req") is not None:
        bits.append(f"nginx {fmt_cpu(ex['nginx_us_per_req'])} / request")
    if ex.get("client_us_per_req") is not None:
        bits.append(f"client {fmt_cpu(ex['client_us_per_req'])} / request")
    if ex.get("ceiling_rps"):
        bits.append(f"a server costing nothing: {ex['ceiling_rps']:,.0f} req/s")
    if ex.get("reply_ms") is not None:
        bits.append(f"reply {ex['reply_ms']:.1f} ms")
    if "framing" in ex and s["metric"] == "s":
        bits.append({"length": "Content-Length", "chunked": "chunked", "close": "ended by close"}.get(
            ex["framing"], str(ex["framing"])) + (f", {s['requests']:,} fetches" if s["requests"] else ""))
    if bits:
        text += " (" + "; ".join(bits) + ")"
    return text.replace("|", "\\|").replace("\n", " ")[:400]


def markdown(results: dict, chart_names: dict[str, str]) -> str:
    meta = results["meta"]
    agg = aggregate(results["records"])
    kinds = {n: s["kind"] for n, s in results["servers"].items()}
    lines = [f"# sluicegate benchmarks — {meta['mode']} run, {meta['date']}", ""]
    m = meta["machine"]
    lines += [
        f"Machine: {m['nproc']} cores ({m['cpu']}), {m['memory_gib']} GiB, Linux {m['kernel']}, {m['os']}; "
        f"load average at start {m['loadavg_at_start']}; fd limit {m['fd_limit']}, somaxconn {m['somaxconn']}.",
        f"Python {meta['python']}; wrk {meta['tools']['wrk']}, ab {meta['tools']['ab']}, "
        f"httperf {meta['tools']['httperf']}, tcpdump {meta['tools']['tcpdump']}. "
        f"sluicegate commit {meta['sluicegate_commit']}.",
        f"Rounds: {meta['rounds']} (servers interleaved within each round; figures are medians over rounds).",
        "",
        "Command:",
        "",
        "```",
        meta["command"],
        "```",
        "",
        "Every figure was checked: a verification fetch compared the whole body with the expected bytes "
        "before each load run and after it, wrk's byte count had to equal requests × the verified response "
        "size, ab had to see every response at the verified length, each timed fetch's body was compared by "
        "sha256. A server that answered wrongly is listed as FAILED with the reason and has no figure. "
        "CPU / request is the server's own user+system time (all its processes and threads, from "
        "/proc/PID/stat) over the timed part, divided by the requests completed; peak RSS is the sum of "
        "VmHWM over its processes (each case starts the server afresh).",
        "",
    ]
    if meta.get("interrupted"):
        lines += ["**This run was interrupted: the tables hold what was measured before that.**", ""]
    for why in meta.get("stopped", []):
        lines += [f"**Stopped by an error, no figures from it: {why}**", ""]
    ours = results["servers"].get(OURS, {})
    if not ours.get("available", False):
        lines += [f"**sluicegate: {ours.get('why_not') or 'not in this run'}** — no ratios to it below.", ""]
    titles = meta.get("titles", {})
    for sid in sorted(agg, key=sid_key):
        lines += [f"## {sid}: {titles.get(sid, '')}", ""]
        if sid in chart_names:
            lines += [f"![{sid}]({chart_names[sid]})", ""]
        if sid == "S3" and meta.get("s3_python_only_s"):
            floor = ", ".join(f"{k}: {v * 1000:.1f} ms" for k, v in meta["s3_python_only_s"].items())
            lines += [f"Floor: producing and joining the blocks in Python alone, no server: {floor} (best of 5).", ""]
        for case, by_server in agg[sid].items():
            any_s = next(iter(by_server.values()))
            metric, better = any_s["metric"], any_s["better"]
            unit = {"req/s": "requests/s", "s": "time (median)", "replies": "2xx replies",
                    "segments": "segments / response", "transitions": "UP→DOWN transitions"}.get(metric, metric)
            direction = "higher is better" if better == "higher" else "lower is better"
            lines += [f"### {sid} — {case}", "",
                      f"| server | {unit} ({direction}) | ÷ sluicegate | CPU / request | peak RSS | errors | "
                      "verification / notes | settings |",
                      "|---|---:|---:|---:|---:|---:|---|---|"]
            ours_v = by_server.get(OURS, {}).get("value")
            for name in _order(by_server, kinds):
                s = by_server[name]
                label = f"**{name}**" if name == OURS else (f"{name} (anchor)" if kinds.get(name) == "anchor" else name)
                lines.append(
                    f"| {label} | {fmt_value(s['value'], metric)} | {ratio(s['value'], ours_v)} | "
                    f"{fmt_cpu(s['cpu_us_per_req'])} | {fmt_bytes(s['peak_rss'])} | {s['errors']:,} | {_notes(s)} | "
                    f"`{s['settings']}` |")
            lines.append("")
    lines += ["## Servers", "", "| server | version | what | in this run |", "|---|---|---|---|"]
    for name, s in results["servers"].items():
        state = "yes" if s["available"] else f"**no**: {s['why_not']}"
        lines.append(f"| {name} | {s['version'] or '—'} | {s['describe']} | {state} |")
    lines += ["", "## Peer installs (benchmarks/setup.sh)", "",
              "| peer | outcome | version / error | pip install arguments |", "|---|---|---|---|"]
    for name, rec in sorted(meta.get("install", {}).items()):
        err = str(rec.get("version") or rec.get("error", "")).replace("|", "\\|")
        lines.append(f"| {name} | {rec.get('status')} | {err} | `{' '.join(rec.get('pip_args', []))}` |")
    st = meta["settings"]
    lines += ["", "## Settings common to all servers", "",
              f"One worker process each, 127.0.0.1, no access log. Thread pools: {st['fast_threads']} threads for "
              f"apps that do not block, {st['blocking_threads']} for S5's blocking app. Keep-alive idle timeout "
              f"{st['keepalive_s']} s where settable; listen backlog {st['backlog']}; connection limits raised to "
              f"{st['max_connections']} where a server has one.", ""]
    return "\n".join(lines) + "\n"


# ---- charts ----------------------------------------------------------------------------------

def charts(results: dict, out_dir: Path) -> dict[str, str]:
    """One PNG per scenario; returns {scenario: file name}. Empty if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        found = {p.stem: p.name for p in sorted(out_dir.glob("*.png"))}
        print("report: matplotlib not available (run with benchmarks/.venv/bin/python): "
              + ("reusing the charts already there" if found else "no charts"))
        return found
    agg = aggregate(results["records"])
    kinds = {n: s["kind"] for n, s in results["servers"].items()}
    names: dict[str, str] = {}
    for sid in sorted(agg, key=sid_key):
        cases = [(c, s) for c, s in agg[sid].items() if any(v["status"] != "n/a" for v in s.values())]
        if not cases:
            continue
        heights = [max(1.2, 0.32 * len(_order(s, kinds)) + 0.9) for _, s in cases]
        fig, axes = plt.subplots(len(cases), 1, figsize=(8, sum(heights)), squeeze=False,
                                 gridspec_kw={"height_ratios": heights})
        for ax, (case, by_server) in zip(axes[:, 0], cases):
            _bars(ax, case, by_server, kinds)
        title = results["meta"].get("titles", {}).get(sid, "")
        fig.suptitle(f"{sid}: {title}" if title else sid, fontsize=10, fontweight="bold", x=0.01, ha="left")
        fig.tight_layout()
        name = f"{sid}.png"
        fig.savefig(out_dir / name, dpi=72)
        plt.close(fig)
        names[sid] = name
    head = _headline(plt, agg, kinds, out_dir)
    if head:
        names["headline"] = head
    return names


def _bars(ax, case: str, by_server: dict, kinds: dict) -> None:
    order = _order(by_server, kinds)
    any_s = by_server[order[0]] if order else next(iter(by_server.values()))
    metric, better = any_s["metric"], any_s["better"]
    scale, unit = (1000, "ms") if metric == "s" else (1, metric)
    vals = [(by_server[n]["value"] or 0) * scale for n in order]
    colors = [COLORS.get(kinds.get(n, "peer"), COLORS["peer"]) for n in order]
    y = list(range(len(order)))[::-1]
    ax.barh(y, vals, color=colors, height=0.7)
    top = max(vals) if vals and max(vals) > 0 else 1
    for yi, n, v in zip(y, order, vals):
        s = by_server[n]
        label = fmt_value(s["value"], metric) if s["status"] == "ok" else s["status"].upper()
        ax.text(v + top * 0.01, yi, label, va="center", fontsize=7,
                color="#c92a2a" if s["status"] != "ok" else "black")
    ax.set_yticks(y)
    ax.set_yticklabels(order, fontsize=8)
    for lbl in ax.get_yticklabels():
        if lbl.get_text() == OURS:
            lbl.set_fontweight("bold")
            lbl.set_color(COLORS["ours"])
    ideal = next((s["extra"].get("ideal_rps") for s in by_server.values() if s["extra"].get("ideal_rps")), None)
    if ideal:
        ax.axvline(ideal, color="#495057", lw=0.8, ls="--")
        ax.text(ideal, y[0] + 0.45, " ideal", fontsize=7, color="#495057", va="bottom")
        top = max(top, ideal)
    ax.set_xlim(0, top * 1.22)
    ax.set_title(f"{case} — {unit}, {'higher' if better == 'higher' else 'lower'} is better", fontsize=9, loc="left")
    ax.tick_params(axis="x", labelsize=7)
    ax.spines[["top", "right"]].set_visible(False)


def _headline(plt, agg: dict, kinds: dict, out_dir: Path) -> str | None:
    """Per scenario: sluicegate, the best peer and the anchor, relative to the best peer (= 1)."""
    rows = []
    for sid, prefixes in HEADLINE.items():
        chosen = None
        for prefix in prefixes:
            for case in (c for c in agg.get(sid, {}) if c.startswith(prefix)):
                by = agg[sid][case]
                peers = [(n, s) for n, s in by.items() if kinds.get(n) == "peer" and s["status"] == "ok"]
                if peers:
                    chosen = (case, by, peers)
                    break
            if chosen:
                break
        if not chosen:
            continue
        case, by, peers = chosen
        hi = by[next(iter(by))]["better"] == "higher"
        best_name, best = max(peers, key=lambda p: p[1]["value"] if hi else -p[1]["value"])

        def rel(s: dict | None) -> float | None:
            if not s or s["status"] != "ok" or not s["value"]:
                return None
            return s["value"] / best["value"] if hi else best["value"] / s["value"]

        anchor = next(((n, s) for n, s in by.items() if kinds.get(n) == "anchor"), (None, None))
        rows.append((f"{sid} {case}", rel(by.get(OURS)), by.get(OURS, {}).get("status", "absent"),
                     best_name, rel(anchor[1])))
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(rows) + 1.2))
    ys = list(range(len(rows)))[::-1]
    anchor_labelled = False
    for y, (label, ours, ours_status, best_name, anch) in zip(ys, rows):
        ax.barh(y + 0.25, ours or 0, height=0.25, color=COLORS["ours"], label="sluicegate" if y == ys[0] else None)
        ax.barh(y, 1.0, height=0.25, color=COLORS["peer"], label="best peer" if y == ys[0] else None)
        ax.text(1.01, y, best_name, va="center", fontsize=7)
        if ours is None:
            ax.text(0.01, y + 0.25, ours_status.upper(), va="center", fontsize=7, color="#c92a2a")
        else:
            ax.text(ours + 0.01, y + 0.25, f"{ours:.2f}×", va="center", fontsize=7)
        if anch is not None:
            ax.barh(y - 0.25, anch, height=0.25, color=COLORS["anchor"],
                    label=None if anchor_labelled else "nginx (anchor)")
            anchor_labelled = True
    ax.set_yticks(ys)
    ax.set_yticklabels([r[0] for r in rows], fontsize=7)
    ax.axvline(1.0, color="#495057", lw=0.6, ls=":")
    ax.set_xlabel("relative to the best peer (higher is better; time scenarios inverted)", fontsize=8)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("sluicegate against the best peer of each scenario (best peer = 1)", fontsize=9, loc="left")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(out_dir / "headline.png", dpi=72)
    plt.close(fig)
    return "headline.png"


def write(results: dict, out_dir: Path) -> None:
    names = charts(results, out_dir)
    md = markdown(results, names)
    if "headline" in names:
        md = md.replace("\n## ", "\n![headline](headline.png)\n\n## ", 1)
    (out_dir / "report.md").write_text(md)
    from bench import standing  # it reads this module's aggregation

    standing.write(results, out_dir)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("dir", type=Path, help="a results directory holding results.json")
    ap.add_argument("--publish", action="store_true",
                    help="also put its standing.md into BENCHMARKS.md, between the standing-table markers")


def main(args: argparse.Namespace) -> None:
    write(json.loads((args.dir / "results.json").read_text()), args.dir)
    print(args.dir / "report.md", args.dir / "standing.md")
    if args.publish:
        from bench import standing

        page = Path(__file__).resolve().parents[2] / "BENCHMARKS.md"
        standing.publish(args.dir, page)
        print(f"{page}: standing table from {args.dir.name}")
