-- stg_api_totals: one row per (device, level, API) of an exporter's API summary, in ns.
--
-- Grain:   (device_id, level, api_name)
-- Sources: api_totals
-- Stored:  no, a view: a projection of api_totals, read by api_statistic only
-- Follows: the exporter's api_statistic (docs/formats.md#export-totals): its totals of the API
--          calls of an export that holds no API events, as it wrote them (Time, Count, Min,
--          Max, Variance rounded to 0.001 us). Rows sharing a (device, level, API) are one row,
--          the first read (source file, then row): the reader reported each such copy in
--          ingest_issues (duplicate_row), or as lost where its values differed (bad_row).
-- Columns:
--   device_id     -      device the calls were made for (64 = host)
--   level         -      API level as exported: acl, model, node, runtime, hccl, ...
--   api_name      -      API name
--   time_ns       ns     sum of call durations (the exporter's, to 0.001 us)
--   count         -      calls
--   min_ns        ns     shortest call
--   max_ns        ns     longest call
--   variance_us2  us^2   population variance of the durations as exported

select
    device_id,
    level,
    api_name,
    time_ns,
    count,
    min_ns,
    max_ns,
    variance_us2
from api_totals
qualify row_number() over (partition by device_id, level, api_name order by source_file, seq) = 1
