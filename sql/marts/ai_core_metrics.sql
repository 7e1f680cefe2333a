-- ai_core_metrics: one row per AI Core task PMU record: time, pipeline ratios, memory bandwidth.
--
-- Grain:   (run_id, device_id, seq) - one PMU record of one task instance (seq is its record index)
-- Sources: int_pmu_records_ops; exported runs: int_op_executions
-- Follows: the per-task formulas of msprof (docs/formats.md#rule-ratios,
--          #rule-bandwidth, #rule-aicore-time, #rule-memory-bound), with the event ids of the run's sample.json:
--            aicore_time = total_cycles / f_aic / block_dim * ceil(block_dim / ai_core_num)
--            <pipe>_ratio = counter / total_cycles;  <pipe>_time = ratio * aicore_time
--            icache_miss_rate = icache_miss / icache_req
--            memory_bound = mte2_ratio / max(mac_ratio, vec_ratio)
--            bandwidth = counter * bytes_per_request / seconds / 2^33  (GB/s), sql/macros/pmu.sql
--          Bandwidth, per chip (the chip of the device, devices.chip):
--          * Ascend310 (generation 1): msprof's rule for that chip (its SQL path):
--            seconds = aicore_time_us / 1e6, bytes per request ub 256*4, l1_read 256*16,
--            l1_write 128*8, l2 256*8, main memory 256*8.
--          * later chips (Ascend910A, Ascend310P, Ascend910B, ...): seconds = total_cycles /
--            f_aic (core-seconds, no block scaling), main memory 8*8 bytes per request, the
--            others as Ascend310; msprof's per-task Python and C++ paths.
--          Choices where msprof's paths disagree:
--          * l1_write on later chips: 128*8 (C++ path, and Ascend310's) rather than the per-task
--            Python path's 256*8.
--          * icache_miss_rate with no icache requests, memory_bound with mac and vec ratios
--            both 0, aicore_time with block_dim or ai_core_num 0: NULL (undefined) rather
--            than msprof's 0 / N/A mixture.
--          * the mte2/mte3 correction of main-memory bandwidth applies only when one metric
--            set holds both; no standard set does, and it is not applied.
--          A metric whose event was not programmed is NULL. Rows ordered by record time:
--          each branch sorts its rows once, before the metrics are computed from them (the
--          computing SELECTs, and UNION ALL, keep their input's order: DuckDB's documented
--          order preservation); at most one branch has rows (a run is raw or exported).
--          Generations 2 and 3: the block dim is the task's op's (int_pmu_records_ops:
--          node_basic_info through the association of stg_task_ops, or a MindSpore task
--          description), msprof's source for these chips
--          (docs/formats.md#rule-pmu-record-time); f_aic of aicore_time is the lpmFreqConv sample
--          in force at the task's end on STARS chips, info.json's aic_frequency elsewhere,
--          while the later chips' bandwidths always use info.json's (msprof's C++ path).
--          Exported runs (generation 4) carry no counters: their rows are the exporter's own
--          values (int_op_executions from stg_export_ops: the aic_ or aiv_ side by the core the
--          task ran on), one row per execution with PMU values, ts_ns its end, block_dim its
--          operator's; a run is exported or raw as int_op_executions decides.
--          The op of a record is the one in force at its time (int_pmu_records_ops); a record
--          without a time has none.
-- Columns:
--   device_id              -       device
--   task_id                -       task id ("Task ID")
--   stream_id              -       stream id ("Stream ID")
--   op_name                -       operator name; NULL when unknown ("Op Name")
--   ts_ns                  ns      PMU record time, the task's end ("Time")
--   block_dim              blocks  blocks the task ran: EVENT_COUNT block (Ascend310), else the op's ("Block Dim")
--   aicore_time_us         us      time to execute all instructions ("aicore_time(us)")
--   total_cycles           cycles  cycles of all blocks ("total_cycles")
--   vec_time_us            us      Vector instruction time ("vec_time(us)")
--   vec_ratio              -       Vector cycles / total cycles ("vec_ratio")
--   mac_time_us            us      Cube instruction time ("mac_time(us)")
--   mac_ratio              -       Cube cycles / total cycles ("mac_ratio")
--   scalar_time_us         us      Scalar instruction time ("scalar_time(us)")
--   scalar_ratio           -       Scalar cycles / total cycles ("scalar_ratio")
--   mte1_time_us           us      MTE1 (L1 to L0A/L0B) time ("mte1_time(us)")
--   mte1_ratio             -       MTE1 cycles / total cycles ("mte1_ratio")
--   mte2_time_us           us      MTE2 (DDR to AI Core) time ("mte2_time(us)")
--   mte2_ratio             -       MTE2 cycles / total cycles ("mte2_ratio")
--   mte3_time_us           us      MTE3 (AI Core to DDR) time ("mte3_time(us)")
--   mte3_ratio             -       MTE3 cycles / total cycles ("mte3_ratio")
--   icache_miss_rate       -       I-Cache misses / requests ("icache_miss_rate")
--   memory_bound           -       mte2_ratio / max(mac_ratio, vec_ratio); >= 1 means memory-bound ("memory_bound")
--   ub_read_bw_gbps        GB/s    Unified Buffer read bandwidth ("ub_read_bw(GB/s)")
--   ub_write_bw_gbps       GB/s    Unified Buffer write bandwidth ("ub_write_bw(GB/s)")
--   l1_read_bw_gbps        GB/s    L1 read bandwidth ("l1_read_bw(GB/s)")
--   l1_write_bw_gbps       GB/s    L1 write bandwidth ("l1_write_bw(GB/s)")
--   l2_read_bw_gbps        GB/s    L2 read bandwidth ("l2_read_bw(GB/s)")
--   l2_write_bw_gbps       GB/s    L2 write bandwidth ("l2_write_bw(GB/s)")
--   main_mem_read_bw_gbps  GB/s    main memory read bandwidth ("main_mem_read_bw(GB/s)")
--   main_mem_write_bw_gbps GB/s    main memory write bandwidth ("main_mem_write_bw(GB/s)")
--   seq                    -       record index: the PMU record's place in its device's records (raw
--                                  runs), the execution's row in its source (exported runs)

with named as (
    -- raw runs: the PMU records with their operator (int_pmu_records_ops; none for an exported
    -- run), in record time order; has_task_ops is build_issues', not sorted here
    select * exclude (has_task_ops)
    from int_pmu_records_ops
    order by device_id, ts_ns, seq
),

records as (
    select
        * replace (coalesce(block_dim, op_block_dim) as block_dim),
        total_cycles::double as cycles,
        -- core-seconds of the task: cycles / Hz
        total_cycles::double / nullif(aic_freq_mhz * 1e6, 0) as core_seconds,
        total_cycles::double / nullif(time_freq_mhz, 0)
        / nullif(coalesce(block_dim, op_block_dim), 0)
        * ceil(coalesce(block_dim, op_block_dim) / nullif(ai_core_num, 0)::double) as aicore_time_us
    from named
),

ratios as (
    select
        *,
        unnest(pmu_ratios(records))
    from records
),

from_counters as (
    select
        device_id,
        task_id,
        stream_id,
        op_name,
        ts_ns,
        block_dim,
        aicore_time_us,
        total_cycles,
        vec_ratio * aicore_time_us as vec_time_us,
        vec_ratio,
        mac_ratio * aicore_time_us as mac_time_us,
        mac_ratio,
        scalar_ratio * aicore_time_us as scalar_time_us,
        scalar_ratio,
        mte1_ratio * aicore_time_us as mte1_time_us,
        mte1_ratio,
        mte2_ratio * aicore_time_us as mte2_time_us,
        mte2_ratio,
        mte3_ratio * aicore_time_us as mte3_time_us,
        mte3_ratio,
        icache_miss::double / nullif(icache_req, 0) as icache_miss_rate,
        mte2_ratio / nullif(greatest(mac_ratio, vec_ratio), 0) as memory_bound,
        unnest(pmu_bandwidths(
            ratios,
            pmu_bandwidth_seconds(pmu_ascend310_rule(chip), core_seconds, aicore_time_us),
            pmu_ascend310_rule(chip)
        )),
        seq
    from ratios
),

from_exports as (
    select
        m.device_id,
        m.task_id,
        m.stream_id,
        m.op_name,
        m.end_ns as ts_ns,
        m.block_dim,
        m.aicore_time_us,
        m.total_cycles::ubigint as total_cycles,
        m.vec_time_us,
        m.vec_ratio,
        m.mac_time_us,
        m.mac_ratio,
        m.scalar_time_us,
        m.scalar_ratio,
        m.mte1_time_us,
        m.mte1_ratio,
        m.mte2_time_us,
        m.mte2_ratio,
        m.mte3_time_us,
        m.mte3_ratio,
        m.icache_miss_rate,
        m.memory_bound,
        m.ub_read_bw_gbps,
        m.ub_write_bw_gbps,
        m.l1_read_bw_gbps,
        m.l1_write_bw_gbps,
        m.l2_read_bw_gbps,
        m.l2_write_bw_gbps,
        m.main_mem_read_bw_gbps,
        m.main_mem_write_bw_gbps,
        m.seq
    from int_op_executions as m
    where m.has_metrics
    order by m.device_id, m.end_ns, m.seq
)

select * from from_counters
union all by name
select * from from_exports
