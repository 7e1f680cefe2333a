-- stg_task_ops: one row per task description: the operator a (stream, task) runs.
--
-- Grain:   one row per description, with no key among its columns: a description is a task_ops
--          row (device_id, source, source_file, seq), or for an export a task_runs execution
--          (device_id, source_file, seq), and source_file is not kept: descriptions are looked
--          up by (device, stream, task) and time, never by their own key
-- Sources: task_ops (ge_task_desc, compact task_track and node_basic_info, ms_task_desc, export),
--          api_calls (node-level API records), task_runs (device streams of ms_task_desc tasks)
-- Follows: msprof's op-name lookup by (task_id, stream_id) in GE TaskInfo
--          (docs/formats.md#rule-op-name). Marts pick, with an ASOF join on valid_from_ns (or by
--          key where all descriptions of a task say the same),
--          the description reported last before a task ran (a task id may be reused by
--          another op later), else the first one. Runtime.task_track rows carry no op name
--          and are not used for names.
--          Generations 2 and 3 (CANN 7+ host data), the association rule of docs/formats.md#rule-association
--          (msprof cann_analysis_chain): per thread, a compact task_track record belongs to
--          the node-level API record that started last at or before it and has not ended;
--          that node's op is the (last) node_basic_info record of the same thread inside the
--          node's interval (op name, op type, GE task type, block dim), else the node's itemId
--          (the op-name hash). Of nodes of a thread that start at one time, the one recorded
--          last counts.
--          Model id (msprof cann_analysis_gear, TaskInfo): a track inside a node takes the item
--          (the model id) of the model-level API record of its thread (ModelLoad, InputCopy,
--          ModelExecute, ...) that started last at or before the node and ends at or after the
--          node's end, else 4294967295 (no model). Model records are taken not to nest (msprof
--          would take an outer record when the last one ended before the node).
--          A track outside any node: a kernel task (runtime type KERNEL_*, STARS_COMMON or
--          FFTS_PLUS) with a kernel name is its own op, as msprof names a kernel that has a
--          task_track but no node_basic_info: op name and op type = the kernel name, GE task
--          type from the runtime type (KERNEL_AICORE AI_CORE, KERNEL_AIVEC AI_VECTOR_CORE,
--          KERNEL_MIX_AIC MIX_AIC, KERNEL_MIX_AIV MIX_AIV, KERNEL_AICPU AI_CPU, else the runtime
--          type), block dim 0, model id 4294967295 (msprof's op description has no model here,
--          even inside a model record; it is the id op_summary shows). Any other track outside
--          a node keeps its kernel name as op name, with no type, block dim or model (msprof
--          describes no op for it). msprof at profiling level 0 writes N/A types; the level is
--          not read here.
--          MindSpore 0.5 task_desc_info text names tasks by logical stream ids that differ
--          from the device's (3 vs 519 in the real JOB3 dump); mindinsight joins on task id
--          alone, and so does this: the stream is the device stream of the executions with
--          that task id when there is exactly one, else the stream as written.
--          Exported runs (generation 4): one description per execution (task_runs of an
--          export), its operator joined exactly on (device, stream, task, start, context) as
--          the exporter associated them; valid from the execution's own start, so the ASOF
--          join of a mart gives every execution its own operator (NULL where none).
-- Columns:
--   device_id      -       device
--   stream_id      -       stream id
--   task_id        -       task id
--   batch_id       -       batch id (high half of the producer's 32-bit task id)
--   model_id       -       model id (4294967295 = none): GE / MindSpore / export as written,
--                          compact tracks as in Follows; NULL when unknown
--   op_name        -       operator name
--   op_type        -       operator type
--   ge_task_type   -       GE task type (AI_CORE, AI_CPU, ...)
--   block_dim      blocks  block dim
--   ts_ns          ns      host time the description was reported
--   valid_from_ns  ns      from when the description names the (stream, task): its ts_ns, but
--                          the minimum BIGINT for the first description of a (stream, task), so
--                          that a task seen before any description takes the first one
--   seq            -       record index
--   source         -       ge_task_desc, task_track (associated as above), ms_task_desc or export

with ge as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select
        device_id,
        stream_id,
        task_id,
        batch_id,
        model_id,
        op_name,
        op_type,
        task_type as ge_task_type,
        block_dim,
        ts_ns,
        seq,
        source
    from task_ops
    where source = 'ge_task_desc'
),

tracks as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select
        device_id,
        stream_id,
        task_id,
        batch_id,
        op_name as kernel_name,
        -- a kernel task's GE task type, named after its runtime task type; NULL for tasks that
        -- are not kernels (event records, copies, ...)
        case
            when task_type like 'KERNEL%' or task_type in ('STARS_COMMON', 'FFTS_PLUS') then
                case task_type
                    when 'KERNEL_AICORE' then 'AI_CORE'
                    when 'KERNEL_AIVEC' then 'AI_VECTOR_CORE'
                    when 'KERNEL_MIX_AIC' then 'MIX_AIC'
                    when 'KERNEL_MIX_AIV' then 'MIX_AIV'
                    when 'KERNEL_AICPU' then 'AI_CPU'
                    else task_type
                end
        end as kernel_type,
        tid,
        ts_ns,
        seq
    from task_ops
    where source = 'task_track' and task_type_code not in (6, 98)
),

