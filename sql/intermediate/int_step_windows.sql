-- int_step_windows: one row per stretch of a device's time that belongs to one closed iteration
-- (training step): where an interval that starts in it is counted.
--
-- Grain:   (device_id, start_ns); a device's stretches do not overlap
-- Sources: stg_iterations
-- Follows: the placing rule of the step breakdown (docs/formats.md#rule-step-breakdown), written
--          once for every table that puts intervals into iterations (int_step_breakdown,
--          int_comm_tasks): a time t of a device belongs to the iteration whose [start, end)
--          holds it; where iterations of several models of a device overlap, to the one that
--          started last (ties: the later by end, model, iteration). So an iteration's stretch
--          runs from its start to its end or to the next iteration's start, whichever comes
--          first; an iteration whose stretch is empty (another started at the same time) has
--          no row. An iteration that starts and ends inside another ends the outer one's
--          stretch at its start: the time after it, up to the outer one's end, is in no
--          stretch. A reader finds the stretch holding t with an ASOF join on start_ns and
--          t < until_ns.
-- Columns:
--   device_id      -   device
--   model_id       -   model id of the iteration; NULL where the source names none
--   iteration_id   -   1-based number of the iteration within (device, model)
--   step_id        -   the step number its closing record carries (stg_iterations)
--   start_ns       ns  start of the stretch: the iteration's start
--   until_ns       ns  end of the stretch: the iteration's end, or the next iteration's start
--   end_ns         ns  the iteration's end

with ordered as (
    select
        device_id,
        model_id,
        iteration_id,
        step_id,
        start_ns,
        end_ns,
        lead(start_ns) over (
            partition by device_id order by start_ns, end_ns, model_id, iteration_id
        ) as next_start_ns
    from stg_iterations
)

select
    device_id,
    model_id,
    iteration_id,
    step_id,
    start_ns,
    least(end_ns, coalesce(next_start_ns, end_ns)) as until_ns,
    end_ns
from ordered
where least(end_ns, coalesce(next_start_ns, end_ns)) > start_ns
