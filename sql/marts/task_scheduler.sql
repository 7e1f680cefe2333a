-- task_scheduler: one row per (device, task type, API, task, stream, op) with its instances'
-- times split into waiting, running and pending.
--
-- Grain:   (run_id, device_id, task_type, api_name, task_id, stream_id, op_name); api_name and
--          op_name NULL are values
-- Sources: stg_task_instances (complete instances), stg_task_launches, stg_task_ops
-- Follows: msprof _get_task_schedule_sql and calculate_task_schedule_data
--          (docs/formats.md#rule-task-scheduler), per instance:
--            running = complete - running (0 without RUNNING)
--            waiting = running - waiting, or complete - waiting when RUNNING is missing or
--                      earlier than WAITING (0 without WAITING)
--            pending = complete - pending, so it spans pending and running (0 without
--                      PENDING); kept as msprof defines it so the numbers compare
--            duration = complete - running, or complete - pending without RUNNING
--          Time = sum of running, Time(%) = its share of the device's total running time,
--          rows sorted by Time(%) descending. Values stay in integer ns (msprof prints us).
--          Choices: msprof forces batch id 0 on Ascend310, so a task id reused across
--          inferences is one row with Count > 1 (kept). The API is the runtime call whose
--          task list holds (stream, task) and that started last before the instance (msprof
--          lets the last call of the whole run win, docs/formats.md#rule-api-launch). The op is the
--          GE task description of (stream, task) reported last before the instance, else
--          the first one. Op name is part of the key, so distinct ops never merge. An
--          instance with neither RUNNING nor PENDING has no duration (msprof would count
--          complete - 0); instances without COMPLETE are not here (see build_issues).
--          Generations 2 and 3 (HWTS and STARS chips): an instance is one execution from the
--          start/end logs; Running and the durations are end - start. Waiting and Pending
--          are NULL, not 0: those states exist only in Ascend310's TIME_LINE records
--          (msprof exports this table on Ascend310 only). Type is
--          the device's task type (HWTS / STARS SQE type: AI_CORE, AI_CPU, ...), API the
--          runtime API whose compact task_track record named the task (docs/formats.md#rule-association),
--          Op Name the op the association rule of stg_task_ops gives.
--          How: a (device, stream, task) whose launches all name one API (descriptions one
--          op; the common case) takes it by a hash join on the key, from its first launch
--          (first valid description) on; only the other keys take the ASOF joins. Same rows as
--          ASOF joins for every instance, and faster (bench/HISTORY.md). Those ASOF joins read
--          only the other keys' launches and descriptions (pipeline/jobs/transforms.py).
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

with instances as (
    select
        *,
        coalesce(running_ns, pending_ns, waiting_ns, complete_ns) as start_ns
    from stg_task_instances
    where is_complete
),

launch_keys as (
    -- per (device, stream, task): its launching API when every launch of it names the same one
    -- (the common case), valid from the first launch
    select
        device_id,
        stream_id,
        task_id,
        min(api_name) as api_name,
        min(first_ns) as first_ns,
        count(*) = 1 as is_single  -- one name, or none at all
    from (
        -- one row per distinct API of a task: the test above then counts a few rows per task
        -- instead of comparing every launch's name
        select device_id, stream_id, task_id, api_name, min(start_ns) as first_ns
        from stg_task_launches
        group by device_id, stream_id, task_id, api_name
    )
    group by device_id, stream_id, task_id
),

op_keys as (
    -- per (device, stream, task): its op name when every description names the same one,
    -- valid from the first description
    select
        device_id,
        stream_id,
        task_id,
        min(op_name) as op_name,
        min(first_ns) as first_ns,
        count(*) = 1 as is_single  -- one name, or none at all
    from (
        -- one row per distinct op name of a task (NULL a name of its own), as for the APIs
        select device_id, stream_id, task_id, op_name, min(valid_from_ns) as first_ns
        from stg_task_ops
        group by device_id, stream_id, task_id, op_name
    )
    group by device_id, stream_id, task_id
),

keyed as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    -- each instance with its task's single-named API and op, where the task has them
    select
        instances.*,
        case when instances.start_ns >= lk.first_ns then lk.api_name end as key_api_name,
        coalesce(lk.is_single, false) as api_by_key,
        case when instances.start_ns >= ok.first_ns then ok.op_name end as key_op_name,
        coalesce(ok.is_single, false) as op_by_key
    from instances
    left join launch_keys as lk
        on instances.device_id = lk.device_id
        and instances.stream_id = lk.stream_id
        and instances.task_id = lk.task_id
    left join op_keys as ok
        on instances.device_id = ok.device_id
        and instances.stream_id = ok.stream_id
        and instances.task_id = ok.task_id
),

with_api as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select *, key_api_name as api_name
    from keyed
    where api_by_key
    union all by name
    select keyed.*, launches.api_name
    from (select * from keyed where not api_by_key) as keyed
    asof left join (
        select * from stg_task_launches
        semi join (select * from launch_keys where not is_single) using (device_id, stream_id, task_id)
    ) as launches
        on keyed.device_id = launches.device_id
        and keyed.stream_id = launches.stream_id
        and keyed.task_id = launches.task_id
        and keyed.start_ns >= launches.start_ns
),

with_op as (
    select *, key_op_name as op_name
    from with_api
    where op_by_key
    union all by name
    select with_api.*, ops.op_name
    from (select * from with_api where not op_by_key) as with_api
    asof left join (
        select * from stg_task_ops
        semi join (select * from op_keys where not is_single) using (device_id, stream_id, task_id)
    ) as ops
        on with_api.device_id = ops.device_id
        and with_api.stream_id = ops.stream_id
        and with_api.task_id = ops.task_id
        and with_api.start_ns >= ops.valid_from_ns
),

per_instance as (
    select
        device_id,
        task_type_name as task_type,
        api_name,
        task_id,
        op_name,
        stream_id,
        coalesce(complete_ns - running_ns, 0) as running_dur,
        case
            when not has_states then null
            when waiting_ns is null then 0
            when running_ns is null or running_ns < waiting_ns then complete_ns - waiting_ns
            else running_ns - waiting_ns
        end as waiting_dur,
        case when has_states then coalesce(complete_ns - pending_ns, 0) end as pending_dur,
        coalesce(complete_ns - running_ns, complete_ns - pending_ns) as dur
    from with_op
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
