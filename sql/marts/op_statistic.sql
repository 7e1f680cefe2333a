-- op_statistic: one row per (device, op type, core type) with executions and time.
--
-- Grain:   (run_id, device_id, op_type, core_type); core_type NULL is a value
-- Sources: stg_export_ops (exported runs); stg_task_instances, stg_task_ops (raw runs)
-- Follows: msprof op_statistic (docs/formats.md#rule-op-statistic):
--          executions of operators with a type, grouped by (op type, core type); Ratio =
--          the group's total time / the device's total * 100. Choices: times in integer ns and
--          the average not rounded (msprof rounds to 0.001 us); executions of tasks without an
--          op type (event records, copies: no operator describes them) are left out, as msprof
--          leaves them. A kernel launched outside any node launch (a task_track without
--          node_basic_info, e.g. AI_CPU data-preparation kernels) has its kernel name as op
--          type (stg_task_ops) and is counted, as msprof counts it; Ratio includes it.
--          Core type: the exported accelerator core (AI_CORE, AI_VECTOR_CORE, MIX_AIC, ...),
--          else the task type.
--          How the op is found: by key where every description of the task says the same,
--          else by the ASOF join on valid_from_ns; same rows (pipeline/jobs/transforms.py).
-- Columns:
--   device_id  -      device
--   op_type    -      operator type
--   core_type  -      core the operator ran on (accelerator core where exported, else its task type)
--   count      -      executions
--   total_ns   ns     sum of execution times
--   min_ns     ns     shortest execution
--   avg_ns     ns     total_ns / count, not rounded
--   max_ns     ns     longest execution
--   ratio_pct  %      total_ns / the device's total of all op types * 100

with exported as (
    select device_id, op_type, coalesce(accelerator_core, task_type) as core_type, dur_ns
    from stg_export_ops
    where has_run and op_type is not null
),

raw_instances as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select *, coalesce(running_ns, complete_ns) as start_ns
    from stg_task_instances
    where is_complete and not exists (select 1 from stg_export_ops)
),

op_keys as (
    -- per (device, stream, task): the operator of every description of it when they all say
    -- the same and the first is valid from the start (the common case; then the ASOF join
    -- would give each execution that one); the other tasks take the ASOF join
    select
        device_id,
        stream_id,
        task_id,
        min(op) as op,
        count(*) = 1 and min(valid_from_ns) = -9223372036854775808 as is_single
    from (
        -- one row per distinct operator of a task: one row, one operator; min(op) then
        -- compares a few structs per task, not one per description
        select device_id, stream_id, task_id, min(valid_from_ns) as valid_from_ns, {
            'op_type': op_type,
            'ge_task_type': ge_task_type
        } as op
        from stg_task_ops
        group by device_id, stream_id, task_id, op_type, ge_task_type
    )
    group by device_id, stream_id, task_id
),

multi_keys as (
    select device_id, stream_id, task_id from op_keys where not is_single
),

multi_ops as (
    -- the descriptions the ASOF join needs: those of tasks without a single operator
    select * from stg_task_ops semi join multi_keys using (device_id, stream_id, task_id)
),

from_raw as (
    -- instances without any description have no op type and are left out below
    select
        i.device_id,
        ok.op.op_type,
        coalesce(ok.op.ge_task_type, i.task_type_name) as core_type,
        i.complete_ns - i.start_ns as dur_ns
    from raw_instances as i
    join op_keys as ok
        on i.device_id = ok.device_id
        and i.stream_id = ok.stream_id
        and i.task_id = ok.task_id
        and ok.is_single
    union all
    select
        i.device_id,
        ops.op_type,
        coalesce(ops.ge_task_type, i.task_type_name) as core_type,
        i.complete_ns - i.start_ns as dur_ns
    from (select * from raw_instances semi join multi_keys using (device_id, stream_id, task_id)) as i
    asof left join multi_ops as ops
        on i.device_id = ops.device_id
        and i.stream_id = ops.stream_id
        and i.task_id = ops.task_id
        and i.start_ns >= ops.valid_from_ns
),

executions as (
    select * from exported
    union all
    select * from from_raw where op_type is not null
),

grouped as (
    select
        device_id,
        op_type,
        core_type,
        count(*) as count,
        sum(dur_ns)::bigint as total_ns,
        min(dur_ns) as min_ns,
        sum(dur_ns)::double / count(*) as avg_ns,
        max(dur_ns) as max_ns
    from executions
    group by device_id, op_type, core_type
)

select
    device_id,
    op_type,
    core_type,
    count,
    total_ns,
    min_ns,
    avg_ns,
    max_ns,
    total_ns * 100.0 / nullif(sum(total_ns) over (partition by device_id), 0) as ratio_pct
from grouped
order by device_id, total_ns desc, op_type, core_type
