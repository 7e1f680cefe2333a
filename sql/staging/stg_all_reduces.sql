-- stg_all_reduces: one row per all-reduce range of a closed step-trace iteration.
--
-- Grain:   (device_id, model_id, iteration_id, stream_id, start_ns)
-- Sources: step_trace (through the step_marks() macro of sql/macros/step_trace.sql)
-- Follows: msprof's all-reduce pairs (its all_reduce table): the all-reduce records (tags
--          10000 to 19999) of an iteration are paired per stream in time order: an even tag
--          opens a range, an odd tag closes the range opened last on that stream (when odd
--          tags repeat, the last one before the next even tag is the end, as msprof
--          overwrites the end); an odd tag before any even tag of its stream in the
--          iteration closes nothing. A range with no odd tag keeps a NULL end. Only
--          iterations that close (rows of stg_iterations) have ranges.
-- Columns:
--   device_id      -     device
--   model_id       -     model id
--   iteration_id   -     1-based number of the iteration within (device, model), as in stg_iterations
--   stream_id      -     stream of the all-reduce records
--   start_ns       ns    the even (start) record
--   end_ns         ns    the odd (end) record; NULL when none followed in the iteration

with records as (
    select
        device_id,
        model_id,
        iteration_id,
        stream_id,
        ts_ns,
        ord,
        tag_id % 2 = 0 as is_start,
        -- the range a record belongs to: start records of its stream so far (0: before any)
        sum(case when tag_id % 2 = 0 then 1 else 0 end) over (
            partition by device_id, model_id, iteration_id, stream_id
            order by ord rows between unbounded preceding and current row
        ) as range_no
    from step_marks()
    where iteration_closed and tag_id between 10000 and 19999
)

select
    device_id,
    model_id,
    iteration_id::integer as iteration_id,
    stream_id,
    any_value(ts_ns) filter (where is_start) as start_ns,
    arg_max(ts_ns, ord) filter (where not is_start) as end_ns
from records
where range_no > 0
group by device_id, model_id, iteration_id, stream_id, range_no
