-- op_summary: one row per device task execution with its operator, times and (exported runs) PMU values.
--
-- Grain:   (run_id, device_id, start_ns, stream_id, task_id, context_id); context_id NULL is a value
-- Sources: int_op_executions (exported executions, else raw ones)
-- Follows: msprof op_summary (docs/formats.md#rule-op-summary) and torch_npu kernel_details:
--          rows in start order; Task Wait Time = max(start - previous start - previous
--          duration, 0) over the device's whole sorted list, all streams together, 0 for the
--          first row: wait_recomputed_ns. An export's own wait wins (wait_ns): its exporter
--          computed it over its own list of tasks, which is not profetl's (docs/formats.md#export-wait);
--          build_issues counts the rows where the two differ (export_wait_differs). Choices: every execution is a row, also those no operator names (msprof
--          drops tasks without a GE description; here op_name is NULL so nothing is lost); times
--          in integer ns, not rounded us. The executions, exported or raw, are
--          int_op_executions': exported runs take the exporter's association of op and
--          execution and its PMU values (the aic_ or aiv_ side, stg_export_ops); raw runs the
--          op in force at the execution and NULL PMU columns (their recomputed metrics are in
--          ai_core_metrics).
--          Order and wait: each branch sorts its rows once, in the mart's order, and takes
--          the previous row's device and end with lag() over (): a window with an empty OVER
--          keeps, and reads in, the order of its input, as does a plain SELECT (DuckDB's
--          documented order preservation). At most one branch has rows (a run is exported
--          or raw), so UNION ALL, which keeps order too, gives the whole table in order. Raw
--          rows are sorted narrow; their NULL export columns are added after the sort.
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
--   wait_ns               ns     wait before the task: the exporter's own value where the run is an
--                                export whose row has one (Wait Time(us), Task Wait Time(us), waitNs),
--                                else wait_recomputed_ns (docs/formats.md#export-wait)
--   wait_recomputed_ns    ns     idle time before the task on its device as profetl recomputes it
--                                (idle_before_ns, sql/macros/waits.sql), as in Follows
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
    from int_op_executions
    where is_exported
    order by device_id, start_ns, stream_id, task_id, seq
),

raw_executions as (
    -- raw runs: each complete execution with its operator, the columns a raw run fills
    select
        device_id,
        model_id,
        task_id,
        stream_id,
        op_name,
        op_type,
        task_type,
        start_ns,
        dur_ns,
        end_ns,
        block_dim
    from int_op_executions
    where not is_exported
    order by device_id, start_ns, stream_id, task_id, seq
),

exported_waits as (
    select
        *,
        idle_before_ns(lag(device_id) over () = device_id, start_ns, lag(end_ns) over ())
            as wait_recomputed_ns
    from exported
),

raw_waits as (
    select
        *,
        idle_before_ns(lag(device_id) over () = device_id, start_ns, lag(end_ns) over ())
            as wait_recomputed_ns
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
    -- the exporter's own wait where the export has one for the row; else profetl's
    coalesce(exported_wait_ns, wait_recomputed_ns) as wait_ns,
    wait_recomputed_ns,
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
