-- task_scheduler: one row per (device, task type, API, task, stream, op) with its instances'
-- times split into waiting, running and pending.
--
-- Grain:   (run_id, device_id, task_type, api_name, task_id, stream_id, op_name); api_name and
--          op_name NULL are values
-- Sources: int_task_executions (complete instances, with their launching API and op)
-- Follows: msprof _get_task_schedule_sql and calculate_task_schedule_data
--          (docs/formats.md#rule-task-scheduler), per instance:
--            running = complete - running (0 without RUNNING)
--            waiting = running - waiting, or complete - waiting when RUNNING is missing or
--                      earlier than WAITING (0 without WAITING): task_waiting_ns,
--                      sql/macros/task_states.sql
--            pending = complete - pending, so it spans pending and running (0 without
--                      PENDING); kept as msprof defines it so the numbers compare
--            duration = complete - running, or complete - pending without RUNNING
--          Time = sum of running, Time(%) = its share of the device's total running time,
--          rows sorted by Time(%) descending. Values stay in integer ns (msprof prints us).
--          Choices: msprof forces batch id 0 on Ascend310, so a task id reused across
--          inferences is one row with Count > 1 (kept). The API and the op are the
--          instance's in int_task_executions: the runtime call whose task list holds (stream,
--          task) and that started last before the instance (msprof lets the last call of the
--          whole run win, docs/formats.md#rule-api-launch), and the GE task description of
--          (stream, task) reported last before the instance, else the first one. Op name is
--          part of the key, so distinct ops never merge. An instance with neither RUNNING nor PENDING has no duration (msprof would count
--          complete - 0); instances without COMPLETE are not here (see build_issues).
--          Generations 2 and 3 (HWTS and STARS chips): an instance is one execution from the
--          start/end logs; Running and the durations are end - start. Waiting and Pending
--          are NULL, not 0: those states exist only in Ascend310's TIME_LINE records
--          (msprof exports this table on Ascend310 only). Type is
--          the device's task type (HWTS / STARS SQE type: AI_CORE, AI_CPU, ...), API the
--          runtime API whose compact task_track record named the task (docs/formats.md#rule-association),
--          Op Name the op the association rule gives (int_task_executions).
-- Columns:
--   device_id      -     device
--   time_pct       %     share of the device's total running time ("Time(%)")
--   time_ns        ns    total running time of the instances ("Time(ns)")
--   task_count     -     number of task instances ("Count")
--   avg_ns         ns    mean instance duration ("Avg(ns)")
--   min_ns         ns    shortest instance duration ("Min(ns)")
--   max_ns         ns    longest instance duration ("Max(ns)")
--   waiting_ns     ns    total waiting time; NULL where the source has no waiting state ("Waiting(ns)")
--   running_ns     ns    total running time ("Running(ns)")
--   pending_ns     ns    total pending time, msprof's definition; NULL where the source has no
--                        pending state ("Pending(ns)")
--   task_type      -     task type name ("Type")
--   api_name       -     runtime API that launched the task; NULL when none did ("API")
--   task_id        -     task id ("Task ID")
--   op_name        -     operator name; NULL when unknown ("Op Name")
--   stream_id      -     stream id ("Stream ID")

with per_instance as (
    select
        device_id,
        task_type_name as task_type,
        api_name,
        task_id,
        op_name,
        stream_id,
        coalesce(complete_ns - running_ns, 0) as running_dur,
        case when has_states then task_waiting_ns(waiting_ns, running_ns, complete_ns) end as waiting_dur,
        case when has_states then coalesce(complete_ns - pending_ns, 0) end as pending_dur,
        coalesce(complete_ns - running_ns, complete_ns - pending_ns) as dur
    from int_task_executions
    where is_complete
),

groups as (
    select
        device_id,
        task_type,
        api_name,
        task_id,
        op_name,
        stream_id,
        sum(running_dur) as time_ns,
        count(*) as task_count,
        avg(dur) as avg_ns,
        min(dur) as min_ns,
        max(dur) as max_ns,
        sum(waiting_dur) as waiting_ns,
        sum(running_dur) as running_ns,
        sum(pending_dur) as pending_ns
    from per_instance
    group by device_id, task_type, api_name, task_id, op_name, stream_id
)

select
    device_id,
    100.0 * time_ns / nullif(sum(time_ns) over (partition by device_id), 0) as time_pct,
    time_ns,
    task_count,
    avg_ns,
    min_ns,
    max_ns,
    waiting_ns,
    running_ns,
    pending_ns,
    task_type,
    api_name,
    task_id,
    op_name,
    stream_id
from groups
order by device_id, time_pct desc nulls last, task_id, stream_id, task_type, api_name, op_name
