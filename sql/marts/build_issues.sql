-- build_issues: one row per (device, check) that found something while building the reports.
--
-- Grain:   (run_id, device_id, kind)
-- Sources: stg_task_instances, stg_pmu_records, int_pmu_records_ops, stg_export_ops,
--          int_op_executions, stg_step_marks, stg_all_reduces, int_step_breakdown, stg_step_times,
--          stg_step_marks_steps, int_aicpu_ops
-- Follows: nothing in msprof, which drops these silently (docs/formats.md#rule-silent-drops);
--          they are counted so that no loss goes unreported.
--          pmu_without_op and pmu_without_block_dim take the record's op from
--          int_pmu_records_ops, as ai_core_metrics does: a record whose (stream, task) no
--          description names (has_task_ops false), and one whose block dim (its own, else its
--          op's) is 0 or unknown.
--          export_wait_differs counts an export's executions whose own wait (the exporter's,
--          op_summary.wait_ns) differs from the wait profetl recomputes (idle_before_ns over
--          the device's executions in op_summary's order, op_summary.wait_recomputed_ns) by
--          more than 2 ns: the printed precision of a CSV export (start, previous start,
--          previous duration and wait each rounded to 0.001 us); a database's integer ns are
--          exact, so 2 ns hides no real difference there either (docs/formats.md#export-wait).
--          export_step_breakdown_differs counts the steps whose exported breakdown
--          (stg_step_times: step_trace_time.csv, analysis.db StepTraceTime) and profetl's
--          recomputation from the events (int_step_breakdown, joined on the step number)
--          differ, in a column both hold, by more than 1 us + 1 ns per piece summed: the
--          exporter subtracts wall-clock times held as float64 us (0.25 us apart at today's
--          dates: up to 0.25 us per difference, stage and preparing) and sums durations printed
--          to 0.001 us, fractions of a ns each (docs/formats.md#export-step-breakdown).
--          open_last_iteration counts models (one open iteration each) whose step trace ends
--          inside an iteration, as msprof drops it from its step trace.
--          step_marks_unpaired counts the groups of STEP_START / STEP_END records (tags 60000 /
--          60001, one group per device and index id: stg_step_marks_steps) that are not exactly
--          one START and one END, which msprof skips with a log line and which make no step;
--          the message names their index ids (the first 20) (docs/formats.md#rule-step-marks).
--          aicpu_without_op counts the AI CPU task records (int_aicpu_ops) that get no op: no
--          single AI CPU execution of their device holds them, or the one that does has no op,
--          and they carry no node name of their own: kept in aicpu_ops with a NULL op_name
--          (docs/formats.md#rule-aicpu).
-- Columns:
--   device_id      -     device
--   kind           -     dropped_task_instances, pmu_without_op, pmu_without_block_dim,
--                        task_runs_without_time, pmu_without_task, export_metrics_without_task,
--                        export_ops_without_task, export_wait_differs, export_step_breakdown_differs,
--                        open_last_iteration, all_reduce_without_end, step_marks_unpaired,
--                        aicpu_without_op
--   count          -     how many instances or records
--   message        -     one-line explanation (step_marks_unpaired: with the groups' index ids)

with dropped as (
    select device_id, sum(dropped_instances)::bigint as n
    from stg_task_instances
    group by device_id
),

pmu_ops as (
    -- one pass over the records with their ops (a view) for both counts
    select
        device_id,
        count(*) filter (where not has_task_ops) as unnamed,
        count(*) filter (where coalesce(block_dim, op_block_dim, 0) = 0) as no_blocks
    from int_pmu_records_ops
    group by device_id
),

pmu_unnamed as (
    select device_id, unnamed as n from pmu_ops where unnamed > 0
),

pmu_no_blocks as (
    select device_id, no_blocks as n from pmu_ops where no_blocks > 0
),

runs_untimed as (
    select device_id, count(*) as n
    from stg_task_instances
    where not has_states and not is_complete
    group by device_id
),

pmu_untimed as (
    select device_id, count(*) as n
    from stg_pmu_records
    where ts_ns is null
    group by device_id
),

metrics_unmatched as (
    select device_id, count(*) as n
    from stg_export_ops
    where not has_run and has_metrics
    group by device_id
),

ops_unmatched as (
    select device_id, count(*) as n
    from stg_export_ops
    where not has_run and has_op
    group by device_id
),

export_waits as (
    -- op_summary's order; the raw branch of int_op_executions is not read (is_exported)
    select
        device_id,
        exported_wait_ns,
        idle_before_ns(lag(device_id) over w = device_id, start_ns, lag(end_ns) over w) as wait_recomputed_ns
    from int_op_executions
    where is_exported
    window w as (order by device_id, start_ns, stream_id, task_id, seq)
),

waits_differ as (
    select device_id, count(*) as n
    from export_waits
    where abs(exported_wait_ns - wait_recomputed_ns) > 2
    group by device_id
),

breakdowns_differ as (
    select b.device_id, count(*) as n
    from int_step_breakdown as b
    inner join stg_step_times as st
        on b.device_id = st.device_id
        and b.step_id = st.step_id
    where
        greatest(
            abs(st.computing_ns - b.computing_ns),
            abs(st.communication_ns - b.communication_ns),
            abs(st.communication_not_overlapped_ns - b.communication_not_overlapped_ns),
            abs(st.overlapped_ns - b.overlapped_ns),
            abs(st.free_ns - b.free_ns),
            abs(st.stage_ns - b.stage_ns),
            abs(st.bubble_ns - b.bubble_ns),
            abs(
                st.communication_not_overlapped_exclude_receive_ns
                - b.communication_not_overlapped_exclude_receive_ns
            ),
            abs(st.preparing_ns - b.preparing_ns)
        ) > 1000 + b.piece_count
    group by b.device_id
),

open_iterations as (
    select device_id, count(distinct model_id) as n
    from stg_step_marks
    where model_ends_open
    group by device_id
),

reduces_unended as (
    select device_id, count(*) as n
    from stg_all_reduces
    where end_ns is null
    group by device_id
),

marks_unpaired as (
    select
        device_id,
        count(*) as n,
        -- the first 20 index ids, so that a dump of many such groups keeps a one-line message
        array_to_string(list(index_id order by index_id)[1:20], ', ')
        || case when count(*) > 20 then ', ...' else '' end as index_ids
    from stg_step_marks_steps
    where not is_paired
    group by device_id
),

aicpu_unnamed as (
    select
        device_id,
        count(*) as n,
        count(*) filter (where candidates > 1) as ambiguous
    from int_aicpu_ops
    where op_name is null
    group by device_id
)

select device_id, kind, count, message
from (
    select
        device_id,
        'dropped_task_instances' as kind,
        n as count,
        'task instance(s) without a COMPLETE state; left out of task_scheduler and topdown_inference'
            as message
    from dropped
    where n > 0
    union all
    select
        device_id,
        'pmu_without_op',
        n,
        'AI Core PMU record(s) whose (stream, task) has no GE task description; op_name is NULL'
    from pmu_unnamed
    union all
    select
        device_id,
        'pmu_without_block_dim',
        n,
        'AI Core PMU record(s) with block dim 0 or unknown; aicore_time and the *_time columns are NULL'
    from pmu_no_blocks
    union all
    select
        device_id,
        'task_runs_without_time',
        n,
        'task execution(s) without a start log or without a HWTS frequency; left out of task_scheduler and topdown_inference'  -- noqa: LT05
    from runs_untimed
    union all
    select
        device_id,
        'pmu_without_task',
        n,
        'AI Core PMU record(s) with no AI Core task execution to take their time from; op_name is NULL'
    from pmu_untimed
    union all
    select
        device_id,
        'export_metrics_without_task',
        n,
        'exported PMU row(s) naming a (stream, task, start) that no exported execution has; left out of ai_core_metrics and op_summary'  -- noqa: LT05
    from metrics_unmatched
    union all
    select
        device_id,
        'export_ops_without_task',
        n,
        'exported operator row(s) that name no exported execution: no (stream, task, start) of one, or (a level0 row without stream and task) no single execution starting at their start; left out of op_summary and op_statistic'  -- noqa: LT05
    from ops_unmatched
    union all
    select
        device_id,
        'export_wait_differs',
        n,
        'exported execution(s) whose exporter-written wait and the one profetl recomputes are more than 2 ns apart; op_summary.wait_ns keeps the exporter''s, wait_recomputed_ns profetl''s'  -- noqa: LT05
    from waits_differ
    union all
    select
        device_id,
        'export_step_breakdown_differs',
        n,
        'step(s) whose exported breakdown (step_trace_time, StepTraceTime) and profetl''s recomputation of it out of the events differ by more than 1 us + 1 ns per piece; step_trace_summary keeps both'  -- noqa: LT05
    from breakdowns_differ
    union all
    select
        device_id,
        'open_last_iteration',
        n,
        'step-trace iteration(s) still open when the step trace ends (one per model at most); left out of step_trace_summary, step_trace_reduces and topdown_inference'  -- noqa: LT05
    from open_iterations
    union all
    select
        device_id,
        'all_reduce_without_end',
        n,
        'all-reduce range(s) whose start has no end record in its iteration; kept in step_trace_reduces with a NULL end'  -- noqa: LT05
    from reduces_unended
    union all
    select
        device_id,
        'step_marks_unpaired',
        n,
        'group(s) of STEP_START / STEP_END records (tags 60000 / 60001) of one index id that are not one START and one END; no step made of them (index ids: '  -- noqa: LT05
        || index_ids
        || ')'
    from marks_unpaired
    union all
    select
        device_id,
        'aicpu_without_op',
        n,
        'AI CPU task record(s) that no single AI CPU execution of the device with an op holds ('
        || ambiguous
        || ' held by more than one) and that name no node; kept in aicpu_ops with op_name NULL'
    from aicpu_unnamed
)
order by device_id, kind
