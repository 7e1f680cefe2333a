-- int_pmu_records_ops: one row per AI Core task PMU record with the operator in force at its time;
-- none for an exported run.
--
-- Grain:   (device_id, record_kind, seq)
-- Sources: stg_pmu_records, stg_task_ops, int_op_keys, stg_export_ops
-- Stored:  no, a view: read by two marts, one of which needs a single column of it; cheaper
--          to compute in each than to store its wide rows (pipeline/jobs/transforms.py)
-- Follows: docs/formats.md#rule-op-name with the descriptions of stg_task_ops, as
--          int_task_executions applies it to executions: the description of the record's
--          (device, stream, task) valid last at or before the record's time ts_ns (the task's
--          end); a record without a time, or before every description valid from a time of
--          its own, has none. Generations 2 and 3 take their block dim from that operator
--          (docs/formats.md#rule-pmu-record-time).
--          A run holding any exported row (stg_export_ops) is an exported run, whose PMU
--          values are the exporter's (int_op_executions, the same precedence): its records
--          are not read (the exported readers write none).
--          How: op_in_force (sql/macros/task_ops.sql), as int_task_executions: by a hash join
--          on the key where every description of the task says the same and the first is
--          valid from the start, else by the ASOF join on valid_from_ns; same rows.
-- Columns:
--   device_id          -       device
--   seq                -       record index within the aicore stream
--   stream_id          -       stream id
--   task_id            -       task id
--   block_dim          blocks  blocks of the task (EVENT_COUNT block); NULL for generations 2 and 3
--   total_cycles       cycles  task cycles summed over blocks
--   ts_ns              ns      record time (task end); NULL for an aicore.data record without an execution
--   aic_freq_mhz       MHz     AI Core frequency of the device (info.json); bandwidths use it
--   ai_core_num        cores   AI Cores of the device
--   vec_cycles         cycles  event 0x08 vec_busy_cycles; NULL when not programmed
--   mac_cycles         cycles  event 0x0a cube_busy_cycles
--   scalar_cycles      cycles  event 0x09 scalar_busy_cycles
--   mte1_cycles        cycles  event 0x0b mte1_busy_cycles
--   mte2_cycles        cycles  event 0x0c mte2_busy_cycles
--   mte3_cycles        cycles  event 0x0d mte3_busy_cycles
--   icache_req         count   event 0x54 icache_req
--   icache_miss        count   event 0x55 icache_miss
--   ub_read_req        count   event 0x15
--   ub_write_req       count   event 0x16
--   l1_read_req        count   event 0x31
--   l1_write_req       count   event 0x32
--   l2_read_req        count   event 0x0f
--   l2_write_req       count   event 0x10
--   main_read_req      count   event 0x12
--   main_write_req     count   event 0x13
--   record_kind        -       event_count, aic_pmu or ffts_pmu
--   time_freq_mhz      MHz     AI Core frequency for aicore_time (stg_pmu_records)
--   chip               -       chip of the device (devices.chip)
--   op_name            -       operator name; NULL when no description is in force
--   op_block_dim       blocks  block dim of that operator
--   has_task_ops       -       some description in stg_task_ops names the record's (device, stream, task),
--                              whether or not one is in force at its time (build_issues counts the others)

with raw_records as not materialized (
    -- a filter read by both of op_in_force's branches: inlined rather than stored first
    -- an exported run's PMU values are the exporter's (int_op_executions): its records, if it
    -- had any, are not read, by the precedence of int_op_executions
    select * from stg_pmu_records where not exists (select 1 from stg_export_ops)
)

select * exclude (op_model_id, op_type, op_ge_task_type)
from op_in_force('raw_records', r.ts_ns, 'stg_task_ops', 'int_op_keys')
