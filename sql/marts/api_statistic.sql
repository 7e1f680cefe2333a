-- api_statistic: one row per (device, level, API name) with calls and time, every API level.
--
-- Grain:   (run_id, device_id, level, api_name)
-- Sources: stg_api_calls; stg_api_totals for a device without API calls
-- Follows: msprof api_statistic (docs/formats.md#rule-api-statistic): group by (level, API name);
--          Time = sum of durations, Count, Avg = Time / Count, Min, Max, Variance = population
--          variance in us^2. Choices: durations in integer ns and not rounded (msprof rounds
--          each duration to 0.001 us before summing; the exports' durations are already whole
--          ns, so the totals agree); every call counts (msprof drops calls that ended before
--          the collection started); the host's rows keep device 64. Rows ordered by API name,
--          then level, as msprof does, not by time. An exported run whose export holds no API events
--          but the exporter's api_statistic (docs/formats.md#export-totals) takes a device's
--          rows from those totals where no call of the device was read: Time, Count, Min, Max
--          and Variance as exported (0.001 us), Avg = Time / Count.
-- Columns:
--   device_id     -      device the calls were made for (64 = host)
--   level         -      API level: acl, model, node, runtime, communication, ...
--   api_name      -      API name
--   time_ns       ns     sum of call durations
--   count         -      calls
--   avg_ns        ns     time_ns / count, not rounded
--   min_ns        ns     shortest call
--   max_ns        ns     longest call
--   variance_us2  us^2   population variance of the durations in microseconds squared, as msprof;
--                        from exact integer sums (n * sum(d^2) - sum(d)^2) / n^2, so the same bits
--                        whatever order the calls are read in (a floating-point variance
--                        differs in its last bits between builds, and loses digits when the
--                        mean is large against the spread). Exact where every duration lies
--                        within +-2^40 ns (18 min) and there are fewer than 2^23 calls, so that
--                        the sums fit 128-bit integers; otherwise DuckDB's var_pop.

with sums as (
    select
        device_id,
        level,
        api_name,
        count(*) as n,
        sum(dur_ns) as dur_sum,
        min(dur_ns) as min_ns,
        max(dur_ns) as max_ns,
        -- the squares of the durations the exact path takes (a filtered-out square could
        -- overflow the sum; its group takes var_pop)
        sum(dur_ns::hugeint * dur_ns) filter (where dur_ns between -1099511627776 and 1099511627776)
            as dur_sq_sum,
        var_pop(dur_ns / 1000.0) as float_variance_us2
    from stg_api_calls
    where dur_ns is not null
    group by device_id, level, api_name
),

exact as (
    select
        *,
        min_ns >= -1099511627776 and max_ns <= 1099511627776 and n < 8388608 as is_exact
    from sums
),

from_events as (
    select
        device_id,
        level,
        api_name,
        dur_sum::bigint as time_ns,
        n as count,
        dur_sum::double / n as avg_ns,
        min_ns,
        max_ns,
        case
            when is_exact
                then
                    -- n * sum(d^2) - sum(d)^2 < 2^126; groups off the exact path multiply zeros
                    (
                        if(is_exact, n, 0)::hugeint * if(is_exact, dur_sq_sum, 0)
                        - if(is_exact, dur_sum, 0)::hugeint * if(is_exact, dur_sum, 0)
                    )::double
                    / (n::double * n) / 1e6
            else float_variance_us2
        end as variance_us2
    from exact
),

from_totals as (
    select
        device_id,
        level,
        api_name,
        time_ns,
        count,
        time_ns::double / nullif(count, 0) as avg_ns,
        min_ns,
        max_ns,
        variance_us2
    from stg_api_totals
    anti join (select distinct device_id from stg_api_calls) as calls using (device_id)
)

select * from from_events
union all
select * from from_totals
order by device_id, api_name, level
