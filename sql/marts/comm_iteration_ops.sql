-- comm_iteration_ops: one row per communication op of an iteration (training step) of a device:
-- its communication cost, wait cost and transit, from the tasks it ran.
--
-- Grain:   (run_id, device_id, model_id, iteration_id, op_name); model_id, iteration_id and op_name NULL are values
-- Sources: int_comm_tasks
-- Follows: MindInsight's HCCL analysis (its hccl_raw file: per step and per communication op,
--          communication cost and wait cost) and msprof's communication analysis (its
--          communication.json: Transit Time, Transit Size and Bandwidth of an op), restated in
--          docs/formats.md#rule-comm-tasks. The tasks of an op and their iteration come from
--          int_comm_tasks (an op's tasks count in the iteration whose stretch holds the op's
--          start). Of an op's tasks in an iteration: communication = the summed durations of
--          every task but Notify_Wait (MindInsight's communication cost); wait = the summed
--          durations of the Notify_Wait tasks (MindInsight's wait cost, msprof's Wait Time);
--          transit = the summed durations and bytes of the Memcpy / Reduce_Inline tasks over
--          SDMA off the chip and of the RDMASend tasks (msprof's transit); bandwidth = transit
--          bytes / transit time. Choices: every plane counts (msprof's time figures take only
--          the plane it marks as master, which the exports read here do not mark; its
--          bandwidth figures take every plane, as here); integer ns and bytes; an op that ran
--          several times in an iteration is one row (op_count says how often); the tasks of no
--          op are a row with a NULL op_name, those of no iteration a row with a NULL
--          iteration_id. A run without communication tasks has no rows.
-- Columns:
--   device_id                 -      device ("Device_id")
--   model_id                  -      model id of the iteration; NULL without one ("Model ID")
--   iteration_id              -      1-based number of the iteration within (device, model), as in
--                                    step_trace_summary; NULL outside every iteration ("Iteration ID")
--   step_id                   -      the step number of the iteration ("Step")
--   op_name                   -      the op as exported (Default/AllReduce-op534_0, hcom_allReduce__210_0_1);
--                                    NULL for tasks of no op ("Op Name")
--   op_count                  -      executions of the op whose tasks count in the iteration; 0 for an op
--                                    only its tasks' source names, with no span of its own ("Op Count")
--   op_ns                     ns     summed spans of those executions, as the exporter gives each (msprof's
--                                    Elapse Time of one); NULL without one ("Op Time")
--   task_count                -      tasks of the op in the iteration ("Task Count")
--   communication_ns          ns     summed durations of the tasks other than Notify_Wait ("Communication Cost")
--   wait_ns                   ns     summed durations of the Notify_Wait tasks ("Wait Cost")
--   transit_ns                ns     summed durations of the transit tasks ("Transit Time")
--   transit_bytes             bytes  summed bytes of the transit tasks ("Transit Size")
--   transit_bandwidth_gbps    GB/s   transit_bytes / transit_ns (bytes per ns); NULL without transit time
--                                    ("Bandwidth")

with per_op as (
    select
        device_id,
        model_id,
        iteration_id,
        any_value(step_id) as step_id,
        op_name,
        count(distinct op_start_ns) as op_count,
        count(*) as task_count,
        coalesce(sum(duration_ns) filter (where not is_wait), 0) as communication_ns,
        coalesce(sum(duration_ns) filter (where is_wait), 0) as wait_ns,
        coalesce(sum(duration_ns) filter (where is_transit), 0) as transit_ns,
        coalesce(sum(size_bytes) filter (where is_transit), 0) as transit_bytes
    from int_comm_tasks
    group by device_id, model_id, iteration_id, op_name
),

op_spans as (
    -- each execution of an op once, by its start
    select device_id, model_id, iteration_id, op_name, sum(op_end_ns - op_start_ns) as op_ns
    from (
        select distinct device_id, model_id, iteration_id, op_name, op_start_ns, op_end_ns
        from int_comm_tasks
        where op_start_ns is not null
    )
    group by device_id, model_id, iteration_id, op_name
)

select
    p.device_id,
    p.model_id,
    p.iteration_id,
    p.step_id,
    p.op_name,
    p.op_count,
    s.op_ns,
    p.task_count,
    p.communication_ns,
    p.wait_ns,
    p.transit_ns,
    p.transit_bytes,
    p.transit_bytes / nullif(p.transit_ns, 0) as transit_bandwidth_gbps
from per_op as p
left join op_spans as s
    on p.device_id = s.device_id
    and p.model_id is not distinct from s.model_id
    and p.iteration_id is not distinct from s.iteration_id
    and p.op_name is not distinct from s.op_name
order by p.device_id, p.model_id, p.iteration_id, p.op_name
