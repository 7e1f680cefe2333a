-- stg_pmu_samples: one row per sample-based AI Core PMU record: one interval of one core.
--
-- Grain:   (device_id, core_id, seq)
-- Sources: pmu_counters (record_kind aic_sample), devices
-- Follows: docs/formats.md#aic-sample: when sample.json says sample-based, aicore.data holds 96-byte
--          records of one core and one sampling interval (task_cyc, 8 counters, timestamp,
--          core id) instead of per-task records; msprof computes no per-task table from
--          them. Counter slot i holds the i-th event of ai_core_profiling_events, as for
--          task records. A record's interval starts at the previous record of the same core
--          (NULL for a core's first record).
-- Columns:
--   device_id      -       device
--   core_id        -       AI Core the interval was sampled on
--   seq            -       record index within the aicore stream
--   start_ns       ns      previous sample of the core; NULL for its first
--   end_ns         ns      sample time (end of the interval)
--   total_cycles   cycles  task_cyc of the record: cycles the core worked in the interval
--   aic_freq_mhz   MHz     AI Core frequency of the device (info.json)
--   vec_cycles     cycles  event 0x08; NULL when not programmed
--   mac_cycles     cycles  event 0x0a
--   scalar_cycles  cycles  event 0x09
--   mte1_cycles    cycles  event 0x0b
--   mte2_cycles    cycles  event 0x0c
--   mte3_cycles    cycles  event 0x0d
--   icache_req     count   event 0x54
--   icache_miss    count   event 0x55
--   ub_read_req    count   event 0x15
--   ub_write_req   count   event 0x16
--   l1_read_req    count   event 0x31
--   l1_write_req   count   event 0x32
--   l2_read_req    count   event 0x0f
--   l2_write_req   count   event 0x10
--   main_read_req  count   event 0x12
--   main_write_req count   event 0x13

with device_slots as (
    select device_id, aic_freq_mhz, pmu_slots(pmu_event_ids) as slots from devices
)

-- the counters as pmu_events' fields (ev.*): unnest() of that struct takes DuckDB's planner
-- time however few the rows (every build paid it, also without samples)
select * exclude (ev), ev.*
from (
    select
        samples.device_id,
        samples.core_id,
        samples.seq,
        lag(samples.ts_ns) over (
            partition by samples.device_id, samples.core_id order by samples.ts_ns, samples.seq
        ) as start_ns,
        samples.ts_ns as end_ns,
        samples.total_cycles,
        d.aic_freq_mhz,
        pmu_events(samples, d.slots) as ev
    from pmu_counters as samples
    left join device_slots as d on samples.device_id = d.device_id
    where samples.record_kind = 'aic_sample'
)
