-- int_op_executions: one row per device task execution of the run with the operator it ran:
-- the exported executions of an exported run, else the complete task instances of a raw run.
--
-- Grain:   (device_id, stream_id, task_id, start_ns, context_id, seq) for an exported run;
--          (device_id, record_kind, stream_id, task_id, seq) for a raw run
-- Sources: stg_export_ops (exported runs), int_task_executions (raw runs)
-- Stored:  no, a view: each reader takes a few of its columns and one of its two branches;
--          storing its wide rows would cost more than the filter that makes them
--          (pipeline/jobs/transforms.py)
-- Follows: the one place that chooses between an exported and a raw execution, for
--          op_summary, op_statistic, ai_core_metrics and int_warnings (advice). A run holding
--          any exported row (stg_export_ops) is an exported run: its executions are the
--          exporter's (has_run), with the exporter's association of op and execution and its
--          PMU values (docs/formats.md#rule-op-summary), and its raw task instances are not
--          read. Else the executions are int_task_executions' complete instances with their
--          op (in force at int_task_executions' start_ns: RUNNING, else PENDING, WAITING,
--          COMPLETE; docs/formats.md#rule-op-name); start = RUNNING, else
--          COMPLETE (an Ascend310 instance can miss RUNNING), end = COMPLETE, task type =
--          the operator's GE task type, else the device task type name; the export columns
--          (exported_wait_ns among them) are NULL. int_pmu_records_ops keeps the same precedence for PMU records.
-- Columns:
--   device_id              -       device
--   is_exported            -       true for an exported execution, false for a raw instance
--   record_kind            -       time_line, ts_memcpy or task_run (raw runs); NULL for exported runs
--   stream_id              -       stream id
--   task_id                -       task id
--   context_id             -       FFTS+ context id; NULL when none (and for raw runs)
--   seq                    -       exported: the execution's row index in its source; raw: the instance's
--                                  0-based number within its (stream, task)
--   model_id               -       model id (4294967295 = none); NULL when unknown
--   op_name                -       operator name; NULL when no description names the execution
--   op_type                -       operator type
--   op_state               -       dynamic or static, where exported
--   task_type              -       exported: the task type as exported; raw: the operator's GE task type,
--                                  else the device task type name
--   accelerator_core       -       core the operator ran on, where exported
--   start_ns               ns      execution start (exported runs: wall clock; raw runs: RUNNING, else COMPLETE)
--   dur_ns                 ns      end_ns - start_ns
--   end_ns                 ns      execution end
--   block_dim              blocks  blocks the operator ran
--   mix_block_dim          blocks  blocks of the second core type of a MIX operator, where exported
--   input_shapes           -       input shapes as exported
--   input_data_types       -       input data types
--   input_formats          -       input formats
--   output_shapes          -       output shapes
--   output_data_types      -       output data types
--   output_formats         -       output formats
--   exported_wait_ns       ns      the exporter's own wait before the execution, as written
--                                  (stg_export_ops wait_ns); NULL where the export has none and
--                                  for raw runs
--   has_metrics            -       the export holds PMU values for the execution; false for raw runs
--   aicore_time_us         us      exported AI Core time of the side the task ran on (stg_export_ops)
--   total_cycles           cycles  exported total cycles of that side
--   vec_time_us            us      exported Vector instruction time
--   vec_ratio              -       exported Vector ratio
--   mac_time_us            us      exported Cube instruction time
--   mac_ratio              -       exported Cube ratio
--   scalar_time_us         us      exported Scalar instruction time
--   scalar_ratio           -       exported Scalar ratio
--   mte1_time_us           us      exported MTE1 time
--   mte1_ratio             -       exported MTE1 ratio
--   mte2_time_us           us      exported MTE2 time
--   mte2_ratio             -       exported MTE2 ratio
--   mte3_time_us           us      exported MTE3 time
--   mte3_ratio             -       exported MTE3 ratio
--   icache_miss_rate       -       exported I-Cache miss rate
--   memory_bound           -       exported memory_bound
--   ub_read_bw_gbps        GB/s    exported Unified Buffer read bandwidth
--   ub_write_bw_gbps       GB/s    exported Unified Buffer write bandwidth
--   l1_read_bw_gbps        GB/s    exported L1 read bandwidth
--   l1_write_bw_gbps       GB/s    exported L1 write bandwidth
--   l2_read_bw_gbps        GB/s    exported L2 read bandwidth
--   l2_write_bw_gbps       GB/s    exported L2 write bandwidth
--   main_mem_read_bw_gbps  GB/s    exported main memory read bandwidth
--   main_mem_write_bw_gbps GB/s    exported main memory write bandwidth
--   cube_utilization_pct   %       exported cube utilisation

select
    device_id,
    true as is_exported,
    null::varchar as record_kind,
    stream_id,
    task_id,
    context_id,
    seq,
    model_id,
    op_name,
    op_type,
    op_state,
    task_type,
    accelerator_core,
    start_ns,
    dur_ns,
    end_ns,
    block_dim,
    mix_block_dim,
    input_shapes,
    input_data_types,
    input_formats,
    output_shapes,
    output_data_types,
    output_formats,
    wait_ns as exported_wait_ns,
    has_metrics,
    aicore_time_us,
    total_cycles,
    vec_time_us,
    vec_ratio,
    mac_time_us,
    mac_ratio,
    scalar_time_us,
    scalar_ratio,
    mte1_time_us,
    mte1_ratio,
    mte2_time_us,
    mte2_ratio,
    mte3_time_us,
    mte3_ratio,
    icache_miss_rate,
    memory_bound,
    ub_read_bw_gbps,
    ub_write_bw_gbps,
    l1_read_bw_gbps,
    l1_write_bw_gbps,
    l2_read_bw_gbps,
    l2_write_bw_gbps,
    main_mem_read_bw_gbps,
    main_mem_write_bw_gbps,
    cube_utilization_pct
from stg_export_ops
where has_run
union all by name
select
    device_id,
    false as is_exported,
    record_kind,
    stream_id,
    task_id,
    instance_no as seq,
    model_id,
    op_name,
    op_type,
    coalesce(ge_task_type, task_type_name) as task_type,
    coalesce(running_ns, complete_ns) as start_ns,
    complete_ns - coalesce(running_ns, complete_ns) as dur_ns,
    complete_ns as end_ns,
    block_dim,
    false as has_metrics
from int_task_executions
where is_complete and not exists (select 1 from stg_export_ops)
