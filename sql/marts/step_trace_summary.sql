-- step_trace_summary: one row per closed step-trace iteration of a model, with where its time went.
--
-- Grain:   (run_id, device_id, model_id, iteration_id); model_id NULL is a value
-- Sources: stg_iterations, stg_all_reduces, stg_step_times, int_step_breakdown, stg_step_marks_steps
-- Follows: msprof's step_trace export (its training_trace table; MindInsight shows the same
--          breakdown): iterations by the step-trace rule of stg_iterations (MODEL_START opens,
--          MODEL_END closes, ITER_END closes and opens the next, per (device, model) in time
--          order; the iteration still open at the end is left out and counted in
--          build_issues as open_last_iteration); FP / BP the last FP (tag 2) / BP (tag 3)
--          record of the iteration; Data Aug Bound = FP - the end of the latest iteration of
--          any model of the device that ended before the FP. Rows in the order of their end.
--          Choices: times in integer ns on the run timeline (msprof prints us); a value
--          msprof prints as N/A (no FP, no BP, no earlier iteration; stored by msprof as 0) is
--          NULL. The all-reduce ranges (msprof: a Reduce Start / Reduce Duration column pair
--          per range) are the rows of the mart step_trace_reduces, one per range, so that a
--          query can aggregate them; reduce_count here says how many.
--          A device without iterations of the step trace but with STEP_START / STEP_END
--          records (tags 60000 / 60001) has a row per step msprof makes from them
--          (stg_step_marks_steps, docs/formats.md#rule-step-marks: a group of one START and
--          one END of the same index id): iteration_id the step's 1-based rank by start within
--          (device, model), step_id its index id, start / end / iteration_ns the START's time,
--          the END's time and their difference, the FP / BP columns NULL (a step has none);
--          groups of another shape are counted in build_issues (step_marks_unpaired).
--          Precedence per device: iterations of the step trace (MODEL_START / END, ITER_END),
--          else steps of STEP marks, else the exporter's step breakdown below.
--          An exported run whose export holds no step events but torch_npu's step breakdown
--          (step_trace_time.csv, analysis.db StepTraceTime; docs/formats.md#export-totals) has
--          a row per exported step of a device without iterations: iteration_id the step, the
--          breakdown columns as exported, the times NULL (the breakdown has none).
--          An iteration of events has the breakdown profetl recomputes from the device's
--          executions and communication ops (int_step_breakdown, torch_npu's rule:
--          docs/formats.md#rule-step-breakdown) in the *_recomputed_ns columns and, where the
--          export also holds the exporter's breakdown, the exporter's values of the step of
--          the same number in the exported columns (build_issues counts the steps where the
--          two differ: export_step_breakdown_differs).
-- Columns:
--   device_id             -     device ("Device_id")
--   iteration_id          -     1-based number of the iteration within (device, model) ("Iteration ID")
--   fp_start_ns           ns    the iteration's last FP record; NULL without one ("FP Start")
--   bp_end_ns             ns    the iteration's last BP record; NULL without one ("BP End")
--   iteration_end_ns      ns    iteration end, its MODEL_END or ITER_END (a step's STEP_END) ("Iteration End")
--   iteration_ns          ns    iteration_end_ns - iteration_start_ns ("Iteration Time")
--   fp_to_bp_ns           ns    bp_end_ns - fp_start_ns; NULL without FP or BP ("FP to BP Time")
--   iteration_refresh_ns  ns    iteration_end_ns - bp_end_ns, the gradient refresh after BP; NULL
--                               without BP ("Iteration Refresh", earlier "Grad Refresh Bound")
--   data_aug_bound_ns     ns    fp_start_ns - the end of the device's latest iteration ending before
--                               fp_start_ns, the wait for data; NULL without FP or such an iteration
--                               ("Data Aug Bound")
--   model_id              -     model id; NULL when the source names none (exports) ("Model ID")
--   iter_id               -     1-based rank of the iteration's end within the device (msprof's iter_id)
--   iteration_start_ns    ns    iteration start, its MODEL_START or the ITER_END that opened it (a step's
--                               STEP_START)
--   reduce_count          -     all-reduce ranges of the iteration (rows of step_trace_reduces); NULL for
--                               an exported step and a step of STEP marks
--   computing_ns          ns    the exporter's step breakdown, of an exported step or of the step of an
--                               iteration's number where the export holds it (NULL elsewhere): time computing
--                               ("Computing")
--   communication_ns      ns    exporter's: communication time ("Communication")
--   communication_not_overlapped_ns ns exporter's: communication no computing overlapped
--                               ("Communication(Not Overlapped)")
--   overlapped_ns         ns    exporter's: communication overlapped by computing ("Overlapped")
--   free_ns               ns    exporter's: time neither ran ("Free")
--   stage_ns              ns    exporter's: computing + communication not overlapped + free ("Stage")
--   bubble_ns             ns    exporter's: pipeline bubble ("Bubble")
--   preparing_ns          ns    exporter's: before its first task ("Preparing"); NULL where not exported
--   iteration_from_previous_end_ns ns  iteration_end_ns - the end of the previous iteration of the same
--                               (device, model): an iteration as MindInsight measures it; NULL for the
--                               first (no previous end) and for an exported step (a step of STEP marks:
--                               the end minus the previous step's end, steps in start order). iteration_ns is msprof's,
--                               from the record that opened the iteration; the two differ only for an
--                               iteration a MODEL_START opened ("Iteration Time from Previous End")
--   communication_not_overlapped_exclude_receive_ns ns exported: communication not overlapped - bubble
--                               ("Communication(Not Overlapped and Exclude Receive)")
--   step_id               -     the step number of the iteration (ProfilerStep#N, Iteration N; a raw record's
--                               index id), or of the exported step ("Step")
--   computing_recomputed_ns ns  profetl's breakdown of an iteration of events (int_step_breakdown): merged
--                               compute time of the executions an operator names; NULL for an exported step
--   communication_recomputed_ns ns merged communication-op time; NULL also without communication ops
--   communication_not_overlapped_recomputed_ns ns communication no compute covers; NULL as the above
--   overlapped_recomputed_ns ns communication_recomputed_ns - communication_not_overlapped_recomputed_ns
--   free_recomputed_ns    ns    gaps between the device's busy intervals starting in the iteration
--   stage_recomputed_ns   ns    span of the iteration's pieces - bubble_recomputed_ns
--   bubble_recomputed_ns  ns    receive ops' time; NULL without communication ops
--   communication_not_overlapped_exclude_receive_recomputed_ns ns communication not overlapped - bubble
--   preparing_recomputed_ns ns  first compute or communication piece - iteration start; NULL without one

with reduces as (
    select device_id, model_id, iteration_id, count(*) as n
    from stg_all_reduces
    group by device_id, model_id, iteration_id
),

with_previous as (
    select
        it.*,
        prev.end_ns as previous_end_ns
    from stg_iterations as it
    asof left join (select device_id, end_ns from stg_iterations) as prev
        on it.device_id = prev.device_id
        and it.fp_ns > prev.end_ns
),

from_events as (
    select
        it.device_id,
        it.iteration_id,
        it.fp_ns as fp_start_ns,
        it.bp_ns as bp_end_ns,
        it.end_ns as iteration_end_ns,
        it.end_ns - it.start_ns as iteration_ns,
        it.bp_ns - it.fp_ns as fp_to_bp_ns,
        it.end_ns - it.bp_ns as iteration_refresh_ns,
        it.fp_ns - it.previous_end_ns as data_aug_bound_ns,
        it.model_id,
        it.iter_id,
        it.start_ns as iteration_start_ns,
        coalesce(r.n, 0) as reduce_count,
        st.computing_ns,
        st.communication_ns,
        st.communication_not_overlapped_ns,
        st.overlapped_ns,
        st.free_ns,
        st.stage_ns,
        st.bubble_ns,
        st.preparing_ns,
        it.end_ns - lag(it.end_ns) over (
            partition by it.device_id, it.model_id order by it.iteration_id
        ) as iteration_from_previous_end_ns,
        st.communication_not_overlapped_exclude_receive_ns,
        it.step_id,
        b.computing_ns as computing_recomputed_ns,
        b.communication_ns as communication_recomputed_ns,
        b.communication_not_overlapped_ns as communication_not_overlapped_recomputed_ns,
        b.overlapped_ns as overlapped_recomputed_ns,
        b.free_ns as free_recomputed_ns,
        b.stage_ns as stage_recomputed_ns,
        b.bubble_ns as bubble_recomputed_ns,
        b.communication_not_overlapped_exclude_receive_ns
            as communication_not_overlapped_exclude_receive_recomputed_ns,
        b.preparing_ns as preparing_recomputed_ns
    from with_previous as it
    left join reduces as r
        on it.device_id = r.device_id
        and it.model_id is not distinct from r.model_id
        and it.iteration_id = r.iteration_id
    left join int_step_breakdown as b
        on it.device_id = b.device_id
        and it.model_id is not distinct from b.model_id
        and it.iteration_id = b.iteration_id
    left join stg_step_times as st
        on it.device_id = st.device_id
        and it.step_id = st.step_id
),

steps_of_marks as (
    -- the steps of STEP_START / STEP_END pairs, of a device without iterations of the step trace
    select sm.*
    from stg_step_marks_steps as sm
    anti join (select distinct device_id from stg_iterations) as ev on sm.device_id = ev.device_id
    where sm.is_paired
),

from_marks as (
    select
        sm.device_id,
        row_number() over (partition by sm.device_id, sm.model_id order by sm.start_ns, sm.index_id)::integer
            as iteration_id,
        sm.end_ns as iteration_end_ns,
        sm.duration_ns as iteration_ns,
        sm.model_id,
        row_number() over (partition by sm.device_id order by sm.end_ns, sm.model_id, sm.index_id)::integer
            as iter_id,
        sm.start_ns as iteration_start_ns,
        st.computing_ns,
        st.communication_ns,
        st.communication_not_overlapped_ns,
        st.overlapped_ns,
        st.free_ns,
        st.stage_ns,
        st.bubble_ns,
        st.preparing_ns,
        sm.end_ns - lag(sm.end_ns) over (
            partition by sm.device_id, sm.model_id order by sm.start_ns, sm.index_id
        ) as iteration_from_previous_end_ns,
        st.communication_not_overlapped_exclude_receive_ns,
        sm.index_id as step_id
    from steps_of_marks as sm
    left join stg_step_times as st
        on sm.device_id = st.device_id
        and sm.index_id = st.step_id
),

from_totals as (
    -- the exporter's step breakdown, for a device no iteration of events or STEP mark describes
    select
        st.device_id,
        st.step_id::integer as iteration_id,
        row_number() over (partition by st.device_id order by st.step_id)::integer as iter_id,
        st.computing_ns,
        st.communication_ns,
        st.communication_not_overlapped_ns,
        st.overlapped_ns,
        st.free_ns,
        st.stage_ns,
        st.bubble_ns,
        st.preparing_ns,
        st.communication_not_overlapped_exclude_receive_ns,
        st.step_id
    from stg_step_times as st
    anti join (select distinct device_id from stg_iterations) as ev on st.device_id = ev.device_id
    anti join (select distinct device_id from steps_of_marks) as sm on st.device_id = sm.device_id
)

-- by name: a branch lists the columns it has, the others are NULL (in from_events' order and types)
select * from from_events
union all by name
select * from from_marks
union all by name
select * from from_totals
order by device_id, iter_id
