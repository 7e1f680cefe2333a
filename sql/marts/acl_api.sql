-- acl_api: one row per AscendCL API call.
--
-- Grain:   (run_id, device_id, start_ns, api_name, tid) - in practice one row per call record
-- Sources: stg_api_calls (level acl)
-- Follows: msprof 2022 acl_report (docs/formats.md#rule-acl-api): one row per call, ordered by
--          start time; Duration = (end - start) / 1000 in microseconds; Type is the
--          AscendCL tag name (msprof 2022 printed the raw integer; 2023 printed the name).
-- Columns:
--   device_id      -     device
--   api_name       -     AscendCL API name ("Name")
--   api_type       -     AscendCL API type: ACL_OP, ACL_MODEL, ACL_RTS, ACL_OTHERS, ... ("Type")
--   start_ns       ns    call start on the run timeline ("Start Time")
--   dur_us         us    call duration ("Duration(us)")
--   pid            -     process id ("Process ID")
--   tid            -     thread id ("Thread ID")

select
    device_id,
    api_name,
    api_type,
    start_ns,
    dur_ns / 1000.0 as dur_us,
    pid,
    tid
from stg_api_calls
where level = 'acl'
order by device_id, start_ns, seq
