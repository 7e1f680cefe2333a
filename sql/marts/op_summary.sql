-- op_summary: one row per device task execution with its operator, times and (exported runs) PMU values.
--
-- Grain:   (run_id, device_id, start_ns, stream_id, task_id, context_id); context_id NULL is a value
-- Sources: stg_export_ops (exported runs); stg_task_instances, stg_task_ops
--          (raw runs)
-- Follows: msprof op_summary (docs/formats.md#rule-op-summary) and torch_npu kernel_details:
--          rows in start order; Task Wait Time = max(start - previous start - previous
--          duration, 0) over the device's whole sorted list, all streams together, 0 for the
--          first row. Choices: every execution is a row, also those no operator names (msprof
--          drops tasks without a GE description; here op_name is NULL so nothing is lost); times
--          in integer ns, not rounded us. Exported runs take the exporter's association of op
--          and execution and its PMU values (the aic_ or aiv_ side, stg_export_ops); raw
--          runs take the op the stg_task_ops association gives and leave the PMU columns NULL
--          (their recomputed metrics are in ai_core_metrics).
--          Order and wait: each branch sorts its rows once, in the mart's order, and takes
--          the previous row's device and end with lag() over (): a window with an empty OVER
--          keeps, and reads in, the order of its input, as does a plain SELECT (DuckDB's
--          documented order preservation). At most one branch has rows (a run is exported
--          or raw), so UNION ALL, which keeps order too, gives the whole table in order. Raw
--          rows are sorted narrow; their NULL export columns are added after the sort.
--          How the op is found: by key where every description of the task says the same,
--          else by the ASOF join on valid_from_ns; same rows (pipeline/jobs/transforms.py).
-- Columns:
--   device_id             -      device
--   model_id              -      model id (4294967295 = none): as exported, GE's task description, or the
--                                model-level record enclosing the op's node (stg_task_ops); NULL when unknown
--   task_id               -      task id
--   stream_id             -      stream id
--   context_id            -      FFTS+ context id; NULL when none
--   op_name               -      operator name; NULL when no description names the task
--   op_type               -      operator type
--   op_state              -      dynamic or static, where exported
--   task_type             -      task type (GE / exported task type, else the device task type name)
--   accelerator_core      -      core the operator ran on, where exported
--   start_ns              ns     execution start (exported runs: wall clock; raw runs: the run's clock)
--   dur_ns                ns     execution time: end - start (Ascend310: complete - running)
--   wait_ns               ns     idle time before the task on its device, as in Follows
--   block_dim             blocks blocks the operator ran
--   mix_block_dim         blocks blocks of the second core type of a MIX operator
--   input_shapes          -      input shapes as exported
--   input_data_types      -      input data types
--   input_formats         -      input formats
--   output_shapes         -      output shapes
--   output_data_types     -      output data types
--   output_formats        -      output formats
--   aicore_time_us        us     exported AI Core time of the side the task ran on; NULL for raw runs
--   total_cycles          cycles exported total cycles of that side
--   mac_ratio             -      exported Cube ratio
--   vec_ratio             -      exported Vector ratio
--   scalar_ratio          -      exported Scalar ratio
--   mte2_ratio            -      exported MTE2 ratio
--   memory_bound          -      exported memory_bound
--   cube_utilization_pct  %      exported cube utilisation

with exported as (
    -- every column of the exported executions; the mart's are picked at the end
    select *
    from stg_export_ops
    where has_run
    order by device_id, start_ns, stream_id, task_id, seq
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
            'model_id': model_id,
            'op_name': op_name,
            'op_type': op_type,
            'ge_task_type': ge_task_type,
            'block_dim': block_dim
        } as op
        from stg_task_ops
        group by device_id, stream_id, task_id, model_id, op_name, op_type, ge_task_type, block_dim
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

raw_instances as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select *, coalesce(running_ns, complete_ns) as start_ns
    from stg_task_instances
    where is_complete and not exists (select 1 from stg_export_ops)
),

with_op as (
    select i.*, ok.op
    from (select * from raw_instances anti join multi_keys using (device_id, stream_id, task_id)) as i
    left join op_keys as ok
        on i.device_id = ok.device_id
        and i.stream_id = ok.stream_id
        and i.task_id = ok.task_id
    union all
    select i.*, {'model_id': ops.model_id, 'op_name': ops.op_name, 'op_type': ops.op_type,
                 'ge_task_type': ops.ge_task_type, 'block_dim': ops.block_dim} as op
    from (select * from raw_instances semi join multi_keys using (device_id, stream_id, task_id)) as i
    asof left join multi_ops as ops
        on i.device_id = ops.device_id
        and i.stream_id = ops.stream_id
        and i.task_id = ops.task_id
        and i.start_ns >= ops.valid_from_ns
),

raw_executions as (
    select
        device_id,
        op.model_id,
        task_id,
        stream_id,
        op.op_name,
        op.op_type,
        coalesce(op.ge_task_type, task_type_name) as task_type,
        start_ns,
        complete_ns - start_ns as dur_ns,
        complete_ns as end_ns,
        op.block_dim
    from with_op
    order by device_id, start_ns, stream_id, task_id, instance_no
),

exported_waits as (
    select
        *,
        case
            when lag(device_id) over () = device_id then coalesce(greatest(start_ns - lag(end_ns) over (), 0), 0)
            else 0  -- the device's first row
        end as wait_ns
    from exported
),

raw_waits as (
    select
        *,
        case
            when lag(device_id) over () = device_id then greatest(start_ns - lag(end_ns) over (), 0)
            else 0  -- the device's first row
        end as wait_ns
    from raw_executions
)

select
    device_id,
    model_id,
    task_id,
    stream_id,
    context_id,
    op_name,
    op_type,
    op_state,
    task_type,
    accelerator_core,
    start_ns,
    dur_ns,
    wait_ns,
    block_dim,
    mix_block_dim,
    input_shapes,
    input_data_types,
    input_formats,
    output_shapes,
    output_data_types,
    output_formats,
    aicore_time_us,
    total_cycles,
    mac_ratio,
    vec_ratio,
    scalar_ratio,
    mte2_ratio,
    memory_bound,
    cube_utilization_pct
from (
    -- the raw branch has no export columns: BY NAME fills them with NULL
    select * from exported_waits
    union all by name
    select * from raw_waits
)
