-- stg_iterations: one row per closed model iteration (inference or training step) of the step trace.
--
-- Grain:   (device_id, model_id, iteration_id); iter_id is unique per device too
-- Sources: step_trace (through the step_marks() macro of sql/macros/step_trace.sql)
-- Follows: msprof's step-trace iterations (its step_trace_data and training_trace tables):
--          the iteration rule of the step_marks() macro (MODEL_START opens, MODEL_END closes,
--          ITER_END closes and opens the next, per (device, model) in time order); the
--          iteration still open at the end is left out (build_issues counts it). iter_id
--          ranks the iterations of all models of a device by their end (msprof's iter_id).
--          FP and BP are the last FP (tag 2) and BP (tag 3) records of the iteration, as msprof
--          keeps the last one seen.
-- Columns:
--   device_id      -     device
--   model_id       -     model id
--   iter_id        -     1-based rank of the iteration's end within the device (ties: model id)
--   start_ns       ns    iteration start (its MODEL_START, or the ITER_END that opened it)
--   end_ns         ns    iteration end (its MODEL_END or ITER_END)
--   iteration_id   -     1-based number of the iteration within (device, model) (msprof's index_id)
--   fp_ns          ns    the iteration's last FP (forward propagation start) record; NULL without one
--   bp_ns          ns    the iteration's last BP (backward propagation end) record; NULL without one
--   step_id        -     the iteration or step number its closing record carries (index_id: an
--                        export's ProfilerStep#N or Iteration N, a raw record's index id); NULL
--                        where the record has none

with closed as (
    select
        device_id,
        model_id,
        any_value(iteration_id) as iteration_id,
        any_value(iteration_start_ns) filter (where is_end) as start_ns,
        max(ts_ns) filter (where is_end) as end_ns,
        arg_max(ts_ns, ord) filter (where tag_id = 2) as fp_ns,
        arg_max(ts_ns, ord) filter (where tag_id = 3) as bp_ns,
        arg_max(index_id, ord) filter (where is_end) as step_id
    from step_marks()
    where iteration_closed
    group by device_id, model_id, seg, iter_local
)

select
    device_id,
    model_id,
    row_number() over (partition by device_id order by end_ns, model_id)::integer as iter_id,
    start_ns,
    end_ns,
    iteration_id::integer as iteration_id,
    fp_ns,
    bp_ns,
    step_id
from closed
