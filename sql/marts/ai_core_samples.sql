-- ai_core_samples: one row per AI Core and sampling interval: pipeline ratios and bandwidth.
--
-- Grain:   (run_id, device_id, core_id, end_ns)
-- Sources: stg_pmu_samples
-- Follows: the sample-based mode (docs/formats.md#rule-pmu-samples) (sample.json ai_core_profiling_mode
--          sample-based): msprof has no per-task table for it, so this table is per core
--          and interval, with the ratio and bandwidth formulas of ai_core_metrics applied to
--          the interval's counters (docs/formats.md#rule-ratios): ratio = counter /
--          total_cycles, bandwidth = counter * bytes_per_request / (total_cycles / f_aic) /
--          2^33 with main memory at 8*8 bytes (sql/macros/pmu.sql): the later chips' rule of
--          ai_core_metrics, which is also msprof's sample-mode formula on every chip (no block
--          scaling); sample-based records are read from HWTS chips only. Undefined ratios are
--          NULL. Empty for task-based runs. Rows ordered by device, core and time.
-- Columns:
--   device_id              -       device ("Device")
--   core_id                -       AI Core ("Core ID")
--   start_ns               ns      interval start: the core's previous sample; NULL for its first ("Start Time")
--   end_ns                 ns      interval end, the sample time ("End Time")
--   total_cycles           cycles  cycles the core worked in the interval ("total_cycles")
--   busy_us                us      total_cycles at the AI Core frequency ("busy_time(us)")
--   vec_ratio              -       Vector cycles / total cycles ("vec_ratio")
--   mac_ratio              -       Cube cycles / total cycles ("mac_ratio")
--   scalar_ratio           -       Scalar cycles / total cycles ("scalar_ratio")
--   mte1_ratio             -       MTE1 cycles / total cycles ("mte1_ratio")
--   mte2_ratio             -       MTE2 cycles / total cycles ("mte2_ratio")
--   mte3_ratio             -       MTE3 cycles / total cycles ("mte3_ratio")
--   icache_miss_rate       -       I-Cache misses / requests ("icache_miss_rate")
--   memory_bound           -       mte2_ratio / max(mac_ratio, vec_ratio) ("memory_bound")
--   ub_read_bw_gbps        GB/s    Unified Buffer read bandwidth ("ub_read_bw(GB/s)")
--   ub_write_bw_gbps       GB/s    Unified Buffer write bandwidth ("ub_write_bw(GB/s)")
--   l1_read_bw_gbps        GB/s    L1 read bandwidth ("l1_read_bw(GB/s)")
--   l1_write_bw_gbps       GB/s    L1 write bandwidth ("l1_write_bw(GB/s)")
--   l2_read_bw_gbps        GB/s    L2 read bandwidth ("l2_read_bw(GB/s)")
--   l2_write_bw_gbps       GB/s    L2 write bandwidth ("l2_write_bw(GB/s)")
--   main_mem_read_bw_gbps  GB/s    main memory read bandwidth ("main_mem_read_bw(GB/s)")
--   main_mem_write_bw_gbps GB/s    main memory write bandwidth ("main_mem_write_bw(GB/s)")

with samples as (
    select
        *,
        total_cycles::double as cycles,
        total_cycles::double / nullif(aic_freq_mhz * 1e6, 0) as core_seconds
    from stg_pmu_samples
),

ratios as (
    select
        *,
        unnest(pmu_ratios(samples))
    from samples
)

select
    device_id,
    core_id,
    start_ns,
    end_ns,
    total_cycles,
    cycles / nullif(aic_freq_mhz, 0) as busy_us,
    vec_ratio,
    mac_ratio,
    scalar_ratio,
    mte1_ratio,
    mte2_ratio,
    mte3_ratio,
    icache_miss::double / nullif(icache_req, 0) as icache_miss_rate,
    mte2_ratio / nullif(greatest(mac_ratio, vec_ratio), 0) as memory_bound,
    -- sample-based records come from HWTS chips only: the later chips' rule
    unnest(pmu_bandwidths(ratios, core_seconds, false))
from ratios
order by device_id, core_id, end_ns, seq
