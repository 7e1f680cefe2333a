-- stg_step_marks_steps: one row per group of STEP_START / STEP_END records (tags 60000 / 60001).
--
-- Grain:   (device_id, index_id)
-- Sources: step_trace
-- Stored:  no, a view: read by step_trace_summary (the paired groups, as steps) and by
--          build_issues (the others, as step_marks_unpaired)
-- Follows: msprof's steps from STEP_START / STEP_END records (docs/formats.md#rule-step-marks):
--          the records of tag 60000 (STEP_START) and 60001 (STEP_END) of a device are grouped
--          by their own index id (msprof keys on the index id alone: the model id is not part
--          of the key; the START's model id is kept); a group of exactly one START and one END
--          is a step from the START's time to the END's time, in that order even when the END
--          comes first (msprof subtracts as written). Any other group (a lone START or END,
--          two STARTs, three records...) is no step: msprof skips it with a log line, profetl
--          keeps its row with is_paired false and build_issues counts it.
-- Columns:
--   device_id      -     device
--   index_id       -     the step number the records carry (their index id): the group key
--   model_id       -     model id of the group's first STEP_START by time (of its first record
--                        by time when it has none)
--   start_count    -     STEP_START records of the group
--   end_count      -     STEP_END records of the group
--   is_paired      -     exactly one START and one END: the group is a step
--   start_ns       ns    the STEP_START's time; NULL unless is_paired
--   end_ns         ns    the STEP_END's time; NULL unless is_paired
--   duration_ns    ns    end_ns - start_ns; NULL unless is_paired

with grouped as (
    select
        device_id,
        index_id,
        coalesce(
            arg_min(model_id, ts_ns) filter (where tag_id = 60000),
            arg_min(model_id, ts_ns)
        ) as model_id,
        count(*) filter (where tag_id = 60000) as start_count,
        count(*) filter (where tag_id = 60001) as end_count,
        any_value(ts_ns) filter (where tag_id = 60000) as any_start_ns,
        any_value(ts_ns) filter (where tag_id = 60001) as any_end_ns
    from step_trace
    where tag_id in (60000, 60001)
    group by device_id, index_id
),

paired as (
    select
        *,
        start_count = 1 and end_count = 1 as is_paired
    from grouped
)

select
    device_id,
    index_id,
    model_id,
    start_count,
    end_count,
    is_paired,
    case when is_paired then any_start_ns end as start_ns,
    case when is_paired then any_end_ns end as end_ns,
    case when is_paired then any_end_ns - any_start_ns end as duration_ns
from paired
