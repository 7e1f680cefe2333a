-- stg_step_marks: one row per step-trace record, with the iteration it falls in.
--
-- Grain:   (device_id, model_id, ord)
-- Sources: step_trace (through the step_marks() macro of sql/macros/step_trace.sql)
-- Stored:  no, a view: read by the build's checks only (whether a model's step trace ends
--          inside an iteration)
-- Follows: msprof's step-trace iteration rule, as stg_iterations (the same macro): a record
--          belongs to the iteration open when it comes. Records with no time are left out.
-- Columns:
--   device_id          -     device
--   model_id           -     model id
--   tag_id             -     0 MODEL_START, 1 MODEL_END, 2 FP, 3 BP, 4 ITER_END, 10000-19999 all-reduce, ...
--   stream_id          -     stream of the record
--   ts_ns              ns    record time on the run timeline
--   ord                -     1-based position among the (device, model)'s records (time, then seq)
--   iteration_id       -     1-based number within (device, model) of the iteration open at the record
--                             (meaningful where in_iteration)
--   in_iteration       -     an iteration is open at the record (an end keypoint is in the iteration it closes)
--   iteration_closed   -     the record's iteration is closed later: it is a row of stg_iterations
--   model_ends_open    -     the (device, model)'s step trace ends inside an iteration, left out of stg_iterations

select
    device_id,
    model_id,
    tag_id,
    stream_id,
    ts_ns,
    ord,
    iteration_id::integer as iteration_id,
    in_iteration,
    iteration_closed,
    model_ends_open
from step_marks()
