"""The standing table: sluicegate against the best peer of the same run, scenario by scenario.

Owns the choice of the cases that stand for each scenario (CASES: the ones users compare
first), the best peer of each (the best figure among the servers of kind "peer" that answered
correctly; other builds of sluicegate, the nginx anchor and the app alone are no peers), the
ratio (above 1: sluicegate ahead; for figures where lower is better the ratio is inverted, so
it reads the same way), and `standing.md`: a header naming the run's folder, build and exact
command, the table, and the chart embeds, which `run.py report DIR --publish` puts into
BENCHMARKS.md between its markers (links relative to the repository's root). The same publish
writes BENCHMARKS.md's "What is lost" list from the same rows (`lost_markdown`: every row below
1.0× with its best peer), so that the prose cannot disagree with the table. Works from
results.json alone: `run.py report DIR` rebuilds it.
"""

from __future__ import annotations

from pathlib import Path

from bench import report

# scenario -> prefixes of its case names, in the order of the table (a prefix may match none:
# a run without that case)
CASES: dict[str, tuple[str, ...]] = {
    "S1": ("688128 [bytes]", "64MiB [bytes]", "64MiB file_wrapper"),
    "S2": ("21 KiB, wrk -c100, app, file_wrapper", "21 KiB, wrk -c100, app, [file", "21 KiB, wrk -c100, static"),
    "S3": ("2.5 MB in 128 B", "2.5 MB in 8192 B"),
    "S4": ("ab -c1", "wrk -t1 -c1"),
    "S5": ("100 clients", "1,000 clients"),
    "S6": ("wrk -t1 -c64", "ab -c64"),
    "S7": ("wrk -c16 beside",),
    "S8": ("64 MiB upload, Content-Length", "64 MiB upload, chunked"),
    "S9": ("2 workers",),
    "S10": ("wrk -c64, 2 workers, HUP", "wrk -c64, 2 workers, --max-requests", "wrk -c64, 2 workers, kill"),
    "S11": ("hello world", "2.5 MB"),
    "S12": ("HAProxy checks /hello", "fast route /hello p99, 16"),
    "S13": ("c16, CONN_MAX_AGE=0, peers 8", "c100, CONN_MAX_AGE=0, peers 8", "c16, CONN_MAX_AGE=60, peers 8",
            "c100, CONN_MAX_AGE=60, peers 8"),
    "S14": ("hello world, wrk", "hello world, ab", "21 KiB", "64 MiB"),
    "S15": ("S15a", "S15b"),
    "S16": ("hello world, (a)", "hello world, (b)", "hello world, (c) uwsgi_pass over TCP",
            "hello world, (c) uwsgi_pass over a unix", "21 KiB file read by the app, (a)"),
}
# The scenarios whose chart BENCHMARKS.md shows (what users compare first).
CHARTED = ("S6", "S16", "S5", "S2", "S3", "S14", "S15")


def _ratio(ours: dict, best: dict) -> str:
    a, b = ours.get("value"), best.get("value")
    if ours.get("status") == "ok" and not best:
        return "no peer answered"
    if ours.get("status") != "ok" or a is None or b is None:
        return "—"
    if ours["better"] == "higher":
        return f"{a / b:.2f}×" if b else "—"
    if a == 0 or b == 0:
        return "level" if a == b else ("ahead" if a == 0 else "behind")
    return f"{b / a:.2f}×"


def _below_one(ours: dict, best: dict) -> bool:
    """Whether sluicegate's figure is behind the best peer's (a ratio under 1.00x, or behind)."""
    text = _ratio(ours, best)
    if text == "behind":
        return True
    return text.endswith("×") and float(text[:-1]) < 1.0


# What bounds a case where a cause outside the server under test was measured: shown beside the
# row in "What is lost" when it falls below 1.0×. Each names the results folder that shows it.
CAUSES: dict[tuple[str, str], str] = {
    ("S6", "ab -c64"): "ab's one thread is the limit: it spends 1/rate of CPU per request against every "
                       "server (`2026-11-26-wasted-spin`)",
    ("S14", "hello world, ab -c16"): "ab's one thread is the limit: busy 99%, it spends 1/rate of CPU per "
                                     "handshake, and sluicegate's own CPU per handshake is the lowest "
                                     "(`2026-11-28-lost-rows`)",
    ("S13", "c16, CONN_MAX_AGE=0"): "the machine: a server costing nothing beyond the app reaches 1.02× the "
                                    "best peer (`2026-11-26-static-sendfile`)",
    ("S13", "c100, CONN_MAX_AGE=0"): "the machine: a server costing nothing beyond the app reaches 1.02× the "
                                     "best peer (`2026-11-26-static-sendfile`)",
    ("S16", "hello world, (a)"): "nginx's one worker caps every server near 34,000 req/s (the S16 report's "
                                 "ceiling)",
    ("S1", "64MiB file_wrapper"): "to a loopback client, a copy through user space is read faster than "
                                  "`sendfile`'s pages, at several times the server's CPU; kept "
                                  "zero-copy (`2026-11-28-s1big`)",
    ("S3", "2.5 MB in 8192 B"): "BBR, this machine's congestion control, paced the run's kept-alive "
                                "loopback connections and not pyruvate's new one per answer; loopback "
                                "listeners now leave it (`2026-11-28-unpaced`)",
    ("S4", "ab -c1"): "an idle vCPU of this VM halts at once and its wake-up costs 40 µs at the median "
                      "(`2026-11-28-s4-c1`)",
    ("S10", "wrk -c64, 2 workers, kill"): "each kill drops the requests in flight on the killed worker's "
                                          "connections",
}


