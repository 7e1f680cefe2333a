-- stg_step_times: one row per training step of an exporter's step breakdown, in ns.
--
-- Grain:   (device_id, step_id)
-- Sources: step_times
-- Stored:  no, a view: a projection of step_times, read by step_trace_summary and build_issues
-- Follows: torch_npu's step_trace_time (docs/formats.md#export-totals): per step, the time
--          computing, communicating (overlapped or not), free, the stage (computing +
--          communication not overlapped + free), the pipeline bubble and the preparation before
--          the first task, as the exporter computed them from events this export no longer
--          holds (or, beside them, the reference profetl's recomputation is compared with:
--          docs/formats.md#export-step-breakdown). Rows sharing a (device, step) are one row, the first read (source file, then
--          row): the reader reported each such copy in ingest_issues (duplicate_row), or as
--          lost where its values differed (bad_row).
-- Columns:
--   device_id                        -   device
--   step_id                          -   step number as exported
--   computing_ns                     ns  Computing
--   communication_not_overlapped_ns  ns  Communication(Not Overlapped)
--   overlapped_ns                    ns  Overlapped
--   communication_ns                 ns  Communication
--   free_ns                          ns  Free
--   stage_ns                         ns  Stage
--   bubble_ns                        ns  Bubble
--   communication_not_overlapped_exclude_receive_ns ns Communication(Not Overlapped and Exclude Receive)
--   preparing_ns                     ns  Preparing; NULL where not exported

select
    device_id,
    step_id,
    computing_ns,
    communication_not_overlapped_ns,
    overlapped_ns,
    communication_ns,
    free_ns,
    stage_ns,
    bubble_ns,
    communication_not_overlapped_exclude_receive_ns,
    preparing_ns
from step_times
qualify row_number() over (partition by device_id, step_id order by source_file, seq) = 1
