-- stg_aicpu_tasks: one row per AI CPU task record, with the dispatch and total times recomputed
-- from its device ticks.
--
-- Grain:   (device_id, source_file, seq)
-- Sources: aicpu_tasks
-- Stored:  no, a view: a projection of aicpu_tasks, read by int_aicpu_ops only
-- Follows: msprof's aicpu summary (docs/formats.md#rule-aicpu): the task time is run end - run
--          start; the total time is after-run - submit, from the ticks; the dispatch time is the
--          producer's, whole us. Both written values are kept beside the ones recomputed from
--          the ticks (before-run - submit, after-run - submit), which are exact to the tick
--          where the producer truncates to whole us.
-- Columns:
--   device_id              -   device
--   source_file            -   slice or exported file of the record
--   seq                    -   record index in its stream
--   record_format          -   text, binary or export
--   stream_id              -   stream; NULL for text records
--   task_id                -   task id; NULL for text records
--   node_name              -   node name the record carries; NULL when none
--   start_ns               ns  run start
--   end_ns                 ns  run end
--   task_ns                ns  end_ns - start_ns
--   compute_ns             ns  compute time; NULL when the record has none
--   memcpy_ns              ns  memory copy time; NULL when the record has none
--   dispatch_ns            ns  dispatch time as written
--   total_ns               ns  total time as written
--   dispatch_recomputed_ns ns  before-run - submit from the ticks; NULL without them
--   total_recomputed_ns    ns  after-run - submit from the ticks; NULL without them

select
    device_id,
    source_file,
    seq,
    record_format,
    stream_id,
    task_id,
    nullif(trim(node_name), '') as node_name,
    start_ns,
    end_ns,
    end_ns - start_ns as task_ns,
    compute_ns,
    memcpy_ns,
    dispatch_ns,
    total_ns,
    before_run_ns - submit_ns as dispatch_recomputed_ns,
    after_run_ns - submit_ns as total_recomputed_ns
from aicpu_tasks
