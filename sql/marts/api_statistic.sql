-- api_statistic: one row per (device, level, API name) with calls and time, every API level.
--
-- Grain:   (run_id, device_id, level, api_name)
-- Sources: stg_api_calls
-- Follows: msprof api_statistic (analysis-and-exports §A1.4): group by (level, API name);
--          Time = sum of durations, Count, Avg = Time / Count, Min, Max, Variance = population
--          variance in us^2. Choices: durations in integer ns and not rounded (msprof rounds
--          each duration to 0.001 us before summing; the exports' durations are already whole
--          ns, so the totals agree); every call counts (msprof drops calls that ended before
--          the collection started); the host's rows keep device 64. Rows ordered by level and
--          name as msprof does, not by time.
-- Columns:
--   device_id     -      device the calls were made for (64 = host)
--   level         -      API level: acl, model, node, runtime, communication, ...
--   api_name      -      API name
--   time_ns       ns     sum of call durations
--   count         -      calls
--   avg_ns        ns     time_ns / count, not rounded
--   min_ns        ns     shortest call
--   max_ns        ns     longest call
--   variance_us2  us^2   population variance of the durations in microseconds squared, as msprof

select
    device_id,
    level,
    api_name,
    sum(dur_ns)::bigint as time_ns,
    count(*) as count,
    sum(dur_ns)::double / count(*) as avg_ns,
    min(dur_ns) as min_ns,
    max(dur_ns) as max_ns,
    var_pop(dur_ns / 1000.0) as variance_us2
from stg_api_calls
where dur_ns is not null
group by device_id, level, api_name
order by device_id, api_name, level
