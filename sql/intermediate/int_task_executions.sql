-- int_task_executions: one row per task instance (execution) with what ran it: the runtime call
-- that launched it and the operator it ran.
--
-- Grain:   (device_id, record_kind, stream_id, task_id, instance_no)
-- Sources: stg_task_instances, stg_task_launches, stg_task_ops, int_op_keys
-- Stored:  yes, a table: as a view, each mart reading it ran its hash joins (tables of one row per
--          task, as many as the run's distinct tasks) in the same pipeline as its own sort or
--          aggregation, which then could not spill enough: op_summary's sort ran out of the
--          memory limit on a run of many distinct tasks (tests/sql/test_memory_limit.py).
--          Stored, the joins and the marts' sorts each run on their own, and spill.
-- Follows: the one place where an execution meets its launch and its operator; every mart and
--          the timeline read them from here.
--          Launch (docs/formats.md#rule-api-launch, on CANN 7+ data found by
--          docs/formats.md#rule-association in stg_task_launches): the launch of the
--          instance's (device, stream, task) that started last at or before start_ns; none
--          before it (or no start_ns) gives NULL.
--          Operator (docs/formats.md#rule-op-name, descriptions in stg_task_ops): the
--          description of the (device, stream, task) valid last at or before start_ns (its
--          valid_from_ns is the minimum BIGINT for a task's first description, so an
--          execution before every description takes the first); none (or no start_ns) gives
--          NULL. model_id, op_name, op_type, ge_task_type and block_dim come from that one
--          description.
--          start_ns, the time both are looked up at: RUNNING, else PENDING, else WAITING, else
--          COMPLETE (Ascend310 state-machine instances can miss states; a HWTS / STARS
--          execution has running = start).
--          The launching call (call_*) is found only where the DuckDB variable task_calls is
--          true (the timeline sets it, for its arrows); a build needs only the API name and
--          leaves call_* NULL: each instance's own call takes an ASOF join over every instance.
--          How: a (device, stream, task) whose launches all name one API (descriptions one op
--          and the first valid from the start; the common case) takes it by a hash join on the
--          key; only the other tasks' instances and launches (descriptions) go through an ASOF
--          join; same rows (pipeline/jobs/transforms.py). The operator: op_in_force
--          (sql/macros/task_ops.sql), as int_pmu_records_ops.
-- Columns:
--   device_id       -       device
--   record_kind     -       time_line, ts_memcpy or task_run (stg_task_instances)
--   stream_id       -       stream id
--   task_id         -       task id
--   instance_no     -       0-based number of the instance within its (stream, task)
--   batch_id        -       batch id of a task_run instance; NULL for state-machine instances
--   task_type       -       runtime task type code
--   task_type_name  -       name of the device task type ("kernel AI core task", AI_CORE, ...)
--   waiting_ns      ns      latest WAITING time; NULL if none
--   pending_ns      ns      latest PENDING time; NULL if none
--   running_ns      ns      latest RUNNING time (execution start); NULL if none
--   complete_ns     ns      COMPLETE time (execution end); NULL for an instance that never completed
--   is_complete     -       complete_ns is not NULL (and, for a task_run, running_ns too)
--   has_states      -       the source reports waiting / pending states (Ascend310)
--   start_ns        ns      running_ns, else pending_ns, else waiting_ns, else complete_ns: when the
--                           launch and the operator in force are looked up
--   api_name        -       runtime API that launched the instance; NULL when none did
--   call_device_id  -       device of the launching call's row (with call_tid and call_start_ns: the
--                           call in stg_api_calls); NULL when no call, and unless task_calls is set
--   call_tid        -       thread of the launching call
--   call_start_ns   ns      entry of the launching call
--   call_end_ns     ns      exit of the launching call
--   model_id        -       model id of the operator (4294967295 = none); NULL when unknown
--   op_name         -       operator name; NULL when no description names the instance
--   op_type         -       operator type
--   ge_task_type    -       GE task type of the operator (AI_CORE, AI_CPU, ...)
--   block_dim       blocks  blocks the operator ran

with instances as not materialized (
    -- read by three branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select
        device_id, record_kind, stream_id, task_id, instance_no, batch_id, task_type, task_type_name,
        waiting_ns, pending_ns, running_ns, complete_ns, is_complete, has_states,
        coalesce(running_ns, pending_ns, waiting_ns, complete_ns) as start_ns,
        -- the launching call of every instance, or (false, a build) only its API name
        coalesce(getvariable('task_calls'), false) as with_calls
    from stg_task_instances
),

launch_keys as (
    -- per (device, stream, task): its API name when every launch of it names the same one (the
    -- common case), valid from the first launch; the other tasks take the ASOF join
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

multi_api_keys as (
    select device_id, stream_id, task_id from launch_keys where not is_single
),

with_api as (
    -- with_calls: every instance through the launches' ASOF join, for its own call
    select
        i.* exclude (with_calls),
        l.api_name,
        l.call_device_id,
        l.call_tid,
        l.start_ns as call_start_ns,
        l.end_ns as call_end_ns
    from (select * from instances where with_calls) as i
    asof left join stg_task_launches as l
        on i.device_id = l.device_id
        and i.stream_id = l.stream_id
        and i.task_id = l.task_id
        and i.start_ns >= l.start_ns
    union all by name
    -- else the API name only: by key where every launch of the task names one API ...
    select
        i.* exclude (with_calls),
        case when i.start_ns >= lk.first_ns then lk.api_name end as api_name
    from (
        select * from instances anti join multi_api_keys using (device_id, stream_id, task_id)
        where not with_calls
    ) as i
    left join launch_keys as lk
        on i.device_id = lk.device_id
        and i.stream_id = lk.stream_id
        and i.task_id = lk.task_id
    union all by name
    -- ... and by the ASOF join, on those tasks' launches only, for the other tasks
    select i.* exclude (with_calls), l.api_name
    from (
        select * from instances semi join multi_api_keys using (device_id, stream_id, task_id)
        where not with_calls
    ) as i
    asof left join (
        select * from stg_task_launches semi join multi_api_keys using (device_id, stream_id, task_id)
    ) as l
        on i.device_id = l.device_id
        and i.stream_id = l.stream_id
        and i.task_id = l.task_id
        and i.start_ns >= l.start_ns
),

with_op as (
    -- the operator in force at start_ns (sql/macros/task_ops.sql)
    select * from op_in_force('with_api', r.start_ns, 'stg_task_ops', 'int_op_keys')
)

select
    device_id,
    record_kind,
    stream_id,
    task_id,
    instance_no,
    batch_id,
    task_type,
    task_type_name,
    waiting_ns,
    pending_ns,
    running_ns,
    complete_ns,
    is_complete,
    has_states,
    start_ns,
    api_name,
    call_device_id,
    call_tid,
    call_start_ns,
    call_end_ns,
    op_model_id as model_id,
    op_name,
    op_type,
    op_ge_task_type as ge_task_type,
    op_block_dim as block_dim
from with_op
