-- stg_export_metrics: one row per exported task execution with PMU values, its metrics side by side.
--
-- Grain:   (device_id, stream_id, task_id, start_ns, context_id)
-- Sources: task_metrics (exporter-computed values, long format), task_runs and task_ops (the
--          core an execution ran on)
-- Follows: the metric columns of msprof's op_summary and torch_npu's kernel_details
--          (analysis-and-exports §B1 "Metric column sets"): on STARS chips each metric comes
--          twice, aic_<m> for the cube (AI Core) side and aiv_<m> for the vector side, and the
--          side a task did not use holds zeros. Choice: a task whose core (task_ops
--          accelerator_core, else the execution's task type) is AI_VECTOR_CORE or MIX_AIV takes
--          the aiv_ values, every other task the aic_ ones; an unprefixed metric (older chips:
--          one core type) is taken as it is. aicore_time(us) is the cube side's time, aiv_time(us)
--          the vector side's. Values are the exporter's, not recomputed from counters (exports
--          carry no counters).
-- Columns:
--   device_id              -       device
--   stream_id              -       stream id
--   task_id                -       task id
--   context_id             -       FFTS+ context id; NULL when none
--   start_ns               ns      start of the execution the values belong to
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

with cores as (
    select
        runs.device_id, runs.stream_id, runs.task_id, runs.start_ns,
        coalesce(runs.context_id, -1) as ctx,
        coalesce(max(ops.accelerator_core), max(ops.task_type), max(runs.task_type_name)) as core
    from task_runs as runs
    left join task_ops as ops
        on ops.source = 'export'
        and runs.device_id = ops.device_id
        and runs.stream_id = ops.stream_id
        and runs.task_id = ops.task_id
        and runs.start_ns = ops.start_ns
    where runs.source in ('db_task', 'timeline', 'kernel_details', 'op_summary', 'task_time_csv')
    group by all
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

sided as (
    select
        pivoted.*,
        case when upper(coalesce(cores.core, '')) in ('AI_VECTOR_CORE', 'MIX_AIV', 'AIV') then 'aiv' else 'aic' end
            as side
    from pivoted
    left join cores using (device_id, stream_id, task_id, start_ns, ctx)
)

select
    m.device_id,
    m.stream_id,
    m.task_id,
    nullif(m.ctx, -1) as context_id,
    m.start_ns,
    side,
    coalesce(case when side = 'aiv' then m.aiv_time_us else coalesce(m.aic_time_us, m.aicore_time_us) end, m.time_us) as aicore_time_us,
    coalesce(m.total_cycles, case when side = 'aiv' then m.aiv_total_cycles else m.aic_total_cycles end) as total_cycles,
    coalesce(m.vec_time_us, case when side = 'aiv' then m.aiv_vec_time_us else m.aic_vec_time_us end) as vec_time_us,
    coalesce(m.vec_ratio, case when side = 'aiv' then m.aiv_vec_ratio else m.aic_vec_ratio end) as vec_ratio,
    coalesce(m.mac_time_us, case when side = 'aiv' then m.aiv_mac_time_us else m.aic_mac_time_us end) as mac_time_us,
    coalesce(m.mac_ratio, case when side = 'aiv' then m.aiv_mac_ratio else m.aic_mac_ratio end) as mac_ratio,
    coalesce(m.scalar_time_us, case when side = 'aiv' then m.aiv_scalar_time_us else m.aic_scalar_time_us end) as scalar_time_us,
    coalesce(m.scalar_ratio, case when side = 'aiv' then m.aiv_scalar_ratio else m.aic_scalar_ratio end) as scalar_ratio,
    coalesce(m.mte1_time_us, case when side = 'aiv' then m.aiv_mte1_time_us else m.aic_mte1_time_us end) as mte1_time_us,
    coalesce(m.mte1_ratio, case when side = 'aiv' then m.aiv_mte1_ratio else m.aic_mte1_ratio end) as mte1_ratio,
    coalesce(m.mte2_time_us, case when side = 'aiv' then m.aiv_mte2_time_us else m.aic_mte2_time_us end) as mte2_time_us,
    coalesce(m.mte2_ratio, case when side = 'aiv' then m.aiv_mte2_ratio else m.aic_mte2_ratio end) as mte2_ratio,
    coalesce(m.mte3_time_us, case when side = 'aiv' then m.aiv_mte3_time_us else m.aic_mte3_time_us end) as mte3_time_us,
    coalesce(m.mte3_ratio, case when side = 'aiv' then m.aiv_mte3_ratio else m.aic_mte3_ratio end) as mte3_ratio,
    coalesce(m.icache_miss_rate, case when side = 'aiv' then m.aiv_icache_miss_rate else m.aic_icache_miss_rate end) as icache_miss_rate,
    coalesce(m.memory_bound, case when side = 'aiv' then m.aiv_memory_bound else m.aic_memory_bound end) as memory_bound,
    coalesce(m.ub_read_bw_gbps, case when side = 'aiv' then m.aiv_ub_read_bw_gbps else m.aic_ub_read_bw_gbps end) as ub_read_bw_gbps,
    coalesce(m.ub_write_bw_gbps, case when side = 'aiv' then m.aiv_ub_write_bw_gbps else m.aic_ub_write_bw_gbps end) as ub_write_bw_gbps,
    coalesce(m.l1_read_bw_gbps, case when side = 'aiv' then m.aiv_l1_read_bw_gbps else m.aic_l1_read_bw_gbps end) as l1_read_bw_gbps,
    coalesce(m.l1_write_bw_gbps, case when side = 'aiv' then m.aiv_l1_write_bw_gbps else m.aic_l1_write_bw_gbps end) as l1_write_bw_gbps,
    coalesce(m.l2_read_bw_gbps, case when side = 'aiv' then m.aiv_l2_read_bw_gbps else m.aic_l2_read_bw_gbps end) as l2_read_bw_gbps,
    coalesce(m.l2_write_bw_gbps, case when side = 'aiv' then m.aiv_l2_write_bw_gbps else m.aic_l2_write_bw_gbps end) as l2_write_bw_gbps,
    coalesce(m.main_mem_read_bw_gbps, case when side = 'aiv' then m.aiv_main_mem_read_bw_gbps else m.aic_main_mem_read_bw_gbps end) as main_mem_read_bw_gbps,
    coalesce(m.main_mem_write_bw_gbps, case when side = 'aiv' then m.aiv_main_mem_write_bw_gbps else m.aic_main_mem_write_bw_gbps end) as main_mem_write_bw_gbps,
    coalesce(m.cube_utilization_pct, case when side = 'aiv' then m.aiv_cube_utilization_pct else m.aic_cube_utilization_pct end) as cube_utilization_pct
from sided as m
