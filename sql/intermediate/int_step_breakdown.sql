-- int_step_breakdown: one row per closed iteration (training step) of a device, with where its
-- time went on the device: computing, communicating (overlapped or not), free, the stage, the
-- pipeline bubble and the preparation before its first task, recomputed from the executions.
--
-- Grain:   (device_id, model_id, iteration_id); model_id NULL is a value
-- Sources: stg_iterations, int_step_windows, int_op_executions, stg_comm_ops
-- Follows: torch_npu's step_trace_time (and msprof-analyze's cluster step trace, which
--          gathers those files), restated in docs/formats.md#rule-step-breakdown. Per device:
--            compute intervals   the executions an operator description names (a kernel, an AI
--                                CPU op, a DSA op...), less those whose task type is a
--                                synchronisation, copy, reduce, placeholder or profiling task
--                                (NOTIFY_*, EVENT_*, MEMCPY_*, REDUCE_*, SDMA*, PCIE_DMA*,
--                                PLACE_HOLDER*, Write Value, PROFILING_*: an msprof timeline
--                                read alone names every task after its event, so the type
--                                decides there) and the communication ones (HCCL, hcom_*)
--            communication       the communication ops (stg_comm_ops: hcom_* ops of HCCL)
--            pieces              the merged compute intervals (Computing), the merged
--                                communication intervals (Communication), the parts of those
--                                no compute interval covers (Communication(Not Overlapped)),
--                                and the gaps between consecutive merged intervals of the two
--                                together (Free); intervals that touch or overlap merge
--          Each piece belongs to the iteration whose [start, end) holds the piece's start (a
--          piece that runs past the end stays whole in it); where iterations of several models
--          of a device overlap, to the one that started last (the stretches of int_step_windows,
--          the rule written once). Of an iteration's pieces:
--          computing, communication, not overlapped and free are the sums of their lengths;
--          overlapped = communication - not overlapped; bubble = the summed durations of the
--          receive ops (hcom_receive*) starting in the iteration; stage = the span from the
--          first piece's start to the last piece's (or receive op's) end, minus bubble; not
--          overlapped excluding receive = not overlapped - bubble; preparing = the start of the
--          first compute or communication piece - the iteration's start.
--          Choices: a device with no communication op at all (every raw generation, whose
--          readers collect none; an export without HCCL ops) has NULL communication columns
--          (communication, not overlapped, overlapped, bubble, not overlapped excluding
--          receive), not 0, and its free and stage count any communication as free time;
--          stage is then the span with no bubble taken out. An iteration with no piece has 0
--          computing, free and stage and a NULL preparing.
-- Columns:
--   device_id                                        -   device
--   model_id                                         -   model id of the iteration; NULL where the source names none
--   iteration_id                                     -   1-based number of the iteration within (device, model)
--   step_id                                          -   the step number its closing record carries (stg_iterations)
--   computing_ns                                     ns  merged compute time of the iteration's pieces
--   communication_ns                                 ns  merged communication time; NULL without communication ops
--   communication_not_overlapped_ns                  ns  communication no compute covers; NULL as communication_ns
--   overlapped_ns                                    ns  communication_ns - communication_not_overlapped_ns
--   free_ns                                          ns  gaps between the device's busy intervals, by their start
--   stage_ns                                         ns  span of the iteration's pieces - bubble_ns
--   bubble_ns                                        ns  receive ops' time; NULL without communication ops
--   communication_not_overlapped_exclude_receive_ns  ns  communication_not_overlapped_ns - bubble_ns
--   preparing_ns                                     ns  first compute or communication piece - iteration start;
--                                                        NULL without one
--   piece_count                                      -   pieces and receive ops summed into the row (the bound
--                                                        of build_issues' export_step_breakdown_differs)

with step_devices as (
    -- only a device with iterations has steps to break down: the others' executions are not read
    select distinct device_id from stg_iterations
),

compute_runs as (
    select device_id, start_ns, end_ns
    from int_op_executions
    where
        device_id in (select device_id from step_devices)
        and op_name is not null
        and start_ns is not null
        and end_ns >= start_ns
        and coalesce(accelerator_core, '') <> 'HCCL'
        and not regexp_matches(
            upper(replace(coalesce(task_type, ''), ' ', '_')),
            '^(HCCL|COMMUNICATION|NOTIFY|EVENT|MEMCPY|REDUCE|SDMA|PCIE_DMA|'
            || 'PLACE_HOLDER|WRITE_VALUE|PROFILING)'
        )
        and not starts_with(lower(op_name), 'hcom')
),

comm_runs as (
    select device_id, start_ns, end_ns, is_receive
    from stg_comm_ops
    where
        device_id in (select device_id from step_devices)
        and start_ns is not null
        and end_ns >= start_ns
),

comm_devices as (
    select distinct device_id from comm_runs
),

intervals as (
    select device_id, 'compute' as kind, start_ns, end_ns from compute_runs
    union all
    select device_id, 'comm' as kind, start_ns, end_ns from comm_runs
),

kind_merged as materialized (
    -- the merged intervals of each kind (sql/macros/intervals.sql)
    select * from merged_intervals('intervals')
),

busy_intervals as (
    -- the device's busy time: the merged intervals of both kinds, merged together
    select device_id, 'busy' as kind, start_ns, end_ns from kind_merged
),

merged as (
    select * from kind_merged
    union all
    select * from merged_intervals('busy_intervals')
),

points as (
    -- the boundaries of the merged compute and communication intervals of a device with both
    select distinct m.device_id, p.ts_ns
    from merged as m, unnest([m.start_ns, m.end_ns]) as p (ts_ns)
    where m.kind in ('compute', 'comm') and m.device_id in (select device_id from comm_devices)
),

segments as (
    select
        device_id,
        ts_ns as start_ns,
        lead(ts_ns) over (partition by device_id order by ts_ns) as end_ns
    from points
),

segment_kinds as (
    -- which merged intervals cover an elementary segment (the last one starting at or before it)
    select
        s.device_id,
        s.start_ns,
        s.end_ns,
        coalesce(c.end_ns > s.start_ns, false) as in_compute,
        coalesce(m.end_ns > s.start_ns, false) as in_comm
    from segments as s
    asof left join (select * from merged where kind = 'compute') as c
        on s.device_id = c.device_id and s.start_ns >= c.start_ns
    asof left join (select * from merged where kind = 'comm') as m
        on s.device_id = m.device_id and s.start_ns >= m.start_ns
    where s.end_ns is not null
),

comm_only as (
    -- maximal runs of adjacent segments of communication no compute covers
    select device_id, min(start_ns) as start_ns, max(end_ns) as end_ns
    from (
        select
            *,
            sum(opens::integer)
                over (partition by device_id order by start_ns rows unbounded preceding)
                as run
        from (
            select
                *,
                coalesce(start_ns <> lag(end_ns) over (partition by device_id order by start_ns), true)
                    as opens
            from segment_kinds
            where in_comm and not in_compute
        )
    )
    group by device_id, run
),

pieces as (
    select device_id, kind, start_ns, end_ns from merged where kind in ('compute', 'comm')
    union all
    select device_id, 'comm_only' as kind, start_ns, end_ns from comm_only
    union all
    select
        device_id,
        'free' as kind,
        end_ns as start_ns,
        lead(start_ns) over (partition by device_id order by start_ns) as end_ns
    from merged
    where kind = 'busy'
    -- the expression, not the alias: in qualify, end_ns names merged's own column
    qualify lead(start_ns) over (partition by device_id order by start_ns) is not null
    union all
    select device_id, 'receive' as kind, start_ns, end_ns from comm_runs where is_receive
),

windows as (
    select device_id, model_id, iteration_id, step_id, start_ns, end_ns
    from stg_iterations
),

placed as (
    select
        w.device_id,
        w.model_id,
        w.iteration_id,
        p.kind,
        p.start_ns,
        p.end_ns
    from pieces as p
    asof join int_step_windows as w
        on p.device_id = w.device_id and p.start_ns >= w.start_ns
    where p.start_ns < w.until_ns
),

sums as (
    select
        device_id,
        model_id,
        iteration_id,
        sum(end_ns - start_ns) filter (where kind = 'compute') as computing_ns,
        sum(end_ns - start_ns) filter (where kind = 'comm') as communication_ns,
        sum(end_ns - start_ns) filter (where kind = 'comm_only') as communication_not_overlapped_ns,
        sum(end_ns - start_ns) filter (where kind = 'free') as free_ns,
        sum(end_ns - start_ns) filter (where kind = 'receive') as bubble_ns,
        max(end_ns) - min(start_ns) as span_ns,
        min(start_ns) filter (where kind in ('compute', 'comm')) as first_task_ns,
        count(*) as piece_count
    from placed
    group by device_id, model_id, iteration_id
),

rows as (
    select
        w.device_id,
        w.model_id,
        w.iteration_id,
        w.step_id,
        w.start_ns,
        cd.device_id is not null as has_comm,
        coalesce(s.computing_ns, 0)::bigint as computing_ns,
        coalesce(s.communication_ns, 0)::bigint as communication_ns,
        coalesce(s.communication_not_overlapped_ns, 0)::bigint as communication_not_overlapped_ns,
        coalesce(s.free_ns, 0)::bigint as free_ns,
        coalesce(s.bubble_ns, 0)::bigint as bubble_ns,
        coalesce(s.span_ns, 0)::bigint as span_ns,
        s.first_task_ns,
        coalesce(s.piece_count, 0)::bigint as piece_count
    from windows as w
    left join sums as s
        on w.device_id = s.device_id
        and w.model_id is not distinct from s.model_id
        and w.iteration_id = s.iteration_id
    left join comm_devices as cd on w.device_id = cd.device_id
)

select
    device_id,
    model_id,
    iteration_id,
    step_id,
    computing_ns,
    case when has_comm then communication_ns end as communication_ns,
    case when has_comm then communication_not_overlapped_ns end as communication_not_overlapped_ns,
    case when has_comm then communication_ns - communication_not_overlapped_ns end as overlapped_ns,
    free_ns,
    span_ns - case when has_comm then bubble_ns else 0 end as stage_ns,
    case when has_comm then bubble_ns end as bubble_ns,
    case
        when has_comm then communication_not_overlapped_ns - bubble_ns
    end as communication_not_overlapped_exclude_receive_ns,
    first_task_ns - start_ns as preparing_ns,
    piece_count
from rows