nodes as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select tid, item, start_ns, end_ns, seq
    from api_calls
    where level = 'node' and record_kind is not null
),

models as (
    -- model-level API records (ModelLoad, InputCopy, ModelExecute, OutputCopy, ...): the item
    -- of one is its model id
    select tid, start_ns, end_ns, try_cast(item as bigint) as model_id
    from api_calls
    where level = 'model' and record_kind is not null
),

basic_info as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select tid, op_name, op_type, task_type, block_dim, ts_ns
    from task_ops
    where source = 'node_basic_info'
),

texts as materialized (
    -- every text the ASOF joins below carry, numbered: they sort and spill 8-byte codes, not
    -- strings, and the codes are turned
    -- back into text after them. Made as one list and unnested so that DuckDB knows it is
    -- small and builds each join's hash table on it (as a plain distinct it was estimated as
    -- large as the tracks, and the tracks' hash table ran out of memory). The texts are
    -- operator, kernel and type names: thousands in a real dump, not one per record
    select unnest(texts) as text, unnest(range(1, len(texts) + 1)) as code
    from (
        select list(distinct text) filter (text is not null) as texts
        from (
            select kernel_name as text from tracks
            union all
            select kernel_type from tracks
            union all
            select item from nodes
            union all
            select op_name from basic_info
            union all
            select op_type from basic_info
            union all
            select task_type from basic_info
        )
    )
),

node_spans as (
    -- how far a node's basic info may lie: inside the node, and before the thread's next
    -- node starts (a record after that belongs to the node that started last before it)
    select
        tid,
        item_code,
        start_ns,
        end_ns,
        least(end_ns, coalesce(next_start_ns - 1, end_ns)) as last_ns
    from (
        select
            n.tid,
            i.code as item_code,
            n.start_ns,
            n.end_ns,
            lead(n.start_ns) over (partition by n.tid order by n.start_ns, n.seq) as next_start_ns
        from nodes as n
        left join texts as i on n.item = i.text
    )
    -- of nodes that start at one time, the one recorded last
    where next_start_ns is distinct from start_ns
),

coded_info as (
    select
        bi.tid,
        o.code as op_code,
        y.code as op_type_code,
        k.code as task_type_code,
        bi.block_dim,
        bi.ts_ns
    from basic_info as bi
    left join texts as o on bi.op_name = o.text
    left join texts as y on bi.op_type = y.text
    left join texts as k on bi.task_type = k.text
),

node_info as (
    -- every node with its node_basic_info: the last one inside the node's span (none when
    -- the last one before the span's end lies before the node's start). Joined to the tracks
    -- by a second ASOF join rather than a hash join on the node: a hash join fed by the
    -- tracks' ASOF join ran out of DuckDB's memory limit on a 16 GB STARS run (bench/HISTORY.md)
    -- With its model: the model-level record of the thread that started last at or before the
    -- node and ends at or after the node's end (the node lies inside it), else none
    select
        span.tid,
        span.item_code,
        span.start_ns,
        span.end_ns,
        if(bi.ts_ns >= span.start_ns, bi.op_code, null) as op_code,
        if(bi.ts_ns >= span.start_ns, bi.op_type_code, null) as op_type_code,
        if(bi.ts_ns >= span.start_ns, bi.task_type_code, null) as task_type_code,
        if(bi.ts_ns >= span.start_ns, bi.block_dim, null) as block_dim,
        case when span.end_ns <= m.end_ns then m.model_id else 4294967295 end as model_id
    from node_spans as span
    asof left join coded_info as bi
        on span.tid = bi.tid
        and span.last_ns >= bi.ts_ns
    asof left join models as m
        on span.tid = m.tid
        and span.start_ns >= m.start_ns
),

coded_tracks as (
    select tracks.* exclude (kernel_name, kernel_type), k.code as kernel_code, t.code as kernel_type_code
    from tracks
    left join texts as k on tracks.kernel_name = k.text
    left join texts as t on tracks.kernel_type = t.text
),

