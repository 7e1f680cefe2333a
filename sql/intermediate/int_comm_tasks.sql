-- int_comm_tasks: one row per communication task of a device with the op that ran it and the
-- iteration (training step) it counts in.
--
-- Grain:   (device_id, start_ns, plane_id, task_type, stream_id, task_id); NULLs are values
-- Sources: stg_comm_tasks, stg_comm_ops, int_step_windows
-- Follows: MindInsight's HCCL analysis (docs/formats.md#rule-comm-tasks): a task belongs to the
--          op of its device that started last at or before the task's start (MindInsight tags
--          each task with the last op starting at or before it); profetl also asks that the op
--          has not ended before the task starts, and takes the op the source names (a
--          database's COMMUNICATION_TASK_INFO.name) for a task no op's span holds. The iteration
--          is the one whose stretch holds the op's start (int_step_windows: the step
--          breakdown's placing rule, by which the op's Communication counts in that iteration
--          too), or the task's own start for a task of no op; NULL outside every iteration
--          (a device without iterations, a task before the first or after the last).
-- Columns:
--   device_id       -      device
--   model_id        -      model id of the iteration; NULL without one
--   iteration_id    -      1-based number of the iteration within (device, model); NULL outside every iteration
--   step_id         -      the step number of the iteration (stg_iterations); NULL as iteration_id
--   op_name         -      the op that ran the task (its name as exported); NULL for a task of no op
--   op_start_ns     ns     start of that op; NULL for a task no op's span holds
--   op_end_ns       ns     end of that op; NULL as op_start_ns
--   plane_id        -      plane the task ran on
--   stream_id       -      stream id
--   task_id         -      task id
--   task_type       -      task type as exported
--   start_ns        ns     task start
--   end_ns          ns     task end
--   duration_ns     ns     end_ns - start_ns
--   is_wait         -      a Notify_Wait task
--   moves_data      -      a Memcpy, Reduce_Inline or RDMASend task
--   is_transit      -      msprof's transit task (stg_comm_tasks)
--   link_src_rank   -      source rank of the link (stg_comm_tasks)
--   link_dst_rank   -      destination rank of the link
--   transport_type  -      SDMA, RDMA or LOCAL
--   link_type       -      HCCS, PCIE, SIO, ON_CHIP, ... as exported
--   size_bytes      bytes  bytes the task moved, as exported

with ops as (
    select device_id, op_name, start_ns, end_ns from stg_comm_ops
),

with_op as (
    select
        t.*,
        o.op_name as spanning_op,
        o.start_ns as o_start_ns,
        o.end_ns as o_end_ns
    from stg_comm_tasks as t
    asof left join ops as o
        on t.device_id = o.device_id and t.start_ns >= o.start_ns
),

own_op as (
    select
        * exclude (spanning_op, o_start_ns, o_end_ns, op_name),
        coalesce(o_end_ns >= start_ns, false) as in_op,
        case when coalesce(o_end_ns >= start_ns, false) then spanning_op else op_name end as op_name,
        case when coalesce(o_end_ns >= start_ns, false) then o_start_ns end as op_start_ns,
        case when coalesce(o_end_ns >= start_ns, false) then o_end_ns end as op_end_ns
    from with_op
),

placed as (
    select
        t.*,
        w.model_id as w_model_id,
        w.iteration_id as w_iteration_id,
        w.step_id as w_step_id,
        w.until_ns as w_until_ns
    from own_op as t
    asof left join int_step_windows as w
        on t.device_id = w.device_id and coalesce(t.op_start_ns, t.start_ns) >= w.start_ns
)

select
    device_id,
    case when in_window then w_model_id end as model_id,
    case when in_window then w_iteration_id end as iteration_id,
    case when in_window then w_step_id end as step_id,
    op_name,
    op_start_ns,
    op_end_ns,
    plane_id,
    stream_id,
    task_id,
    task_type,
    start_ns,
    end_ns,
    duration_ns,
    is_wait,
    moves_data,
    is_transit,
    link_src_rank,
    link_dst_rank,
    transport_type,
    link_type,
    size_bytes
from (
    select *, coalesce(coalesce(op_start_ns, start_ns) < w_until_ns, false) as in_window from placed
)
