-- stg_task_launches: one row per (runtime API call, device task it launched).
--
-- Grain:   (device_id, seq, task_id, batch_id)
-- Sources: api_calls (level runtime, task_ids / batch_ids lists of Runtime.api)
-- Follows: msprof 2022 update_timeline_api (analysis-and-exports §A1.3), which joins a
--          Runtime.api call to the tasks of its taskId list on (stream, task, batch).
-- Columns:
--   device_id      -     device
--   stream_id      -     stream of the call (and of the task)
--   task_id        -     launched task id
--   batch_id       -     batch id paired with the task id
--   api_name       -     runtime API that launched the task
--   start_ns       ns    call entry
--   end_ns         ns    call exit
--   seq            -     record index of the call

select
    device_id,
    stream_id,
    unnest(task_ids) as task_id,
    unnest(batch_ids) as batch_id,
    api_name,
    start_ns,
    end_ns,
    seq
from api_calls
where level = 'runtime' and len(task_ids) > 0
