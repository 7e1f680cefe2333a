-- stg_comm_ops: one row per communication op of a device (an HCCL hcom_* op as a whole), with
-- whether it is a receive.
--
-- Grain:   (device_id, start_ns, op_name)
-- Sources: comm_ops
-- Stored:  no, a view: a projection of comm_ops, read by int_step_breakdown only
-- Follows: torch_npu's step breakdown (docs/formats.md#rule-step-breakdown): the ops its
--          Communication intervals are made of, and the receive ops (named hcom_receive...)
--          whose time is the pipeline bubble. An op exported twice with the same name and
--          start (two timelines of one run) is one op, the first read (source file, then
--          row).
-- Columns:
--   device_id   -   device
--   op_name     -   op name as exported
--   start_ns    ns  op start
--   end_ns      ns  op end
--   is_receive  -   the op is a receive (its name starts with hcom_receive)

select
    device_id,
    op_name,
    start_ns,
    end_ns,
    coalesce(starts_with(op_name, 'hcom_receive'), false) as is_receive
from comm_ops
qualify row_number() over (partition by device_id, start_ns, op_name order by source_file, seq) = 1
