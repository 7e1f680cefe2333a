-- task_ops: the operator in force, so that the lookup the intermediate models share is written
-- once.
--
-- op_in_force(rows_t, at_ns, ops_t, keys_t)
--   every row of the table (or CTE) named rows_t, whose columns include device_id, stream_id
--   and task_id, with the operator of that (device, stream, task) in force at at_ns (an
--   expression over the row, which the macro calls r: r.start_ns, r.ts_ns), by
--   docs/formats.md#rule-op-name: the description of ops_t (stg_task_ops) valid last at or
--   before at_ns; none before it, or a NULL at_ns, gives NULL. Adds the columns
--   op_model_id, op_name, op_type, op_ge_task_type, op_block_dim (that description's
--   model_id, op_name, op_type, ge_task_type, block_dim) and has_task_ops (some description
--   names the row's task, in force or not).
--   How: a task that keys_t (int_op_keys) says one operator describes throughout takes it by
--   a hash join on the key; only the other tasks' rows, and their descriptions, go through the
--   ASOF join on valid_from_ns. Same rows, a fraction of the work: DuckDB's ASOF join sorts
--   every row given to it (pipeline/jobs/transforms.py; tests/sql/test_task_op_keys.py).
--   The tables are named by the caller (query_table), since a table macro binds the tables
--   its body names when it is created, before the build has made them. Read by
--   int_task_executions and int_pmu_records_ops.

create or replace macro op_in_force(rows_t, at_ns, ops_t, keys_t) as table
with multi_keys as (
    select device_id, stream_id, task_id from query_table(keys_t) where not is_single
)

select
    r.*,
    -- a row without a time has no description in force (as in the ASOF join)
    case when at_ns is not null then k.model_id end as op_model_id,
    case when at_ns is not null then k.op_name end as op_name,
    case when at_ns is not null then k.op_type end as op_type,
    case when at_ns is not null then k.ge_task_type end as op_ge_task_type,
    case when at_ns is not null then k.block_dim end as op_block_dim,
    k.task_id is not null as has_task_ops
from (select * from query_table(rows_t) anti join multi_keys using (device_id, stream_id, task_id)) as r
left join query_table(keys_t) as k
    on r.device_id = k.device_id
    and r.stream_id = k.stream_id
    and r.task_id = k.task_id
union all
select
    r.*,
    o.model_id as op_model_id,
    o.op_name,
    o.op_type,
    o.ge_task_type as op_ge_task_type,
    o.block_dim as op_block_dim,
    true as has_task_ops  -- a task of keys_t
from (select * from query_table(rows_t) semi join multi_keys using (device_id, stream_id, task_id)) as r
asof left join (
    select * from query_table(ops_t) semi join multi_keys using (device_id, stream_id, task_id)
) as o
    on r.device_id = o.device_id
    and r.stream_id = o.stream_id
    and r.task_id = o.task_id
    and at_ns >= o.valid_from_ns;
