-- benchmarks/bench/wrk_report.lua: makes wrk report exact counts as one JSON line.
-- Only done() is defined: a response() callback would make wrk hand every body to Lua and lower
-- the load generator's own limit for every server alike. Byte verification instead compares
-- summary.bytes with requests x the size of a response verified beforehand (bench/loadgen.py).
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,' ..
    '"status":%d,"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean))
end
