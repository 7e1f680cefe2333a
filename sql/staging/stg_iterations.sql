-- stg_iterations: one row per model iteration (inference) delimited by step-trace keypoints.
--
-- Grain:   (device_id, iter_id)
-- Sources: step_trace
-- Follows: msprof's step-trace state machine (analysis-and-exports §A5.2), per
--          (device, model) in time order: MODEL_START (tag 0) opens an iteration unless one
--          is open, MODEL_END (tag 1) closes it, ITER_END (tag 4) closes it and opens the
--          next; an iteration still open at the end is dropped. Simplification: an end
--          keypoint with no open iteration closes nothing (msprof ignores it too).
--          iter_id ranks iterations of all models of a device by their end (msprof iter_id).
-- Columns:
--   device_id      -     device
--   model_id       -     model id
--   iter_id        -     1-based rank of the iteration's end within the device
--   start_ns       ns    iteration start
--   end_ns         ns    iteration end

with keypoints as (
    select
        device_id,
        model_id,
        tag_id,
        ts_ns,
        seq,
        -- which iteration a keypoint belongs to: end keypoints seen before it
        coalesce(
            sum(case when tag_id in (1, 4) then 1 else 0 end) over (
                partition by device_id, model_id
                order by ts_ns, seq
                rows between unbounded preceding and 1 preceding
            ),
            0
        ) as grp
    from step_trace
    where tag_id in (0, 1, 4)
),

groups as (
    select
        device_id,
        model_id,
        grp,
        min(ts_ns) filter (where tag_id = 0) as first_start_ns,
        max(ts_ns) filter (where tag_id in (1, 4)) as end_ns,
        max(tag_id) filter (where tag_id in (1, 4)) as end_tag
    from keypoints
    group by device_id, model_id, grp
),

iterations as (
    select
        device_id,
        model_id,
        coalesce(
            first_start_ns,
            -- after ITER_END the next iteration is already open at that keypoint
            case
                when lag(end_tag) over (partition by device_id, model_id order by grp) = 4
                    then lag(end_ns) over (partition by device_id, model_id order by grp)
            end
        ) as start_ns,
        end_ns
    from groups
)

select
    device_id,
    model_id,
    row_number() over (partition by device_id order by end_ns, model_id)::integer as iter_id,
    start_ns,
    end_ns
from iterations
where start_ns is not null and end_ns is not null
