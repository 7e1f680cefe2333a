-- aicpu_ops: one row per AI CPU task record (MindInsight's AI CPU analysis, msprof's aicpu
-- summary): when the AI CPU ran a kernel, for how long, and the operator it ran.
--
-- Grain:   (run_id, device_id, source_file, seq)
-- Sources: int_aicpu_ops
-- Follows: msprof's aicpu summary and MindInsight's AI CPU table (docs/formats.md#rule-aicpu):
--          Node is the operator of the AI CPU execution the record belongs to (its (stream,
--          task) and the span that holds its run end; a text record, which names no task, the
--          one AI CPU execution of its device whose span holds its run end), else the name the
--          record itself carries, else NULL (counted in build_issues as aicpu_without_op; msprof
--          writes N/A). Times are integer ns where msprof prints ms or us rounded to 0.001; the
--          written dispatch and total times (whole us in raw data) are kept beside the ones
--          recomputed from the ticks. Rows ordered by device and run start, as msprof's.
-- Columns:
--   device_id              -   device ("Device_id")
--   source_file            -   slice or exported file of the record
--   seq                    -   record index in its stream ("Record Index")
--   record_format          -   text, binary or export: the layout the record was read from
--   stream_id              -   stream: the record's, else the joined execution's ("Stream ID")
--   task_id                -   task id: the record's, else the joined execution's ("Task ID")
--   op_name                -   operator: the joined execution's, else the record's node name; NULL when neither ("Node")
--   op_type                -   operator type of the joined execution
--   op_source              -   execution, record or NULL: where op_name comes from
--   start_ns               ns  run start ("Timestamp")
--   end_ns                 ns  run end
--   task_ns                ns  end_ns - start_ns ("Task_time")
--   compute_ns             ns  compute time: memcpy start - compute start; NULL when the record has none ("Compute_time")
--   memcpy_ns              ns  memory copy time: memcpy end - memcpy start ("Memcpy_time")
--   dispatch_ns            ns  dispatch time as written ("Dispatch_time")
--   total_ns               ns  total time as written ("Total_time")
--   dispatch_recomputed_ns ns  before-run - submit, from the device ticks; NULL without them
--   total_recomputed_ns    ns  after-run - submit, from the device ticks (msprof's total time); NULL without them

select
    device_id,
    source_file,
    seq,
    record_format,
    stream_id,
    task_id,
    op_name,
    op_type,
    op_source,
    start_ns,
    end_ns,
    task_ns,
    compute_ns,
    memcpy_ns,
    dispatch_ns,
    total_ns,
    dispatch_recomputed_ns,
    total_recomputed_ns
from int_aicpu_ops
order by device_id, start_ns, source_file, seq
