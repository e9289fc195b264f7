"""The standing table of BENCHMARKS.md (benchmarks/bench/standing.py) read from a results.json:
the best peer of each case, the ratio's direction, failed answers, and the block it replaces."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def standing():
    sys.path.insert(0, str(BENCH))
    try:
        from bench import standing as module
    finally:
        sys.path.remove(str(BENCH))
    return module


def record(scenario, case, server, value, metric="req/s", better="higher", status="ok"):
    return {"scenario": scenario, "case": case, "server": server, "round": 1, "metric": metric,
            "better": better, "value": value, "status": status, "requests": 100, "errors": 0,
            "cpu_us_per_req": 10.0, "peak_rss": None, "verified": status == "ok", "note": "",
            "settings": "", "extra": {}}


def results(records):
    kinds = {"sluicegate": "ours", "bjoern": "peer", "uwsgi": "peer", "sluicegate-base": "peer",
             "nginx": "anchor"}
    return {"meta": {"mode": "standing", "rounds": 1, "date": "today", "sluicegate_commit": "abc1234",
                     "machine": {"nproc": 2}, "command": "python3 benchmarks/run.py --standing",
                     "scenarios": ["S1", "S6"], "once": ["S1"], "elapsed_s": 60},
            "servers": {n: {"kind": k} for n, k in kinds.items()}, "records": records}


def test_the_best_peer_is_the_best_correct_answer_of_a_peer_and_the_ratio_reads_above_one_when_ahead(standing):
    res = results([
        record("S6", "wrk -t1 -c64 (keep-alive)", "sluicegate", 150.0),
        record("S6", "wrk -t1 -c64 (keep-alive)", "bjoern", 100.0),
        record("S6", "wrk -t1 -c64 (keep-alive)", "uwsgi", 999.0, status="failed"),
        record("S6", "wrk -t1 -c64 (keep-alive)", "sluicegate-base", 500.0),
        record("S6", "wrk -t1 -c64 (keep-alive)", "nginx", 400.0),
        record("S1", "64MiB [bytes]", "sluicegate", 0.02, metric="s", better="lower"),
        record("S1", "64MiB [bytes]", "uwsgi", 0.01, metric="s", better="lower"),
    ])
    rows = {(sid, case): (best, standing._ratio(ours, peer or {}))
            for sid, case, ours, best, peer in standing.rows(res)}
    assert rows[("S6", "wrk -t1 -c64 (keep-alive)")] == ("bjoern", "1.50×")
    assert rows[("S1", "64MiB [bytes]")] == ("uwsgi", "0.50×")
    text = standing.markdown(res, Path("/nonexistent/2026-01-01-standing"))
    assert "benchmarks/results/2026-01-01-standing/report.md" in text
    assert text.index("| S1 |") < text.index("| S6 |")


def test_publish_replaces_only_the_marked_block(standing, tmp_path):
    out = tmp_path / "2026-01-01-standing"
    out.mkdir()
    (out / "standing.md").write_text("NEW TABLE\n")
    (out / "lost.md").write_text("NEW LOST\n")
    page = tmp_path / "BENCHMARKS.md"
    page.write_text(f"intro\n{standing.BEGIN}\nold table\n{standing.END}\nmiddle\n"
                    f"{standing.LOST_BEGIN}\nold lost\n{standing.LOST_END}\nrest\n")
    standing.publish(out, page)
    assert page.read_text() == (f"intro\n{standing.BEGIN}\nNEW TABLE\n{standing.END}\nmiddle\n"
                                f"{standing.LOST_BEGIN}\nNEW LOST\n{standing.LOST_END}\nrest\n")


def test_what_is_lost_lists_every_row_below_one_with_its_best_peer_and_no_other(standing):
    res = results([
        record("S6", "wrk -t1 -c64 (keep-alive)", "sluicegate", 150.0),
        record("S6", "wrk -t1 -c64 (keep-alive)", "bjoern", 100.0),
        record("S6", "ab -c64 -n5000 (new connection each)", "sluicegate", 90.0),
        record("S6", "ab -c64 -n5000 (new connection each)", "uwsgi", 100.0),
        record("S6", "ab -c64 -n5000 (new connection each)", "sluicegate-base", 500.0),
        record("S1", "64MiB [bytes]", "sluicegate", 0.02, metric="s", better="lower"),
        record("S1", "64MiB [bytes]", "uwsgi", 0.01, metric="s", better="lower"),
    ])
    lost = standing.lost_markdown(res)
    listed = [line for line in lost.splitlines() if line.startswith("- ")]
    assert len(listed) == 2
    assert "S1 64MiB [bytes]" in listed[0] and "uwsgi" in listed[0] and "0.50×" in listed[0]
    assert "S6 ab -c64" in listed[1] and "uwsgi" in listed[1] and "0.90×" in listed[1]
    assert "ab's one thread" in listed[1]  # the measured cause of that case
    assert "wrk -t1 -c64" not in lost
    ahead = results([record("S6", "wrk -t1 -c64 (keep-alive)", "sluicegate", 150.0),
                     record("S6", "wrk -t1 -c64 (keep-alive)", "bjoern", 100.0)])
    assert not [line for line in standing.lost_markdown(ahead).splitlines() if line.startswith("- ")]


def test_benchmarks_md_lists_as_lost_exactly_the_standing_rows_below_one(standing):
    """The "What is lost" block is the one generated from the run the standing table names."""
    import json
    import re
    text = (BENCH.parent / "BENCHMARKS.md").read_text()
    assert text.count(standing.LOST_BEGIN) == 1 and text.count(standing.LOST_END) == 1
    folder = re.search(r"Run \[`([^`]+)`\]", text.split(standing.BEGIN, 1)[1]).group(1)
    res = json.loads((BENCH / "results" / folder / "results.json").read_text())
    block = text.split(standing.LOST_BEGIN, 1)[1].split(standing.LOST_END, 1)[0].strip()
    expected = standing.lost_markdown({**res, "meta": {**res["meta"], "folder": folder}}).strip()
    assert block == expected


def test_benchmarks_md_has_the_block_publish_replaces(standing):
    text = (BENCH.parent / "BENCHMARKS.md").read_text()
    assert text.count(standing.BEGIN) == 1 and text.count(standing.END) == 1
    assert text.index(standing.BEGIN) < text.index(standing.END)
