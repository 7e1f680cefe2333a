-- int_op_keys: one row per (device, stream, task) with operator descriptions: whether one
-- operator describes it throughout, and that operator.
--
-- Grain:   (device_id, stream_id, task_id)
-- Sources: stg_task_ops
-- Follows: docs/formats.md#rule-op-name. The operator of an execution or a PMU record is the
--          description of its (device, stream, task) valid last at or before its time (an ASOF
--          join on valid_from_ns). When every description of a task names the same operator
--          and the first is valid from the start (the common case), that join gives every
--          execution and record of the task this one operator: the readers (int_task_executions,
--          int_pmu_records_ops) then take it by a hash join on the key, and give the ASOF join
--          only the other tasks (is_single false) and their descriptions: the same rows, a
--          fraction of the work (pipeline/jobs/transforms.py).
-- Columns:
--   device_id      -       device
--   stream_id      -       stream id
--   task_id        -       task id
--   is_single      -       one operator (model, name, type, GE task type, block dim) describes the task,
--                          valid from the start
--   model_id       -       model id of that operator; NULL unless is_single
--   op_name        -       operator name; NULL unless is_single
--   op_type        -       operator type; NULL unless is_single
--   ge_task_type   -       GE task type of the operator; NULL unless is_single
--   block_dim      blocks  block dim of the operator; NULL unless is_single

select
    device_id,
    stream_id,
    task_id,
    is_single,
    case when is_single then op.model_id end as model_id,
    case when is_single then op.op_name end as op_name,
    case when is_single then op.op_type end as op_type,
    case when is_single then op.ge_task_type end as ge_task_type,
    case when is_single then op.block_dim end as block_dim
from (
    select
        device_id,
        stream_id,
        task_id,
        min(op) as op,
        count(*) = 1 and min(valid_from_ns) = -9223372036854775808 as is_single
    from (
        -- one row per distinct operator of a task; min(op) then compares a few structs per
        -- task, not one per description
        select
            device_id, stream_id, task_id, min(valid_from_ns) as valid_from_ns, {
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
)
