-- stg_export_ops: one row per device task execution of an exported run, with the operator it ran
-- and its PMU values; and one row per exported PMU set that names no execution.
--
-- Grain:   (device_id, stream_id, task_id, start_ns, context_id, seq)
-- Sources: task_runs (executions of exported runs: database TASK, timeline Ascend Hardware
--          events or summary CSV rows), task_ops (exported operator descriptions, through
--          export_ops()),
--          task_metrics (exporter-computed PMU values, long format)
-- Follows: msprof's op_summary / kernel_details rows (docs/formats.md#rule-op-summary): the
--          exporter already associated each execution with its operator and PMU values, so
--          both are joined exactly on (device, stream, task, start, context): the readers write
--          each exported operator row and PMU value with the start of the execution it
--          describes. Marts take exported ops and PMU values from here only. An execution no
--          description names (event records, notify waits, SDMA copies of a timeline) keeps a
--          NULL op; a PMU set or an operator description no execution has is kept with has_run
--          false (marts leave it out, build_issues counts it), a description and a PMU set of one
--          key that no execution has as one row. A description without stream and
--          task (torch_npu level0) is named by the one execution starting at its start
--          (export_ops() of sql/macros/export_ops.sql; docs/formats.md#export-level0). An execution listed more than once with the same (device,
--          stream, task, start, context) is one execution (its first row), so op_summary keeps its grain.
--          PMU metrics (docs/formats.md#rule-export-metrics): on STARS chips each comes twice, aic_<m> for
--          the cube (AI Core) side and aiv_<m> for the vector side, and the side a task did not
--          use holds zeros. Choice: a task whose core (accelerator_core, else its task type) is
--          AI_VECTOR_CORE or MIX_AIV takes the aiv_ values, every other task the aic_ ones; an
--          unprefixed metric (older chips: one core type) is taken as it is. aicore_time(us) is
--          the cube side's time, aiv_time(us) the vector side's. Values are the exporter's, not
--          recomputed from counters (exports carry none).
--          The wait before an execution is the exporter's too, as its description wrote it
--          (wait_ns); op_summary recomputes its own beside it (docs/formats.md#export-wait).
-- Columns:
--   device_id              -       device
--   stream_id              -       stream id
--   task_id                -       task id
--   context_id             -       FFTS+ context id; NULL when none
--   model_id               -       model id as exported (4294967295 = no model)
--   batch_id               -       batch id where the export has one
--   start_ns               ns      execution start (exported wall-clock time)
--   end_ns                 ns      execution end
--   dur_ns                 ns      end_ns - start_ns
--   task_type              -       task type: the operator's where described, else the execution's
--   accelerator_core       -       core the operator ran on (AI_CORE, AI_VECTOR_CORE, MIX_AIC, ...)
--   op_name                -       operator (kernel) name; NULL when no description names it
--   op_type                -       operator type
--   op_state               -       dynamic or static where exported
--   block_dim              blocks  blocks the operator ran
--   mix_block_dim          blocks  blocks of the second core type of a MIX operator
--   input_shapes           -       input shapes as exported
--   input_data_types       -       input data types
--   input_formats          -       input formats
--   output_shapes          -       output shapes
--   output_data_types      -       output data types
--   output_formats         -       output formats
--   wait_ns                ns      the exporter's own wait before the execution (Wait Time(us), Task Wait Time(us),
--                                  waitNs) as it wrote it; NULL where its description has none
--                                  (docs/formats.md#export-wait)
--   connection_id          -       exporter's link from the execution to the host API that launched it
--   has_run                -       true for an execution; false for PMU values or a description naming no execution
--   has_op                 -       true when a description names the execution
--   has_metrics            -       true when the export holds PMU values for the execution
--   side                   -       aic or aiv: which core's metrics were taken
--   aicore_time_us         us      time to execute all instructions: aicore_time(us) (AI Core side) or aiv_time(us) (vector side)
--   total_cycles           cycles  cycles of all blocks
--   vec_time_us            us      Vector instruction time
--   vec_ratio              -       Vector cycles / total cycles
--   mac_time_us            us      Cube instruction time
--   mac_ratio              -       Cube cycles / total cycles
--   scalar_time_us         us      Scalar instruction time
--   scalar_ratio           -       Scalar cycles / total cycles
--   mte1_time_us           us      MTE1 time
--   mte1_ratio             -       MTE1 cycles / total cycles
--   mte2_time_us           us      MTE2 time
--   mte2_ratio             -       MTE2 cycles / total cycles
--   mte3_time_us           us      MTE3 time
--   mte3_ratio             -       MTE3 cycles / total cycles
--   icache_miss_rate       -       I-Cache misses / requests
--   memory_bound           -       as exported (msprof: mte2_ratio / max(mac_ratio, vec_ratio))
--   ub_read_bw_gbps        GB/s    Unified Buffer read bandwidth
--   ub_write_bw_gbps       GB/s    Unified Buffer write bandwidth
--   l1_read_bw_gbps        GB/s    L1 read bandwidth
--   l1_write_bw_gbps       GB/s    L1 write bandwidth
--   l2_read_bw_gbps        GB/s    L2 read bandwidth
--   l2_write_bw_gbps       GB/s    L2 write bandwidth
--   main_mem_read_bw_gbps  GB/s    main memory read bandwidth
--   main_mem_write_bw_gbps GB/s    main memory write bandwidth
--   cube_utilization_pct   %       cube utilisation as exported (cube_utilization(%))
--   seq                    -       the execution's row index in its source
--   source                 -       where the execution came from (db_task, timeline, kernel_details, ...)

with runs as (
    -- an execution the export lists more than once (same device, stream, task, start and
    -- context) is one execution: its first row
    select *, coalesce(context_id, -1) as ctx
    from task_runs
    where source in ('db_task', 'timeline', 'kernel_details', 'op_summary', 'task_time_csv')
    qualify row_number() over (partition by device_id, stream_id, task_id, start_ns, ctx order by source, seq)
        = 1
),

ops as (
    -- export_ops(): a level0 description (no stream, task) named by its execution's start
    select *, coalesce(context_id, -1) as ctx
    from export_ops()
    qualify row_number() over (partition by device_id, stream_id, task_id, start_ns, ctx order by seq) = 1
),

pivoted as (
    select
        device_id, stream_id, task_id, start_ns,
        coalesce(context_id, -1) as ctx,
        max(value) filter (where metric = 'aic_cube_utilization_pct') as aic_cube_utilization_pct,
        max(value) filter (where metric = 'aic_icache_miss_rate') as aic_icache_miss_rate,
        max(value) filter (where metric = 'aic_l1_read_bw_gbps') as aic_l1_read_bw_gbps,
        max(value) filter (where metric = 'aic_l1_write_bw_gbps') as aic_l1_write_bw_gbps,
        max(value) filter (where metric = 'aic_l2_read_bw_gbps') as aic_l2_read_bw_gbps,
        max(value) filter (where metric = 'aic_l2_write_bw_gbps') as aic_l2_write_bw_gbps,
        max(value) filter (where metric = 'aic_mac_ratio') as aic_mac_ratio,
        max(value) filter (where metric = 'aic_mac_time_us') as aic_mac_time_us,
        max(value) filter (where metric = 'aic_main_mem_read_bw_gbps') as aic_main_mem_read_bw_gbps,
        max(value) filter (where metric = 'aic_main_mem_write_bw_gbps') as aic_main_mem_write_bw_gbps,
        max(value) filter (where metric = 'aic_memory_bound') as aic_memory_bound,
        max(value) filter (where metric = 'aic_mte1_ratio') as aic_mte1_ratio,
        max(value) filter (where metric = 'aic_mte1_time_us') as aic_mte1_time_us,
        max(value) filter (where metric = 'aic_mte2_ratio') as aic_mte2_ratio,
        max(value) filter (where metric = 'aic_mte2_time_us') as aic_mte2_time_us,
        max(value) filter (where metric = 'aic_mte3_ratio') as aic_mte3_ratio,
        max(value) filter (where metric = 'aic_mte3_time_us') as aic_mte3_time_us,
        max(value) filter (where metric = 'aic_scalar_ratio') as aic_scalar_ratio,
        max(value) filter (where metric = 'aic_scalar_time_us') as aic_scalar_time_us,
        max(value) filter (where metric = 'aic_time_us') as aic_time_us,
        max(value) filter (where metric = 'aic_total_cycles') as aic_total_cycles,
        max(value) filter (where metric = 'aic_ub_read_bw_gbps') as aic_ub_read_bw_gbps,
        max(value) filter (where metric = 'aic_ub_write_bw_gbps') as aic_ub_write_bw_gbps,
        max(value) filter (where metric = 'aic_vec_ratio') as aic_vec_ratio,
        max(value) filter (where metric = 'aic_vec_time_us') as aic_vec_time_us,
        max(value) filter (where metric = 'aicore_time_us') as aicore_time_us,
        max(value) filter (where metric = 'aiv_cube_utilization_pct') as aiv_cube_utilization_pct,
        max(value) filter (where metric = 'aiv_icache_miss_rate') as aiv_icache_miss_rate,
        max(value) filter (where metric = 'aiv_l1_read_bw_gbps') as aiv_l1_read_bw_gbps,
        max(value) filter (where metric = 'aiv_l1_write_bw_gbps') as aiv_l1_write_bw_gbps,
        max(value) filter (where metric = 'aiv_l2_read_bw_gbps') as aiv_l2_read_bw_gbps,
        max(value) filter (where metric = 'aiv_l2_write_bw_gbps') as aiv_l2_write_bw_gbps,
        max(value) filter (where metric = 'aiv_mac_ratio') as aiv_mac_ratio,
        max(value) filter (where metric = 'aiv_mac_time_us') as aiv_mac_time_us,
        max(value) filter (where metric = 'aiv_main_mem_read_bw_gbps') as aiv_main_mem_read_bw_gbps,
        max(value) filter (where metric = 'aiv_main_mem_write_bw_gbps') as aiv_main_mem_write_bw_gbps,
        max(value) filter (where metric = 'aiv_memory_bound') as aiv_memory_bound,
        max(value) filter (where metric = 'aiv_mte1_ratio') as aiv_mte1_ratio,
        max(value) filter (where metric = 'aiv_mte1_time_us') as aiv_mte1_time_us,
        max(value) filter (where metric = 'aiv_mte2_ratio') as aiv_mte2_ratio,
        max(value) filter (where metric = 'aiv_mte2_time_us') as aiv_mte2_time_us,
        max(value) filter (where metric = 'aiv_mte3_ratio') as aiv_mte3_ratio,
        max(value) filter (where metric = 'aiv_mte3_time_us') as aiv_mte3_time_us,
        max(value) filter (where metric = 'aiv_scalar_ratio') as aiv_scalar_ratio,
        max(value) filter (where metric = 'aiv_scalar_time_us') as aiv_scalar_time_us,
        max(value) filter (where metric = 'aiv_time_us') as aiv_time_us,
        max(value) filter (where metric = 'aiv_total_cycles') as aiv_total_cycles,
        max(value) filter (where metric = 'aiv_ub_read_bw_gbps') as aiv_ub_read_bw_gbps,
        max(value) filter (where metric = 'aiv_ub_write_bw_gbps') as aiv_ub_write_bw_gbps,
        max(value) filter (where metric = 'aiv_vec_ratio') as aiv_vec_ratio,
        max(value) filter (where metric = 'aiv_vec_time_us') as aiv_vec_time_us,
        max(value) filter (where metric = 'cube_utilization_pct') as cube_utilization_pct,
        max(value) filter (where metric = 'icache_miss_rate') as icache_miss_rate,
        max(value) filter (where metric = 'l1_read_bw_gbps') as l1_read_bw_gbps,
        max(value) filter (where metric = 'l1_write_bw_gbps') as l1_write_bw_gbps,
        max(value) filter (where metric = 'l2_read_bw_gbps') as l2_read_bw_gbps,
        max(value) filter (where metric = 'l2_write_bw_gbps') as l2_write_bw_gbps,
        max(value) filter (where metric = 'mac_ratio') as mac_ratio,
        max(value) filter (where metric = 'mac_time_us') as mac_time_us,
        max(value) filter (where metric = 'main_mem_read_bw_gbps') as main_mem_read_bw_gbps,
        max(value) filter (where metric = 'main_mem_write_bw_gbps') as main_mem_write_bw_gbps,
        max(value) filter (where metric = 'memory_bound') as memory_bound,
        max(value) filter (where metric = 'mte1_ratio') as mte1_ratio,
        max(value) filter (where metric = 'mte1_time_us') as mte1_time_us,
        max(value) filter (where metric = 'mte2_ratio') as mte2_ratio,
        max(value) filter (where metric = 'mte2_time_us') as mte2_time_us,
        max(value) filter (where metric = 'mte3_ratio') as mte3_ratio,
        max(value) filter (where metric = 'mte3_time_us') as mte3_time_us,
        max(value) filter (where metric = 'scalar_ratio') as scalar_ratio,
        max(value) filter (where metric = 'scalar_time_us') as scalar_time_us,
        max(value) filter (where metric = 'time_us') as time_us,
        max(value) filter (where metric = 'total_cycles') as total_cycles,
        max(value) filter (where metric = 'ub_read_bw_gbps') as ub_read_bw_gbps,
        max(value) filter (where metric = 'ub_write_bw_gbps') as ub_write_bw_gbps,
        max(value) filter (where metric = 'vec_ratio') as vec_ratio,
        max(value) filter (where metric = 'vec_time_us') as vec_time_us
    from task_metrics
    group by all
),

joined as (
    select
        coalesce(runs.device_id, ops.device_id, pivoted.device_id) as device_id,
        coalesce(runs.stream_id, ops.stream_id, pivoted.stream_id) as stream_id,
        coalesce(runs.task_id, ops.task_id, pivoted.task_id) as task_id,
        nullif(coalesce(runs.ctx, ops.ctx, pivoted.ctx), -1) as context_id,
        coalesce(runs.model_id, ops.model_id) as model_id,
        runs.batch_id,
        coalesce(runs.start_ns, ops.start_ns, pivoted.start_ns) as start_ns,
        runs.end_ns,
        runs.end_ns - runs.start_ns as dur_ns,
        coalesce(ops.task_type, runs.task_type_name) as task_type,
        ops.accelerator_core,
        ops.op_name,
        ops.op_type,
        ops.op_state,
        ops.block_dim,
        ops.mix_block_dim,
        ops.input_shapes,
        ops.input_data_types,
        ops.input_formats,
        ops.output_shapes,
        ops.output_data_types,
        ops.output_formats,
        ops.wait_ns,
        runs.connection_id,
        runs.seq is not null as has_run,
        ops.seq is not null as has_op,
        pivoted.ctx is not null as has_metrics,
        case
            when upper(coalesce(ops.accelerator_core, ops.task_type, runs.task_type_name, ''))
                in ('AI_VECTOR_CORE', 'MIX_AIV', 'AIV') then 'aiv'
            else 'aic'
        end as side,
        pivoted.* exclude (device_id, stream_id, task_id, start_ns, ctx),
        runs.seq,
        runs.source
    from runs
    full join ops
        on runs.device_id = ops.device_id
        and runs.stream_id = ops.stream_id
        and runs.task_id = ops.task_id
        and runs.start_ns = ops.start_ns
        and runs.ctx = ops.ctx
    -- PMU values join the execution, or where there is none the description, of their key: a
    -- description and PMU values of no execution are one row
    full join pivoted
        on coalesce(runs.device_id, ops.device_id) = pivoted.device_id
        and coalesce(runs.stream_id, ops.stream_id) = pivoted.stream_id
        and coalesce(runs.task_id, ops.task_id) = pivoted.task_id
        and coalesce(runs.start_ns, ops.start_ns) = pivoted.start_ns
        and coalesce(runs.ctx, ops.ctx) = pivoted.ctx
)

select
    device_id, stream_id, task_id, context_id, model_id, batch_id, start_ns, end_ns, dur_ns, task_type,
    accelerator_core, op_name, op_type, op_state, block_dim, mix_block_dim, input_shapes, input_data_types,
    input_formats, output_shapes, output_data_types, output_formats, wait_ns, connection_id, has_run, has_op,
    has_metrics, side,
    coalesce(
        case when side = 'aiv' then p.aiv_time_us else coalesce(p.aic_time_us, p.aicore_time_us) end,
        p.time_us
    ) as aicore_time_us,
    side_value(side, p.total_cycles, p.aiv_total_cycles, p.aic_total_cycles) as total_cycles,
    side_value(side, p.vec_time_us, p.aiv_vec_time_us, p.aic_vec_time_us) as vec_time_us,
    side_value(side, p.vec_ratio, p.aiv_vec_ratio, p.aic_vec_ratio) as vec_ratio,
    side_value(side, p.mac_time_us, p.aiv_mac_time_us, p.aic_mac_time_us) as mac_time_us,
    side_value(side, p.mac_ratio, p.aiv_mac_ratio, p.aic_mac_ratio) as mac_ratio,
    side_value(side, p.scalar_time_us, p.aiv_scalar_time_us, p.aic_scalar_time_us) as scalar_time_us,
    side_value(side, p.scalar_ratio, p.aiv_scalar_ratio, p.aic_scalar_ratio) as scalar_ratio,
    side_value(side, p.mte1_time_us, p.aiv_mte1_time_us, p.aic_mte1_time_us) as mte1_time_us,
    side_value(side, p.mte1_ratio, p.aiv_mte1_ratio, p.aic_mte1_ratio) as mte1_ratio,
    side_value(side, p.mte2_time_us, p.aiv_mte2_time_us, p.aic_mte2_time_us) as mte2_time_us,
    side_value(side, p.mte2_ratio, p.aiv_mte2_ratio, p.aic_mte2_ratio) as mte2_ratio,
    side_value(side, p.mte3_time_us, p.aiv_mte3_time_us, p.aic_mte3_time_us) as mte3_time_us,
    side_value(side, p.mte3_ratio, p.aiv_mte3_ratio, p.aic_mte3_ratio) as mte3_ratio,
    side_value(side, p.icache_miss_rate, p.aiv_icache_miss_rate, p.aic_icache_miss_rate) as icache_miss_rate,
    side_value(side, p.memory_bound, p.aiv_memory_bound, p.aic_memory_bound) as memory_bound,
    side_value(side, p.ub_read_bw_gbps, p.aiv_ub_read_bw_gbps, p.aic_ub_read_bw_gbps) as ub_read_bw_gbps,
    side_value(side, p.ub_write_bw_gbps, p.aiv_ub_write_bw_gbps, p.aic_ub_write_bw_gbps) as ub_write_bw_gbps,
    side_value(side, p.l1_read_bw_gbps, p.aiv_l1_read_bw_gbps, p.aic_l1_read_bw_gbps) as l1_read_bw_gbps,
    side_value(side, p.l1_write_bw_gbps, p.aiv_l1_write_bw_gbps, p.aic_l1_write_bw_gbps) as l1_write_bw_gbps,
    side_value(side, p.l2_read_bw_gbps, p.aiv_l2_read_bw_gbps, p.aic_l2_read_bw_gbps) as l2_read_bw_gbps,
    side_value(side, p.l2_write_bw_gbps, p.aiv_l2_write_bw_gbps, p.aic_l2_write_bw_gbps) as l2_write_bw_gbps,
    side_value(side, p.main_mem_read_bw_gbps, p.aiv_main_mem_read_bw_gbps, p.aic_main_mem_read_bw_gbps)
        as main_mem_read_bw_gbps,
    side_value(side, p.main_mem_write_bw_gbps, p.aiv_main_mem_write_bw_gbps, p.aic_main_mem_write_bw_gbps)
        as main_mem_write_bw_gbps,
    side_value(side, p.cube_utilization_pct, p.aiv_cube_utilization_pct, p.aic_cube_utilization_pct)
        as cube_utilization_pct,
    seq,
    source
from joined as p
