-- int_aicpu_ops: one row per AI CPU task record with the operator it ran, where one execution
-- of the device says so.
--
-- Grain:   (device_id, source_file, seq)
-- Sources: stg_aicpu_tasks, int_task_executions
-- Stored:  yes, a table: read by aicpu_ops and build_issues
-- Follows: msprof's aicpu summary (docs/formats.md#rule-aicpu): an AI CPU record belongs to the
--          AI CPU execution of its (stream, task) whose span (start to end) holds the record's
--          run end; the operator is that execution's (int_task_executions: the description in
--          force). A text record names no stream or task: it takes the one AI CPU execution
--          of its device whose span holds its run end, when exactly one does. An AI CPU
--          execution is a complete instance whose device task type or GE task type is AI_CPU.
--          No execution, or more than one (ambiguous), joins nothing: the record keeps its own
--          node name (a text Node record, an export's Node) as op_name, else op_name is NULL
--          and build_issues counts it (aicpu_without_op). Nothing is dropped (msprof leaves
--          out records before the collection start and outside the chosen iterations).
--          How: a record with a (stream, task) by a hash join on it; a text record by two ASOF
--          joins on its device's AI CPU executions in start and in end order (start_steps,
--          end_steps), which count the executions holding its run end and give the one when
--          there is one, instead of comparing it with every execution of the device.
-- Columns:
--   device_id              -   device
--   source_file            -   slice or exported file of the record
--   seq                    -   record index in its stream
--   record_format          -   text, binary or export
--   stream_id              -   stream: the record's, else the joined execution's
--   task_id                -   task id: the record's, else the joined execution's
--   op_name                -   operator: the joined execution's, else the record's node name; NULL when neither
--   op_type                -   operator type of the joined execution; NULL without one
--   op_source              -   execution (joined), record (the record's own node name) or NULL
--   candidates             -   AI CPU executions whose span holds the record's run end (1 joins)
--   node_name              -   node name the record carries
--   start_ns               ns  run start
--   end_ns                 ns  run end
--   task_ns                ns  end_ns - start_ns
--   compute_ns             ns  compute time
--   memcpy_ns              ns  memory copy time
--   dispatch_ns            ns  dispatch time as written
--   total_ns               ns  total time as written
--   dispatch_recomputed_ns ns  before-run - submit from the ticks
--   total_recomputed_ns    ns  after-run - submit from the ticks

with cpu_runs as (
    select device_id, stream_id, task_id, running_ns, complete_ns, op_name, op_type
    from int_task_executions
    where
        is_complete
        and running_ns is not null
        and (task_type_name = 'AI_CPU' or ge_task_type = 'AI_CPU')
),

keyed as (
    -- records naming their (stream, task): a hash join on the key, the span as a filter
    select
        a.device_id,
        a.source_file,
        a.seq,
        count(*) as candidates,
        any_value(r.stream_id) as stream_id,
        any_value(r.task_id) as task_id,
        any_value(r.op_name) as op_name,
        any_value(r.op_type) as op_type
    from stg_aicpu_tasks as a
    join cpu_runs as r
        on
        a.device_id = r.device_id
        and a.stream_id = r.stream_id
        and a.task_id = r.task_id
        and a.end_ns between r.running_ns and r.complete_ns
    group by a.device_id, a.source_file, a.seq
),

start_steps as (
    -- per device and start time, in start order: how many AI CPU executions started by then, and
    -- of those the one that ends last. At a time t, started - ended (below) executions hold t;
    -- when exactly one does, it is the one of the latest end among those started by t (any
    -- other started by t ended before t). Two ASOF joins then replace a join of every record
    -- with every execution of its device.
    select
        device_id,
        running_ns,
        sum(n) over w as started,
        arg_max(last_run, last_end) over w as last_run
    from (
        select
            device_id,
            running_ns,
            count(*) as n,
            max(complete_ns) as last_end,
            arg_max(
                {
                    'stream_id': stream_id, 'task_id': task_id, 'op_name': op_name, 'op_type': op_type,
                    'complete_ns': complete_ns
                },
                complete_ns
            ) as last_run
        from cpu_runs
        group by device_id, running_ns
    )
    window w as (partition by device_id order by running_ns rows between unbounded preceding and current row)
),

end_steps as (
    -- per device and end time: how many AI CPU executions ended by then
    select
        device_id,
        complete_ns,
        sum(count(*)) over (partition by device_id order by complete_ns) as ended
    from cpu_runs
    group by device_id, complete_ns
),

timed as (
    -- text records (no stream or task): the executions of the device holding the run end
    select
        a.device_id,
        a.source_file,
        a.seq,
        coalesce(s.started, 0) - coalesce(e.ended, 0) as candidates,
        s.last_run.stream_id,
        s.last_run.task_id,
        s.last_run.op_name,
        s.last_run.op_type
    from stg_aicpu_tasks as a
    asof left join start_steps as s
        on a.device_id = s.device_id and a.end_ns >= s.running_ns
    asof left join end_steps as e
        on a.device_id = e.device_id and a.end_ns > e.complete_ns
    where a.stream_id is null
),

matches as (
    select * from keyed
    union all
    select * from timed
)

select
    a.device_id,
    a.source_file,
    a.seq,
    a.record_format,
    coalesce(a.stream_id, case when m.candidates = 1 then m.stream_id end) as stream_id,
    coalesce(a.task_id, case when m.candidates = 1 then m.task_id end) as task_id,
    coalesce(case when m.candidates = 1 then m.op_name end, a.node_name) as op_name,
    case when m.candidates = 1 then m.op_type end as op_type,
    case
        when m.candidates = 1 and m.op_name is not null then 'execution'
        when a.node_name is not null then 'record'
    end as op_source,
    coalesce(m.candidates, 0) as candidates,
    a.node_name,
    a.start_ns,
    a.end_ns,
    a.task_ns,
    a.compute_ns,
    a.memcpy_ns,
    a.dispatch_ns,
    a.total_ns,
    a.dispatch_recomputed_ns,
    a.total_recomputed_ns
from stg_aicpu_tasks as a
left join matches as m
    on a.device_id = m.device_id and a.source_file = m.source_file and a.seq = m.seq
