-- step_trace_reduces: one row per all-reduce range of a closed step-trace iteration.
--
-- Grain:   (run_id, device_id, model_id, iteration_id, reduce_index); model_id NULL is a value
-- Sources: stg_all_reduces, stg_iterations
-- Follows: msprof's step_trace export, its Reduce Start / Reduce Duration column pairs (its
--          all_reduce table), one row per pair here: the all-reduce records (tags 10000 to
--          19999) of an iteration paired per stream, an even tag opening a range and the
--          odd tag after it closing it (stg_all_reduces). Choices: times in integer ns on the
--          run timeline; every duration is end - start (msprof's C++ export computes the
--          first range of each iteration as start - end on unsigned integers, which wraps
--          around to a huge number, and pads a row with too few cells when iterations have
--          different numbers of ranges; neither is copied); a range with no end has a NULL
--          end and duration (build_issues counts them as all_reduce_without_end). Ranges
--          numbered by start within the iteration (msprof: in the order of their streams).
-- Columns:
--   device_id       -     device ("Device_id")
--   model_id        -     model id; NULL when the source names none (exports) ("Model ID")
--   iteration_id    -     1-based number of the iteration within (device, model), as in step_trace_summary ("Iteration ID")
--   iter_id         -     1-based rank of the iteration's end within the device, as in step_trace_summary
--   reduce_index    -     1-based number of the range within the iteration, by start (then stream)
--   stream_id       -     stream of the all-reduce records ("Stream ID")
--   reduce_start_ns ns    the start (even tag) record ("Reduce Start")
--   reduce_end_ns   ns    the end (odd tag) record; NULL without one
--   reduce_ns       ns    reduce_end_ns - reduce_start_ns; NULL without an end ("Reduce Duration")

select
    r.device_id,
    r.model_id,
    r.iteration_id,
    it.iter_id,
    row_number() over (
        partition by r.device_id, r.model_id, r.iteration_id order by r.start_ns, r.stream_id
    )::integer as reduce_index,
    r.stream_id,
    r.start_ns as reduce_start_ns,
    r.end_ns as reduce_end_ns,
    r.end_ns - r.start_ns as reduce_ns
from stg_all_reduces as r
join stg_iterations as it
    on r.device_id = it.device_id
    and r.model_id is not distinct from it.model_id
    and r.iteration_id = it.iteration_id
order by r.device_id, it.iter_id, reduce_index
