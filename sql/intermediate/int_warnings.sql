-- int_warnings: one row per instance an advice rule flags: an op, task or inference that
-- deserves attention, with the value measured, the threshold it crossed, the finding it
-- belongs to (one per device, rule and scope kind) and its rank there.
--
-- Grain:   (device_id, rule_id, scope, scope_name)
-- Sources: int_pmu_records_ops, int_op_executions, int_task_executions, stg_model_phases,
--          stg_api_calls
-- Follows: the original tool's guide ("Suggestions for Effective Profiling Results": pipe
--          ratios, memory_bound >= 1 is a memory bottleneck, main-memory bandwidth) and
--          profetl's own rules, each with its threshold (docs/formats.md#rule-advice). Every
--          threshold is a parameter: `getvariable('advice_<name>')`, set by the build from the
--          [advice] section of the warehouse's advice.toml, else the default written here
--          (pipeline/analysis/advice.py reads the defaults from this file).
--          Op values are cycle-weighted over the op's PMU records: a ratio is
--          sum(pipe cycles) / sum(total cycles) (exported runs: their ratios weighted by
--          total_cycles), memory_bound = mte2_ratio / max(mac_ratio, vec_ratio) of those, and
--          main-memory bandwidth (read + write, sql/macros/pmu.sql) is weighted by the seconds
--          of its denominator. A PMU record's op is int_pmu_records_ops', an exported execution's
--          int_op_executions' (which decides whether a run is exported), a task instance's
--          int_task_executions' (docs/formats.md#rule-op-name);
--          without one the finding's scope is the task ("stream S task T"). share_pct is the op's share of its device's
--          PMU cycles (PMU rules) or task running time (task rules); an instance (one op or
--          task) under min_share_pct (default 1) is left out before the instances of a finding
--          are counted and summed. Rules:
--            memory_bound        op: memory_bound >= memory_bound_min (default 1.0; the guide's
--                                definition)
--            compute_underuse    op not memory-bound with cycles: max(mac_ratio, vec_ratio)
--                                < compute_ratio_max (default 0.5)
--            scalar_heavy        op: scalar_ratio >= scalar_ratio_min (default 0.5)
--            low_main_mem_bw     op memory-bound (or of unknown memory_bound: no standard
--                                metric set holds both mte2 and main-memory counters) whose
--                                main-memory bandwidth is below low_bw_pct (default 50) % of
--                                the best op bandwidth of its device in the run (chips differ
--                                too much for one absolute value)
--            aicpu_critical_path op of AI CPU tasks: a stream runs its tasks in order, so AI
--                                CPU time adds to the stream's critical path; flagged at
--                                aicpu_share_min_pct (default 5) % of the device's running time
--            queue_dominant      op or task with waiting or pending states (Ascend310): its
--                                waiting, or its pending before RUNNING (pending - running as
--                                msprof's pending spans both), summed over complete instances,
--                                >= queue_ratio_min (default 1.0) times its running time;
--                                waiting per instance as task_scheduler's (task_waiting_ns,
--                                sql/macros/task_states.sql; docs/formats.md#rule-task-scheduler)
--            launch_bound        inference (window: its GE / model phases, input start to
--                                output end, stg_model_phases) with at least launch_min_tasks
--                                (default 8) complete tasks starting in it, their median
--                                duration (complete - start) <= short_task_ns (default 20000),
--                                and the span of its kernel-launch calls (runtime API names
--                                containing KernelLaunch or LaunchKernel, as topdown_inference)
--                                >= launch_span_ratio_min (default 0.8) of the span of its tasks
--          A regression against earlier runs needs other runs: not here, the report computes it
--          (pipeline/analysis/advice.py). Severity of an instance: high when share_pct >=
--          high_share_pct (default 10), else medium; launch_bound instances are medium; of a
--          finding (device, rule, scope): the same test on its instances' summed share. The
--          worst instance of a finding (rank 1): the largest share_pct, then the largest value
--          (an inference's ratio), then scope_key and scope_name. A stored table, read by the advice and
--          advice_instances marts; it runs after the intermediate tables its Sources name.
-- Columns:
--   device_id          -     device
--   rule_id            -     memory_bound, compute_underuse, scalar_heavy, low_main_mem_bw, aicpu_critical_path,
--                            queue_dominant or launch_bound
--   scope              -     op, task or inference
--   scope_name         -     op name; "stream S task T" for a task without an op; "inference K" for an inference
--   scope_key          -     the inference number K of an inference (sorts as a number); NULL for an op or task
--   rank               -     1-based rank of the instance in its finding (device, rule, scope), 1 = the worst
--   severity           -     the instance's own: high or medium
--   value              -     the measured value the rule tests (its unit in unit)
--   threshold          -     the threshold it crossed, in force for this build (unit in unit)
--   unit               -     unit of value and threshold: ratio, GB/s or %
--   share_pct          %     the instance's share of its device's time (NULL for an inference)
--   evidence           -     which rows show it: table and filter, with row counts
--   suggestion         -     what to try, in one sentence (one per rule)
--   instances          -     instances of its finding
--   finding_share_pct  %     the instances' shares summed (NULL for inferences)
--   finding_severity   -     the finding's: high when finding_share_pct >= high_share_pct, else medium

with params as (
    select
        coalesce(getvariable('advice_memory_bound_min'), 1.0)::double as memory_bound_min,
        coalesce(getvariable('advice_compute_ratio_max'), 0.5)::double as compute_ratio_max,
        coalesce(getvariable('advice_scalar_ratio_min'), 0.5)::double as scalar_ratio_min,
        coalesce(getvariable('advice_low_bw_pct'), 50.0)::double as low_bw_pct,
        coalesce(getvariable('advice_aicpu_share_min_pct'), 5.0)::double as aicpu_share_min_pct,
        coalesce(getvariable('advice_queue_ratio_min'), 1.0)::double as queue_ratio_min,
        coalesce(getvariable('advice_launch_min_tasks'), 8)::bigint as launch_min_tasks,
        coalesce(getvariable('advice_short_task_ns'), 20000)::bigint as short_task_ns,
        coalesce(getvariable('advice_launch_span_ratio_min'), 0.8)::double as launch_span_ratio_min,
        coalesce(getvariable('advice_min_share_pct'), 1.0)::double as min_share_pct,
        coalesce(getvariable('advice_high_share_pct'), 10.0)::double as high_share_pct
),

-- PMU records of raw runs: cycles per pipe, and main-memory bandwidth with its seconds
pmu_raw as not materialized (
    select
        *,
        pmu_bandwidth_seconds(
            pmu_ascend310_rule(chip),
            total_cycles::double / nullif(aic_freq_mhz * 1e6, 0),
            total_cycles::double / nullif(time_freq_mhz, 0) / nullif(block_dim, 0)
            * ceil(block_dim / nullif(ai_core_num, 0)::double)
        ) as bw_seconds
    from int_pmu_records_ops  -- none for an exported run
),

pmu_named as (
    select
        p.device_id,
        p.stream_id,
        p.task_id,
        p.op_name,
        p.total_cycles::double as w,
        p.mac_cycles / nullif(p.total_cycles::double, 0) as mac_ratio,
        p.vec_cycles / nullif(p.total_cycles::double, 0) as vec_ratio,
        p.scalar_cycles / nullif(p.total_cycles::double, 0) as scalar_ratio,
        p.mte2_cycles / nullif(p.total_cycles::double, 0) as mte2_ratio,
        pmu_bandwidth_gbps(p.main_read_req, 18, p.bw_seconds, pmu_ascend310_rule(p.chip))
        + pmu_bandwidth_gbps(p.main_write_req, 19, p.bw_seconds, pmu_ascend310_rule(p.chip)) as main_bw_gbps,
        p.bw_seconds
    from pmu_raw as p
    union all
    -- exported runs: the exporter's values, weighted by their cycles (else their AI Core time)
    select
        device_id,
        stream_id,
        task_id,
        op_name,
        coalesce(total_cycles::double, aicore_time_us) as w,
        mac_ratio,
        vec_ratio,
        scalar_ratio,
        mte2_ratio,
        main_mem_read_bw_gbps + main_mem_write_bw_gbps as main_bw_gbps,
        aicore_time_us / 1e6 as bw_seconds
    from int_op_executions
    where has_metrics
),

op_pmu as (
    select
        device_id,
        case when op_name is null then 'task' else 'op' end as scope,
        coalesce(op_name, format('stream {} task {}', stream_id, task_id)) as scope_name,
        count(*) as records,
        -- floating-point sums exact and so the same whatever order the records come in (a run
        -- read in one piece or device by device), within any memory limit (sql/macros/advice.sql)
        advice_exact_sum(mac_ratio * w) / nullif(advice_exact_sum(w), 0) as mac_ratio,
        advice_exact_sum(vec_ratio * w) / nullif(advice_exact_sum(w), 0) as vec_ratio,
        advice_exact_sum(scalar_ratio * w) / nullif(advice_exact_sum(w), 0) as scalar_ratio,
        advice_exact_sum(mte2_ratio * w) / nullif(advice_exact_sum(w), 0) as mte2_ratio,
        advice_exact_sum(main_bw_gbps * bw_seconds)
        / nullif(advice_exact_sum(case when main_bw_gbps is not null then bw_seconds end), 0)
            as main_bw_gbps,
        sum(w) as w
    from pmu_named
    group by all
),

op_metrics as (
    select
        *,
        mte2_ratio / nullif(greatest(mac_ratio, vec_ratio), 0) as memory_bound,
        100.0 * w / nullif(sum(w) over (partition by device_id), 0) as share_pct,
        max(main_bw_gbps) over (partition by device_id) as best_bw_gbps,
        format(
            'ai_core_metrics: device_id = {} and {} ({} records)', device_id,
            advice_scope_filter(scope, scope_name),
            records
        ) as evidence
    from op_pmu
),

pmu_findings as (
    select
        device_id, 'memory_bound' as rule_id, scope, scope_name, memory_bound as value,
        memory_bound_min as threshold, 'ratio' as unit, share_pct, evidence,
        'Memory-bound: MTE2 moves data longer than the cube and vector units compute; fuse it with its neighbours, reuse data in the Unified Buffer or change its data format to cut main-memory traffic.' as suggestion  -- noqa: LT05
    from op_metrics, params
    where memory_bound >= memory_bound_min
    union all
    select
        device_id, 'compute_underuse', scope, scope_name, greatest(mac_ratio, vec_ratio),
        compute_ratio_max, 'ratio', share_pct, evidence,
        'Cube and vector units idle most of its cycles without waiting on memory; check the tiling and block dim (too few or too small blocks) and whether a cube-friendly shape or format is possible.'  -- noqa: LT05
    from op_metrics, params
    where memory_bound < memory_bound_min and greatest(mac_ratio, vec_ratio) < compute_ratio_max
    union all
    select
        device_id, 'scalar_heavy', scope, scope_name, scalar_ratio,
        scalar_ratio_min, 'ratio', share_pct, evidence,
        'Scalar instructions take much of its cycles; move address and loop arithmetic out of the inner loop or vectorise it, or pick an implementation without per-element control flow.'  -- noqa: LT05
    from op_metrics, params
    where scalar_ratio >= scalar_ratio_min
    union all
    select
        device_id, 'low_main_mem_bw', scope, scope_name, main_bw_gbps,
        best_bw_gbps * low_bw_pct / 100, 'GB/s', share_pct, evidence,
        'Memory-bound yet far below the main-memory bandwidth other ops reach; look for small or strided transfers and unaligned or non-contiguous layouts, and batch its copies.'  -- noqa: LT05
    from op_metrics, params
    where main_bw_gbps < best_bw_gbps * low_bw_pct / 100
        and (memory_bound >= memory_bound_min or memory_bound is null)
),

-- complete task instances with their times per msprof's Task Scheduler formulas
instances as not materialized (
    select
        device_id,
        stream_id,
        task_id,
        task_type_name,
        has_states,
        op_name,
        start_ns,
        complete_ns,
        coalesce(complete_ns - running_ns, 0) as run_ns,
        task_waiting_ns(waiting_ns, running_ns, complete_ns) as wait_ns,
        case
            when pending_ns is null then 0
            when running_ns is null or running_ns < pending_ns then complete_ns - pending_ns
            else running_ns - pending_ns
        end as pend_ns
    from int_task_executions
    where is_complete
),

op_tasks as (
    select
        device_id,
        case when op_name is null then 'task' else 'op' end as scope,
        coalesce(op_name, format('stream {} task {}', stream_id, task_id)) as scope_name,
        count(*) as instances,
        sum(run_ns) as run_ns,
        sum(wait_ns) as wait_ns,
        sum(pend_ns) as pend_ns,
        bool_or(has_states) as has_states,
        bool_or(task_type_name ilike '%ai%cpu%') as is_aicpu
    from instances
    group by all
),

task_metrics as (
    select
        *,
        100.0 * run_ns / nullif(sum(run_ns) over (partition by device_id), 0) as share_pct,
        greatest(wait_ns, pend_ns) / nullif(run_ns, 0)::double as queue_ratio,
        format(
            'task_scheduler: device_id = {} and {} ({} instances)', device_id,
            advice_scope_filter(scope, scope_name),
            instances
        ) as evidence
    from op_tasks
),

task_findings as (
    select
        device_id, 'aicpu_critical_path' as rule_id, scope, scope_name, share_pct as value,
        aicpu_share_min_pct as threshold, '%' as unit, share_pct, evidence,
        'Runs on the AI CPU in the stream''s order, holding up the tasks after it; use an AI Core implementation of the op (a supported dtype or shape), or move it out of the graph.' as suggestion  -- noqa: LT05
    from task_metrics, params
    where is_aicpu and share_pct >= aicpu_share_min_pct
    union all
    select
        device_id, 'queue_dominant', scope, scope_name, queue_ratio,
        queue_ratio_min, 'ratio', share_pct, evidence,
        'Waits or pends longer than it runs: it is held by dependencies or a busy scheduler rather than by its own work; check the stream''s synchronisation and spread independent work over more streams.'  -- noqa: LT05
    from task_metrics, params
    where has_states and queue_ratio >= queue_ratio_min
),

windows as (
    select device_id, infer_id, min(start_ns) as start_ns, max(end_ns) as end_ns
    from stg_model_phases
    group by device_id, infer_id
),

window_tasks as (
    select w.device_id, w.infer_id, i.start_ns, i.complete_ns
    from (select * from instances where start_ns is not null) as i
    asof join windows as w
        on i.device_id = w.device_id
        and i.start_ns >= w.start_ns
    where i.start_ns <= w.end_ns
),

window_launches as (
    select w.device_id, w.infer_id, c.start_ns, c.end_ns
    from (
        select * from stg_api_calls
        where level = 'runtime' and is_kernel_launch(api_name)
    ) as c
    asof join windows as w
        on c.device_id = w.device_id
        and c.start_ns >= w.start_ns
    where c.start_ns <= w.end_ns
),

-- each task's rank by duration in its inference: the median below is taken from the middle
-- ranks, as a sort (which spills beyond the memory limit), not by median(), which holds every
-- duration of a group in memory
window_task_ranks as (
    select
        device_id,
        infer_id,
        start_ns,
        complete_ns,
        complete_ns - start_ns as task_ns,
        row_number() over (partition by device_id, infer_id order by complete_ns - start_ns) as k,
        count(*) over (partition by device_id, infer_id) as n
    from window_tasks
),

inference_tasks as (
    select
        device_id,
        infer_id,
        count(*) as tasks,
        -- the median: the middle duration, or the mean of the two middle ones
        avg(task_ns) filter (where k in ((n + 1) // 2, (n + 2) // 2)) as median_task_ns,
        max(complete_ns) - min(start_ns) as device_span_ns
    from window_task_ranks
    group by device_id, infer_id
),

inference_launches as (
    select device_id, infer_id, count(*) as launches, max(end_ns) - min(start_ns) as launch_span_ns
    from window_launches
    group by device_id, infer_id
),

launch_findings as (
    select
        t.device_id,
        'launch_bound' as rule_id,
        'inference' as scope,
        format('inference {}', t.infer_id) as scope_name,
        t.infer_id::bigint as scope_key,
        l.launch_span_ns / nullif(t.device_span_ns, 0)::double as value,
        launch_span_ratio_min as threshold,
        'ratio' as unit,
        null::double as share_pct,
        format(
            'topdown_inference: device_id = {} and infer_id = {} ({} tasks, median {} ns; {} kernel launches over {} ns, tasks over {} ns)',  -- noqa: LT05
            t.device_id,
            t.infer_id,
            t.tasks,
            t.median_task_ns::bigint,
            l.launches,
            l.launch_span_ns,
            t.device_span_ns
        ) as evidence,
        'Many short kernels keep the device waiting on the host''s launches; fuse small ops, capture the graph (static shapes, graph mode) or raise the batch so each kernel does more work.' as suggestion  -- noqa: LT05
    from inference_tasks as t
    join inference_launches as l using (device_id, infer_id)
    cross join params
    where t.tasks >= launch_min_tasks
        and t.median_task_ns <= short_task_ns
        and l.launch_span_ns / nullif(t.device_span_ns, 0)::double >= launch_span_ratio_min
),

findings as (
    select * from pmu_findings
    union all
    select * from task_findings
),

ranked as (
    select
        findings.*, null::bigint as scope_key,
        case when share_pct >= high_share_pct then 'high' else 'medium' end as severity
    from findings, params
    where share_pct >= min_share_pct
    union all by name
    select *, 'medium' as severity from launch_findings
),

-- one finding per (device, rule, scope kind): its instances and their summed share (an exact
-- sum, the same however the rows come)
finding_totals as (
    select
        device_id,
        rule_id,
        scope,
        count(*) as instances,
        advice_exact_sum(share_pct) as finding_share_pct
    from ranked
    group by device_id, rule_id, scope
)

select
    r.device_id,
    r.rule_id,
    r.scope,
    r.scope_name,
    r.scope_key,
    row_number() over (
        partition by r.device_id, r.rule_id, r.scope
        order by r.share_pct desc nulls last, r.value desc nulls last, r.scope_key, r.scope_name
    ) as rank,
    r.severity,
    r.value,
    r.threshold,
    r.unit,
    r.share_pct,
    r.evidence,
    r.suggestion,
    t.instances,
    t.finding_share_pct,
    case when t.finding_share_pct >= p.high_share_pct then 'high' else 'medium' end as finding_severity
from ranked as r
join finding_totals as t
    on t.device_id is not distinct from r.device_id and t.rule_id = r.rule_id and t.scope = r.scope
cross join params as p
