-- stg_comm_tasks: one row per communication task of a device (a task an HCCL op ran on one of its
-- planes), with the kind of time it is and the link it used.
--
-- Grain:   (device_id, start_ns, plane_id, task_type, stream_id, task_id); NULLs are values
-- Sources: comm_tasks
-- Stored:  no, a view: a projection of comm_tasks, read by int_comm_tasks only
-- Follows: MindInsight's HCCL analysis and msprof's communication analysis
--          (docs/formats.md#rule-comm-tasks): a Notify_Wait task is waiting; every other task is
--          communication cost; a Memcpy or Reduce_Inline task moves data over its link (SDMA),
--          and is a transit (msprof's Transit Time and Size) unless it stays on the chip
--          (link type ON_CHIP: a local copy); an RDMASend task moves data over RDMA. Task types
--          are compared without case, a space read as an underscore (older exports write
--          "Notify Wait", "Reduce Inline"). The link is src -> dst with the exporter's none
--          (4294967295) on either side taken from the other side, and the two swapped for a
--          LOCAL task (MindInsight's rule). A task exported twice (two timelines of one run)
--          is one task, the first read (source file, then row).
-- Columns:
--   device_id       -      device
--   model_id        -      model id as exported; NULL where the source names none
--   plane_id        -      plane the task ran on
--   stream_id       -      stream id
--   task_id         -      task id
--   task_type       -      task type as exported
--   op_name         -      the op the source names for the task (databases); NULL in a timeline
--   start_ns        ns     task start
--   end_ns          ns     task end
--   duration_ns     ns     end_ns - start_ns
--   is_wait         -      a Notify_Wait task
--   moves_data      -      a Memcpy, Reduce_Inline or RDMASend task: it carries the bytes of its link
--   is_transit      -      a Memcpy or Reduce_Inline task over SDMA off the chip, or an RDMASend task:
--                          msprof's transit
--   link_src_rank   -      source rank of the link (the destination where the source is none; the
--                          destination of a LOCAL task)
--   link_dst_rank   -      destination rank of the link (likewise)
--   transport_type  -      SDMA, RDMA or LOCAL
--   link_type       -      HCCS, PCIE, SIO, ON_CHIP, ... as exported
--   size_bytes      bytes  bytes the task moved, as exported

with typed as (
    select
        *,
        upper(replace(trim(coalesce(task_type, '')), ' ', '_')) as kind,
        upper(trim(coalesce(transport_type, ''))) as transport,
        case when src_rank = 4294967295 then dst_rank else src_rank end as src_or_dst,
        case when dst_rank = 4294967295 then src_rank else dst_rank end as dst_or_src
    from comm_tasks
    where start_ns is not null and end_ns is not null
    qualify row_number() over (
            partition by device_id, start_ns, plane_id, task_type, stream_id, task_id
            order by source_file, seq
        ) = 1
)

select
    device_id,
    model_id,
    plane_id,
    stream_id,
    task_id,
    task_type,
    op_name,
    start_ns,
    end_ns,
    end_ns - start_ns as duration_ns,
    kind = 'NOTIFY_WAIT' as is_wait,
    kind in ('MEMCPY', 'REDUCE_INLINE', 'RDMASEND') as moves_data,
    (
        kind in ('MEMCPY', 'REDUCE_INLINE')
        and transport = 'SDMA'
        and upper(coalesce(link_type, '')) <> 'ON_CHIP'
    )
    or kind = 'RDMASEND' as is_transit,
    case when transport = 'LOCAL' then dst_or_src else src_or_dst end as link_src_rank,
    case when transport = 'LOCAL' then src_or_dst else dst_or_src end as link_dst_rank,
    transport_type,
    link_type,
    size_bytes
from typed
