-- wrk: the share of requests slower than 10 ms and 40 ms (bisection over latency:percentile).
local function share_over(latency, us)
  local lo, hi = 0.0, 100.0
  for _ = 1, 40 do
    local mid = (lo + hi) / 2
    if latency:percentile(mid) > us then hi = mid else lo = mid end
  end
  return 100.0 - hi
end

done = function(summary, latency, requests)
  io.write(string.format("over10ms %.3f%% over40ms %.3f%% requests %d\n",
    share_over(latency, 10000), share_over(latency, 40000), summary.requests))
end
