-- runtime_api_summary: one row per (device, runtime API, stream): calls and time spent.
--
-- Grain:   (run_id, device_id, api_name, stream_id); stream_id NULL is a value
-- Sources: stg_api_calls (level runtime)
-- Follows: msprof 2022 runtime_report.get_output_apicall (docs/formats.md#rule-runtime-api):
--          Time = sum of exit - entry, Time(%) = its share of all runtime API time of the
--          device. Choices where msprof is loose: rows are per (API, stream) rather
--          than per API with an arbitrary row's stream; the average is exact (msprof
--          truncates with integer division); a call outside any stream has stream_id NULL
--          (shown N/A).
-- Columns:
--   device_id      -     device
--   api_name       -     runtime API name ("Name")
--   stream_id      -     stream the calls were made on; NULL when outside any stream ("Stream ID")
--   time_pct       %     share of the device's total runtime API time ("Time(%)")
--   time_ns        ns    total time of the calls ("Time(ns)")
--   calls          -     number of calls ("Calls")
--   avg_ns         ns    mean time per call ("Avg(ns)")
--   min_ns         ns    shortest call ("Min(ns)")
--   max_ns         ns    longest call ("Max(ns)")

with calls as (
    select device_id, api_name, stream_id, dur_ns
    from stg_api_calls
    where level = 'runtime'
),

totals as (
    select device_id, sum(dur_ns) as total_ns
    from calls
    group by device_id
),

per_api as (
    select
        device_id,
        api_name,
        stream_id,
        sum(dur_ns) as time_ns,
        count(*) as calls,
        avg(dur_ns) as avg_ns,
        min(dur_ns) as min_ns,
        max(dur_ns) as max_ns
    from calls
    group by device_id, api_name, stream_id
)

select
    per_api.device_id,
    per_api.api_name,
    per_api.stream_id,
    100.0 * per_api.time_ns / nullif(totals.total_ns, 0) as time_pct,
    per_api.time_ns,
    per_api.calls,
    per_api.avg_ns,
    per_api.min_ns,
    per_api.max_ns
from per_api
inner join totals on per_api.device_id = totals.device_id
order by per_api.device_id, per_api.time_ns desc, per_api.api_name, per_api.stream_id nulls first