compact_codes as (
    -- each track with the node that started last at or before it, when that node has not ended;
    -- a kernel outside any node (with a name) is its own op: type = name, block dim 0, no model
    select
        tracks.device_id,
        tracks.stream_id,
        tracks.task_id,
        tracks.batch_id,
        case
            when tracks.ts_ns <= ni.end_ns then coalesce(ni.op_code, ni.item_code, tracks.kernel_code)
            else tracks.kernel_code
        end as op_code,
        case
            when tracks.ts_ns <= ni.end_ns then ni.op_type_code
            when tracks.kernel_type_code is not null then tracks.kernel_code
        end as op_type_code,
        case
            when tracks.ts_ns <= ni.end_ns then ni.task_type_code
            when tracks.kernel_code is not null then tracks.kernel_type_code
        end as task_type_code,
        case
            when tracks.ts_ns <= ni.end_ns then ni.block_dim
            when tracks.kernel_code is not null and tracks.kernel_type_code is not null then 0
        end as block_dim,
        case
            when tracks.ts_ns <= ni.end_ns then ni.model_id
            when tracks.kernel_code is not null and tracks.kernel_type_code is not null then 4294967295
        end as model_id,
        tracks.ts_ns,
        tracks.seq
    from coded_tracks as tracks
    asof left join node_info as ni
        on tracks.tid = ni.tid
        and tracks.ts_ns >= ni.start_ns
),

compact as (
    select
        c.device_id,
        c.stream_id,
        c.task_id,
        c.batch_id,
        c.model_id,
        o.text as op_name,
        y.text as op_type,
        k.text as ge_task_type,
        c.block_dim,
        c.ts_ns,
        c.seq,
        'task_track' as source
    from compact_codes as c
    left join texts as o on c.op_code = o.code
    left join texts as y on c.op_type_code = y.code
    left join texts as k on c.task_type_code = k.code
),

run_streams as (
    select device_id, task_id, min(stream_id) as stream_id, count(distinct stream_id) as streams
    from task_runs
    group by device_id, task_id
),

mindspore as (
    select
        ms.device_id,
        case when rs.streams = 1 then rs.stream_id else ms.stream_id end as stream_id,
        ms.task_id,
        ms.batch_id,
        ms.model_id,
        ms.op_name,
        ms.op_type,
        ms.task_type as ge_task_type,
        ms.block_dim,
        ms.ts_ns,
        ms.seq,
        ms.source
    from task_ops as ms
    left join run_streams as rs on ms.device_id = rs.device_id and ms.task_id = rs.task_id
    where ms.source = 'ms_task_desc'
),

export_runs as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select *
    from task_runs
    where source in ('db_task', 'timeline', 'kernel_details', 'op_summary', 'task_time_csv')
),

exported as (
    -- one description per exported execution, valid from its own start: an execution no
    -- exported operator names gets a NULL op rather than an earlier execution's
    select
        runs.device_id,
        runs.stream_id,
        runs.task_id,
        runs.batch_id,
        coalesce(runs.model_id, ops.model_id) as model_id,
        ops.op_name,
        ops.op_type,
        coalesce(ops.task_type, runs.task_type_name) as ge_task_type,
        ops.block_dim,
        runs.start_ns as ts_ns,
        runs.seq,
        'export' as source
    from export_runs as runs
    left join export_ops() as ops  -- a level0 description named by its start (sql/macros/export_ops.sql)
        on runs.device_id = ops.device_id
        and runs.stream_id = ops.stream_id
        and runs.task_id = ops.task_id
        and runs.start_ns = ops.start_ns
        and coalesce(runs.context_id, -1) = coalesce(ops.context_id, -1)
    qualify row_number() over (partition by runs.device_id, runs.source_file, runs.seq order by ops.seq) = 1
),

descriptions as (
    select * from ge
    union all
    select * from compact
    union all
    select * from mindspore
    union all
    select * from exported
),

first_keys as (
    -- the first description of each (stream, task), from the descriptions' keys alone (compact
    -- rows have their track's keys, exported rows their execution's): a grouped minimum over
    -- few keys, where a window over the descriptions would sort every one of them
    select device_id, stream_id, task_id, min({'ts_ns': ts_ns, 'seq': seq, 'source': source}) as first
    from (
        select device_id, stream_id, task_id, ts_ns, seq, source from ge
        union all
        select device_id, stream_id, task_id, ts_ns, seq, 'task_track' from tracks
        union all
        select device_id, stream_id, task_id, ts_ns, seq, source from mindspore
        union all
        select device_id, stream_id, task_id, start_ns, seq, 'export' from export_runs
    )
    group by device_id, stream_id, task_id
)

select
    d.device_id,
    d.stream_id,
    d.task_id,
    d.batch_id,
    d.model_id,
    d.op_name,
    d.op_type,
    d.ge_task_type,
    d.block_dim,
    d.ts_ns,
    case
        when d.source <> 'export' and {'ts_ns': d.ts_ns, 'seq': d.seq, 'source': d.source} = f.first
            then -9223372036854775808
        else d.ts_ns
    end as valid_from_ns,
    d.seq,
    d.source
from descriptions as d
left join first_keys as f
    on d.device_id is not distinct from f.device_id
    and d.stream_id is not distinct from f.stream_id
    and d.task_id is not distinct from f.task_id
