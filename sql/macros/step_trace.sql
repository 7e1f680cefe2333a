-- step_trace: the step-trace iteration rule, written once for every transform that needs it.
--
-- step_marks()
--   a table: every raw step_trace record with the iteration it falls in. msprof's rule, per
--   (device, model), records in time order (ts_ns, then seq):
--     MODEL_START (tag 0) opens an iteration unless one is open; when the open iteration was
--       opened by an ITER_END it is restarted at the MODEL_START (its start moves there and
--       what was recorded since that ITER_END is forgotten);
--     MODEL_END (tag 1) closes the iteration a MODEL_START opened (after an ITER_END it is
--       ignored);
--     ITER_END (tag 4) closes the open iteration and opens the next at the same time;
--     any end keypoint with no open iteration is ignored; FP (2), BP (3), all-reduce (10000 to
--       19999) and other records belong to the iteration open when they come.
--   Written without a state machine: a segment starts at each MODEL_START that follows a
--   keypoint other than MODEL_START (or none); in a segment the first end keypoint counts,
--   and after a first ITER_END every later ITER_END counts too (the others are ignored).
--   Columns:
--     device_id, model_id, tag_id, stream_id, ts_ns   of the record
--     index_id            the record's own iteration or step number, as the source wrote it
--     ord                 1-based position of the record among its (device, model)'s records
--     seg                 segment number (0 before the first MODEL_START)
--     iter_local          iterations of the segment closed before the record
--     in_iteration        the record comes while an iteration is open (an end keypoint that
--                         counts is in the iteration it closes)
--     is_end              the record is an end keypoint that counts: it closes its iteration
--     iteration_id        1-based number of the record's iteration within (device, model):
--                         iterations closed before it + 1 (msprof's index_id counter; a
--                         restarted iteration keeps its number)
--     iteration_start_ns  start of the record's iteration (the segment's MODEL_START, else the
--                         ITER_END that opened it)
--     iteration_closed    the record's iteration is closed (an end keypoint that counts follows
--                         in the same segment): false for the iteration still open at the end
--                         and for one restarted by a MODEL_START
--     model_ends_open     the (device, model)'s records end while an iteration is open

create or replace macro step_marks() as table
with ordered as (
    select
        device_id,
        model_id,
        tag_id,
        stream_id,
        ts_ns,
        index_id,
        row_number() over (partition by device_id, model_id order by ts_ns, seq, source_file) as ord,
        -- the keypoint before this one among (device, model)'s MODEL_START / END / ITER_END
        case
            when tag_id in (0, 1, 4)
                then lag(tag_id) over (
                    partition by device_id, model_id, tag_id in (0, 1, 4) order by ts_ns, seq, source_file
                )
        end as prev_keypoint
    from step_trace
    where ts_ns is not null
),

segmented as (
    select
        *,
        sum(case when tag_id = 0 and prev_keypoint is distinct from 0 then 1 else 0 end) over (
            partition by device_id, model_id order by ord rows between unbounded preceding and current row
        ) as seg
    from ordered
),

first_ends as (
    select
        *,
        -- the segment's first end keypoint: its tag and position
        first_value(case when tag_id in (1, 4) then tag_id end ignore nulls) over w_seg as seg_end_tag,
        first_value(case when tag_id in (1, 4) then ord end ignore nulls) over w_seg as seg_end_ord,
        first_value(ts_ns) over w_seg as seg_start_ns
    from segmented
    window w_seg as (
        partition by device_id, model_id, seg
        order by ord rows between unbounded preceding and unbounded following
    )
),

ends as (
    select
        *,
        seg > 0 and (ord = seg_end_ord or (seg_end_tag = 4 and tag_id = 4)) as is_end
    from first_ends
),

numbered as (
    select
        *,
        coalesce(sum(is_end::integer) over w_before_seg, 0) as iter_local,
        coalesce(sum(is_end::integer) over w_before_model, 0) + 1 as iteration_id,
        max(case when is_end then ts_ns end) over w_before_seg as last_end_ns
    from ends
    window
        w_before_seg as (
            partition by device_id, model_id, seg
            order by ord rows between unbounded preceding and 1 preceding
        ),
        w_before_model as (
            partition by device_id, model_id order by ord rows between unbounded preceding and 1 preceding
        )
),

marked as (
    select
        *,
        seg > 0 and (iter_local = 0 or seg_end_tag = 4) as in_iteration,
        case when iter_local = 0 then seg_start_ns else last_end_ns end as iteration_start_ns
    from numbered
)

select
    device_id,
    model_id,
    tag_id,
    stream_id,
    ts_ns,
    index_id,
    ord,
    seg,
    iter_local,
    in_iteration,
    is_end,
    iteration_id,
    iteration_start_ns,
    in_iteration
    and bool_or(is_end) over (partition by device_id, model_id, seg, iter_local) as iteration_closed,
    last_value(seg > 0 and (seg_end_tag is null or seg_end_tag = 4)) over (
        partition by device_id, model_id order by ord rows between unbounded preceding and unbounded following
    ) as model_ends_open
from marked
