-- intervals: merging intervals, written once.
--
-- merged_intervals(intervals_t)
--   the rows of the table (or CTE) named intervals_t, with columns device_id, kind, start_ns and
--   end_ns (none NULL, end_ns >= start_ns), merged per (device_id, kind): intervals that touch
--   or overlap are one, from the first one's start to the latest end among them. In start
--   order, an interval that starts after every earlier one ended opens a merged interval;
--   that one ends where the earlier intervals' latest end stands when the next one opens (at
--   the last, the latest end of the (device, kind)). So one sort of the intervals and one of
--   the merged ones, where numbering the merged intervals and grouping by the number took two
--   sorts of the intervals and a hash table of them. Merging merged intervals of several
--   kinds together gives the merge of all their intervals. The table is named by the caller
--   (query_table), as in sql/macros/task_ops.sql. Read by int_step_breakdown.

create or replace macro merged_intervals(intervals_t) as table
select
    device_id,
    kind,
    start_ns,
    coalesce(
        lead(ended_before_ns) over (partition by device_id, kind order by start_ns),
        last_end_ns
    ) as end_ns
from (
    select
        device_id,
        kind,
        start_ns,
        max(end_ns) over (
            partition by device_id, kind
            order by start_ns, end_ns
            rows between unbounded preceding and 1 preceding
        ) as ended_before_ns,
        max(end_ns) over (
            partition by device_id, kind
            order by start_ns, end_ns
            rows between unbounded preceding and unbounded following
        ) as last_end_ns
    from query_table(intervals_t)
)
-- the intervals that open a merged one: their starts rise strictly
where coalesce(start_ns > ended_before_ns, true);