def _cause(sid: str, case: str) -> str:
    return next((why for (s, prefix), why in CAUSES.items() if s == sid and case.startswith(prefix)), "")


def lost_markdown(results: dict) -> str:
    """Every standing row where sluicegate is behind the best peer of the run, with that peer, both
    figures, the ratio and, where one was measured, what bounds the case."""
    lines = []
    for sid, case, ours, best_name, best in rows(results):
        if ours is None or best is None or not _below_one(ours, best):
            continue
        cause = _cause(sid, case)
        lines.append(f"- **{sid} {case}**: {_figure(ours)} against {best_name}'s {_figure(best)} "
                     f"({_ratio(ours, best)})" + (f"; {cause}." if cause else "."))
    if not lines:
        return "Every row of the standing run is at or above 1.0× its best peer.\n"
    folder = results["meta"].get("folder", "")
    head = f"Every row of the standing run{f' `{folder}`' if folder else ''} below 1.0× its best peer:"
    return "\n".join([head, "", *lines]) + "\n"


def _figure(s: dict | None) -> str:
    if s is None:
        return "—"
    if s["status"] != "ok":
        return "**failed**" if s["status"] == "failed" else s["status"]
    return report.fmt_value(s["value"], s["metric"])


def rows(results: dict) -> list[tuple[str, str, dict | None, str | None, dict | None]]:
    """(scenario, case, sluicegate's summary, best peer's name, its summary) for each standing case."""
    agg = report.aggregate(results["records"])
    kinds = {n: s["kind"] for n, s in results["servers"].items()}
    out = []
    for sid in sorted(agg, key=report.sid_key):
        prefixes = CASES.get(sid, ())
        cases = [c for p in prefixes for c in agg[sid] if c.startswith(p)] or list(agg[sid])
        for case in dict.fromkeys(cases):
            by = agg[sid][case]
            peers = [(n, s) for n, s in by.items()
                     if kinds.get(n) == "peer" and not n.startswith("sluicegate") and s["status"] == "ok"]
            best = None
            if peers:
                hi = peers[0][1]["better"] == "higher"
                best = max(peers, key=lambda p: p[1]["value"] if hi else -p[1]["value"])
            out.append((sid, case, by.get(report.OURS), best[0] if best else None, best[1] if best else None))
    return out


def markdown(results: dict, out_dir: Path) -> str:
    meta, folder = results["meta"], out_dir.name
    link = f"benchmarks/results/{folder}"
    once = set(meta.get("once", [])) & set(meta.get("scenarios", []))
    lines = [f"Run [`{folder}`]({link}/report.md): sluicegate {meta['sluicegate_commit']}, {meta['date']}, "
             f"{meta['machine']['nproc']} cores, {meta['mode']} mode, {meta['rounds']} interleaved round(s)"
             + (f" ({', '.join(sorted(once, key=report.sid_key))} in the first only)" if once else "")
             + f", {meta.get('elapsed_s', 0) / 60:.0f} minutes. Command:", "",
             "```sh", meta["command"], "```", "",
             "Ratio: sluicegate's figure over the best peer's in this run (inverted where lower is better); "
             "above 1, sluicegate is ahead. CPU: the server's own user + system time per request.", "",
             "| id | case | sluicegate | CPU / req | best peer | its figure | CPU / req | ratio |",
             "|---|---|---:|---:|---|---:|---:|---:|"]
    for sid, case, ours, best_name, best in rows(results):
        lines.append(f"| {sid} | {case.replace('|', '/')} | {_figure(ours)} | "
                     f"{report.fmt_cpu(ours.get('cpu_us_per_req') if ours else None)} | {best_name or '—'} | "
                     f"{_figure(best)} | {report.fmt_cpu(best.get('cpu_us_per_req') if best else None)} | "
                     f"{_ratio(ours or {}, best or {})} |")
    charts = [sid for sid in CHARTED if (out_dir / f"{sid}.png").exists()]
    lines += ["", "Charts (every server of the run, medians; sluicegate in orange, nginx in grey):", ""]
    lines += [f"![{sid}]({link}/{sid}.png)" for sid in charts]
    return "\n".join(lines) + "\n"


BEGIN, END = "<!-- standing table: begin -->", "<!-- standing table: end -->"


LOST_BEGIN, LOST_END = "<!-- what is lost: begin -->", "<!-- what is lost: end -->"


def write(results: dict, out_dir: Path) -> None:
    (out_dir / "standing.md").write_text(markdown(results, out_dir))
    (out_dir / "lost.md").write_text(lost_markdown({**results, "meta": {**results["meta"], "folder": out_dir.name}}))


def _replace_block(text: str, begin: str, end: str, body: str, page: Path) -> str:
    if begin not in text or end not in text:
        raise SystemExit(f"{page}: no {begin} ... {end} block")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}{end}{tail}"


def publish(out_dir: Path, page: Path) -> None:
    """Put out_dir's standing.md and lost.md between their markers of `page` (BENCHMARKS.md)."""
    text = _replace_block(page.read_text(), BEGIN, END, (out_dir / "standing.md").read_text(), page)
    text = _replace_block(text, LOST_BEGIN, LOST_END, (out_dir / "lost.md").read_text(), page)
    page.write_text(text)
