-- stg_task_launches: one row per (runtime API call, device task it launched).
--
-- Grain:   (device_id, seq, task_id, batch_id)
-- Sources: api_calls (level runtime, task_ids / batch_ids lists of Runtime.api), task_ops
--          (compact task_track)
-- Follows: msprof 2022 update_timeline_api (docs/formats.md#rule-api-launch), which joins a
--          Runtime.api call to the tasks of its taskId list on (stream, task, batch).
--          Generations 2 and 3 (CANN 7+ host data): a compact task_track record names the
--          task; it belongs to the runtime-level API record of the same thread that started
--          last at or before its timestamp and has not ended before it (the association
--          rule of docs/formats.md#rule-association, msprof cann_analysis_chain). Its start and end are the
--          API's. FLIP_TASK (98) and MAINTENANCE (6) records launch no device task.
-- Columns:
--   device_id      -     device
--   stream_id      -     stream of the call (and of the task)
--   task_id        -     launched task id
--   batch_id       -     batch id paired with the task id
--   api_name       -     runtime API that launched the task
--   start_ns       ns    call entry
--   end_ns         ns    call exit
--   seq            -     record index of the call (of the task_track record for generations 2 and 3)
--   call_device_id -     device of the launching call's row in api_calls (with call_tid, start_ns and
--                        end_ns: the call in stg_api_calls)
--   call_tid       -     thread of the launching call

with legacy as (
    select
        device_id,
        stream_id,
        unnest(task_ids) as task_id,
        unnest(batch_ids) as batch_id,
        api_name,
        start_ns,
        end_ns,
        seq,
        device_id as call_device_id,
        tid as call_tid
    from api_calls
    where level = 'runtime' and len(task_ids) > 0
),

tracks as (
    select device_id, stream_id, task_id, batch_id, tid, ts_ns, seq
    from task_ops
    where source = 'task_track' and task_type_code not in (6, 98)
),

runtime_apis as (
    select tid, api_name, start_ns, end_ns, device_id
    from api_calls
    where level = 'runtime' and record_kind is not null
),

api_names as materialized (
    -- the runtime APIs' names, numbered: the ASOF join below sorts and spills 8-byte codes, not
    -- strings (a handful of names), and the names come back after it (as in stg_task_ops)
    select unnest(names) as api_name, unnest(range(1, len(names) + 1)) as code
    from (select list(distinct api_name) filter (api_name is not null) as names from runtime_apis)
),

coded_apis as (
    select apis.tid, n.code as api_code, apis.start_ns, apis.end_ns, apis.device_id
    from runtime_apis as apis
    left join api_names as n on apis.api_name = n.api_name
),

compact as (
    select
        tracks.device_id,
        tracks.stream_id,
        tracks.task_id,
        tracks.batch_id,
        n.api_name,
        apis.start_ns,
        apis.end_ns,
        tracks.seq,
        apis.device_id as call_device_id,
        apis.tid as call_tid
    from tracks
    asof inner join coded_apis as apis
        on tracks.tid = apis.tid
        and tracks.ts_ns >= apis.start_ns
    left join api_names as n on apis.api_code = n.code
    where tracks.ts_ns <= apis.end_ns
)

select * from legacy
union all
select * from compact
