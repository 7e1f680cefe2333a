-- stg_task_instances: one row per task instance rebuilt from Task Scheduler state changes.
--
-- Grain:   (device_id, record_kind, stream_id, task_id, instance_no)
-- Sources: task_states; task_runs (executions of generations 2 and 3)
-- Follows: msprof calculate_timeline_task_time (docs/formats.md#rule-task-states): rows of one
--          (stream, task) sorted by (timestamp, state); every COMPLETE closes an instance
--          whose WAITING, PENDING and RUNNING times are the latest ones seen since the
--          previous COMPLETE. States 7, 8, 9 (AI Core start/done, AI CPU phase two) play no
--          part. TS memcpy records (receive, start, end) were mapped by the reader onto
--          WAITING, RUNNING, COMPLETE and run through the same machine, separately from
--          TIME_LINE records (record_kind is part of the key).
--          The reader counts the COMPLETEs per key while the records stream past
--          (task_states.instance_no; the TS writes a task's states in time order); a device
--          whose states did not arrive in that order is numbered here with the sort instead.
--          Rows after the last COMPLETE form an instance with no COMPLETE: msprof drops it
--          silently; here it is kept with is_complete = false and counted.
--          An instance whose COMPLETE is missing in the middle of a sequence is absorbed
--          into the next one (as in msprof); dropped_instances counts it.
--          Generations 2 and 3 have no TIME_LINE states: each execution in task_runs (HWTS or
--          STARS start/end logs, paired by the reader) is one instance with running = start
--          and complete = end, and waiting / pending NULL (those states do not exist there;
--          has_states is false). An execution whose start log is missing, or whose times are
--          unknown (no HWTS frequency), is not complete. Its instance_no counts the executions
--          of its (stream, task) before it in (end, seq) order: counted by the reader
--          (task_runs.instance_no; the logs are paired and written by end time), else here
--          with the sort for a device whose executions did not arrive in that order.
--          TS task-type and flip records of task_states take no part in the state machine.
-- Columns:
--   device_id          -    device
--   record_kind        -    time_line or ts_memcpy; task_run for an execution from task_runs
--   stream_id          -    stream id
--   task_id            -    task id
--   instance_no        -    0-based number of the instance within its (stream, task)
--   task_type          -    runtime task type code of the instance's last state
--   task_type_name     -    msprof's name for task_type ("kernel AI core task", ...)
--   waiting_ns         ns   latest WAITING time; NULL if none
--   pending_ns         ns   latest PENDING time; NULL if none
--   running_ns         ns   latest RUNNING time; NULL if none
--   complete_ns        ns   COMPLETE time; NULL for an instance that never completed
--   is_complete        -    complete_ns is not NULL
--   dropped_instances  -    instances lost inside this one: a state seen n times means n - 1
--                           instances lost their COMPLETE (all of them when is_complete is false);
--                           0 for task_run instances
--   has_states         -    true when the source reports waiting / pending states (Ascend310
--                           TIME_LINE and TS memcpy records); false for task_runs
--   batch_id           -    batch id of a task_run instance (task id wrap-arounds or flips);
--                           NULL for state-machine instances

with task_types (code, name) as (
    values
        (0, 'kernel AI core task'), (1, 'kernel AI cpu task'), (2, 'event record task'),
        (3, 'stream wait event task'), (4, 'fusion issue task'), (5, 'memory copy task'),
        (6, 'maintenance task'), (7, 'create stream task'), (8, 'kernel data dump task'),
        (9, 'event notify task'), (10, 'pctrace enable task'), (11, 'create L2 addr task'),
        (12, 'model maintaince task'), (13, 'model execute task'), (14, 'notify wait task'),
        (15, 'notify record task'), (16, 'HCCL rdma cpy task'), (17, 'L2 SDMA memory copy task'),
        (18, 'stream switch task'), (19, 'stream active task'), (20, 'label set task'),
        (21, 'label switch task'), (22, 'label goto task'), (23, 'profiler trace task'),
        (24, 'event reset task'), (25, 'HCCL rdma db cpy task'), (26, 'profiler trace task'),
        (50, 'stars common task'), (51, 'ffts task'), (52, 'ffts plus task'),
        (64, 'profiling enable task'), (65, 'profiling disable task'), (66, 'AI vector task'),
        (67, 'add model end graph task'), (68, 'AICPU schedule task'), (69, 'active stream task'),
        (70, 'load data dump info task'), (71, 'stream switch n task'),
        (72, 'Host func Callback task'), (73, 'start online profiling task'),
        (74, 'stop online profiling task'), (75, 'stream label switch task'),
        (77, 'stream label goto task'), (78, 'overflow debug register task'),
        (79, 'overflow debug unregister task'), (80, 'L1 fusion dump set task'),
        (81, 'add model exit graph task'), (82, 'mdc profiling task'),
        (83, 'device ring buff set task'), (84, 'stream overflow debug register task'),
        (85, 'stream overflow debug unregister task'), (86, 'timeout set task'),
        (87, 'get device message task'), (101, 'model-task update task'),
        (116, 'task update task')
),

states as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select
        device_id,
        record_kind = 'ts_memcpy' as is_memcpy,
        stream_id,
        task_id,
        task_type,
        task_state,
        ts_ns,
        seq,
        instance_no
    from task_states
    where task_state in (1, 2, 3, 4) and record_kind in ('time_line', 'ts_memcpy')
),

unnumbered_run_devices as (
    select distinct device_id from task_runs where instance_no is null
),

unnumbered_devices as (
    -- devices whose states the reader could not number (not in order, no clock, run ingested
    -- by an older profetl): numbered below with the sort
    select distinct device_id from states where instance_no is null
),

numbered as (
    select device_id, is_memcpy, stream_id, task_id, task_type, task_state, ts_ns, instance_no
    from states
    anti join unnumbered_devices using (device_id)

    union all

    -- instance_no = the COMPLETEs before the row in its key's (time, state, seq) order,
    -- from two row numbers (cheaper than a running sum): the row's place among all rows of
    -- its key and among the rows of its own kind (COMPLETE or not). A COMPLETE has
    -- r_same - 1 COMPLETEs before it; another row has r_all - r_same.
    select
        device_id, is_memcpy, stream_id, task_id, task_type, task_state, ts_ns,
        case when task_state = 3 then r_same - 1 else r_all - r_same end as instance_no
    from (
        select
            *,
            row_number() over (
                partition by device_id, is_memcpy, stream_id, task_id
                order by ts_ns, task_state, seq
            ) as r_all,
            row_number() over (
                partition by device_id, is_memcpy, stream_id, task_id, task_state = 3
                order by ts_ns, task_state, seq
            ) as r_same
        from states
        semi join unnumbered_devices using (device_id)
    )
),

instances as (
    select
        device_id,
        case when is_memcpy then 'ts_memcpy' else 'time_line' end as record_kind,
        stream_id,
        task_id,
        instance_no,
        arg_max(task_type, ts_ns) as task_type,
        max(ts_ns) filter (where task_state = 1) as waiting_ns,
        max(ts_ns) filter (where task_state = 4) as pending_ns,
        max(ts_ns) filter (where task_state = 2) as running_ns,
        max(ts_ns) filter (where task_state = 3) as complete_ns,
        greatest(
            count(*) filter (where task_state = 1),
            count(*) filter (where task_state = 4),
            count(*) filter (where task_state = 2)
        ) as starts
    from numbered
    group by device_id, is_memcpy, stream_id, task_id, instance_no
)

select
    instances.device_id,
    instances.record_kind,
    instances.stream_id,
    instances.task_id,
    instances.instance_no,
    instances.task_type,
    coalesce(task_types.name, 'unknown ' || instances.task_type::varchar) as task_type_name,
    instances.waiting_ns,
    instances.pending_ns,
    instances.running_ns,
    instances.complete_ns,
    instances.complete_ns is not null as is_complete,
    case
        when instances.complete_ns is null then greatest(instances.starts, 1)
        else greatest(instances.starts - 1, 0)
    end as dropped_instances,
    true as has_states,
    null::integer as batch_id
from instances
left join task_types on instances.task_type = task_types.code

union all

select
    device_id,
    'task_run' as record_kind,
    stream_id,
    task_id,
    instance_no,
    task_type,
    task_type_name,
    null::bigint as waiting_ns,
    null::bigint as pending_ns,
    start_ns as running_ns,
    end_ns as complete_ns,
    start_ns is not null and end_ns is not null as is_complete,
    0 as dropped_instances,
    false as has_states,
    batch_id
from (
    select runs.*
    from task_runs as runs
    anti join unnumbered_run_devices as u on runs.device_id is not distinct from u.device_id
    union all
    -- devices whose executions the reader could not number (not in end order, no clock, run
    -- ingested by an older profetl, no device id): numbered with the sort
    select
        runs.* replace ((row_number() over (
            partition by runs.device_id, runs.stream_id, runs.task_id order by runs.end_ns, runs.seq
        ) - 1)::bigint as instance_no)
    from task_runs as runs
    semi join unnumbered_run_devices as u on runs.device_id is not distinct from u.device_id
)
