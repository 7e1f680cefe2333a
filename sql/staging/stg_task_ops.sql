-- stg_task_ops: one row per GE task description: the operator a (stream, task) runs.
--
-- Grain:   (device_id, source_file, seq)
-- Sources: task_ops (source ge_task_desc)
-- Follows: msprof's op-name lookup by (task_id, stream_id) in GE TaskInfo
--          (analysis-and-exports §A2.4). Marts pick, with an ASOF join on valid_from_ns,
--          the description reported last before a task ran (a task id may be reused by
--          another op later), else the first one. Runtime.task_track rows carry no op name
--          and are not used for names.
-- Columns:
--   device_id      -       device
--   stream_id      -       stream id
--   task_id        -       task id
--   batch_id       -       batch id (high half of the producer's 32-bit task id)
--   model_id       -       model id
--   op_name        -       operator name
--   op_type        -       operator type
--   ge_task_type   -       GE task type (AI_CORE, AI_CPU, ...)
--   block_dim      blocks  block dim
--   ts_ns          ns      host time the description was reported
--   valid_from_ns  ns      from when the description names the (stream, task): its ts_ns, but
--                          the minimum BIGINT for the first description of a (stream, task), so
--                          that a task seen before any description takes the first one
--   seq            -       record index

select
    device_id,
    stream_id,
    task_id,
    batch_id,
    model_id,
    op_name,
    op_type,
    task_type as ge_task_type,
    block_dim,
    ts_ns,
    case
        when row_number() over (partition by device_id, stream_id, task_id order by ts_ns, seq) = 1
            then -9223372036854775808
        else ts_ns
    end as valid_from_ns,
    seq
from task_ops
where source = 'ge_task_desc'
