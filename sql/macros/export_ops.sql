-- export_ops: the exported operator descriptions, each named by the execution it describes, and
-- the exported PMU value of the side an execution used.
--
-- export_ops()
--   a table: every task_ops row of source export, its stream, task and context filled where the
--   export gave none. A torch_npu level0 kernel_details.csv has no Stream ID, Task ID or Context
--   ID column: its rows name an execution by (device, start) only, and the event timeline beside
--   it names every task with the same start, so a row without stream and task takes those of the
--   one exported execution (task_runs) of its device that starts at its start. A row that no
--   execution, or more than one, starts with keeps NULL ids: it joins no execution (stg_export_ops
--   keeps it with has_run false, build_issues counts it as export_ops_without_task).
--   Columns: those of task_ops (docs/tables.md).
--   Read by stg_export_ops and stg_task_ops (docs/formats.md#export-level0).

create or replace macro export_ops() as table
with unkeyed as (
    select distinct device_id, start_ns
    from task_ops
    where source = 'export' and stream_id is null and task_id is null
),

by_start as (
    -- the executions starting at an unkeyed description's start: taken where there is one
    select
        runs.device_id,
        runs.start_ns,
        any_value(runs.stream_id) as stream_id,
        any_value(runs.task_id) as task_id,
        any_value(runs.context_id) as context_id
    from task_runs as runs
    semi join unkeyed on runs.device_id = unkeyed.device_id and runs.start_ns = unkeyed.start_ns
    where runs.source in ('db_task', 'timeline', 'kernel_details', 'op_summary', 'task_time_csv')
    group by runs.device_id, runs.start_ns
    having count(*) = 1
)

select
    ops.* replace (
        coalesce(ops.stream_id, s.stream_id) as stream_id,
        coalesce(ops.task_id, s.task_id) as task_id,
        if(ops.stream_id is null and ops.task_id is null, s.context_id, ops.context_id) as context_id
    )
from task_ops as ops
left join by_start as s
    on ops.stream_id is null
    and ops.task_id is null
    and ops.device_id = s.device_id
    and ops.start_ns = s.start_ns
where ops.source = 'export';

-- side_value(side, plain, aiv, aic)
--   the exported PMU value of one metric for an execution: the unprefixed column where the
--   export has one (a chip of one core type), else the vector side's (aiv_<metric>) when the
--   execution's side is 'aiv', else the cube side's (aic_<metric>)
--   (docs/formats.md#rule-export-metrics). Read by stg_export_ops.
create or replace macro side_value(side, plain, aiv, aic) as
    coalesce(plain, case when side = 'aiv' then aiv else aic end);
