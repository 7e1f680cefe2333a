-- comm_iteration_links: one row per link of a communication op in an iteration (training step) of
-- a device: what the op's tasks moved over it, in how long, at what bandwidth.
--
-- Grain:   (run_id, device_id, model_id, iteration_id, op_name, link_src_rank, link_dst_rank, transport_type,
--          link_type); model_id, iteration_id, op_name, link_src_rank, link_dst_rank, transport_type and link_type NULL are values
-- Sources: int_comm_tasks
-- Follows: MindInsight's HCCL link analysis (per step and op, per link src-dst and transport
--          type: communication time, size and bandwidth of the data-moving tasks) and msprof's
--          bandwidth per transport type (its Communication Bandwidth Info: HCCS, PCIE, SIO,
--          RDMA, and SDMA holding them all), restated in docs/formats.md#rule-comm-tasks. A
--          link is (src rank, dst rank) as int_comm_tasks gives it (the exporter's none
--          replaced by the other side, swapped for LOCAL), with the task's transport and link
--          type. Of the tasks of an op on a link in an iteration: transfer = the summed
--          durations and bytes of the data-moving tasks (Memcpy, Reduce_Inline, RDMASend),
--          bandwidth = bytes / time; wait = the summed Notify_Wait durations. Choices: the
--          link type is part of the key, so that the ON_CHIP copies MindInsight counts and
--          msprof leaves out are rows of their own (msprof's per-type figures are the sums of
--          the rows of that link type, its SDMA figure the sum over every SDMA link type but
--          ON_CHIP); the RDMA figures are the RDMASend tasks' own durations (MindInsight and
--          msprof add the Notify_Wait or the closing tasks of each RDMA send pattern).
-- Columns:
--   device_id              -      device ("Device_id")
--   model_id               -      model id of the iteration; NULL without one ("Model ID")
--   iteration_id           -      1-based number of the iteration within (device, model); NULL outside every
--                                 iteration ("Iteration ID")
--   step_id                -      the step number of the iteration ("Step")
--   op_name                -      the op as exported; NULL for tasks of no op ("Op Name")
--   link_src_rank          -      source rank of the link ("Src Rank")
--   link_dst_rank          -      destination rank of the link ("Dst Rank")
--   transport_type         -      SDMA, RDMA or LOCAL ("Transport Type")
--   link_type              -      HCCS, PCIE, SIO, ON_CHIP, ... as exported ("Link Type")
--   task_count             -      tasks of the op on the link ("Task Count")
--   transfer_count         -      data-moving tasks among them ("Transfer Count")
--   transfer_ns            ns     summed durations of the data-moving tasks ("Transfer Time")
--   transfer_bytes         bytes  summed bytes of the data-moving tasks ("Transfer Size")
--   bandwidth_gbps         GB/s   transfer_bytes / transfer_ns (bytes per ns); NULL without transfer time
--                                 ("Bandwidth")
--   wait_ns                ns     summed durations of the Notify_Wait tasks on the link ("Wait Time")

select
    device_id,
    model_id,
    iteration_id,
    any_value(step_id) as step_id,
    op_name,
    link_src_rank,
    link_dst_rank,
    transport_type,
    link_type,
    count(*) as task_count,
    count(*) filter (where moves_data) as transfer_count,
    coalesce(sum(duration_ns) filter (where moves_data), 0) as transfer_ns,
    coalesce(sum(size_bytes) filter (where moves_data), 0) as transfer_bytes,
    sum(size_bytes) filter (where moves_data) / nullif(sum(duration_ns) filter (where moves_data), 0)
        as bandwidth_gbps,
    coalesce(sum(duration_ns) filter (where is_wait), 0) as wait_ns
from int_comm_tasks
group by device_id, model_id, iteration_id, op_name, link_src_rank, link_dst_rank, transport_type, link_type
order by device_id, model_id, iteration_id, op_name, link_src_rank, link_dst_rank, transport_type, link_type
