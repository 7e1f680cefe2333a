-- stg_pmu_records: one row per AI Core task PMU record, counters named by their event.
--
-- Grain:   (device_id, record_kind, seq)
-- Sources: pmu_counters, devices, task_runs, freq_samples
-- Follows: counter slot i holds the i-th event of sample.json ai_core_profiling_events
--          (docs/formats.md#rule-pmu-slots); the event ids come from the run, never from a default
--          list, so hiprof and msprof metric-set names behave the same. Only AI Core task
--          records (task_type 0) are kept, as msprof's metric rows are (docs/formats.md#rule-pmu-record-time).
--          Generation 2 (HWTS chips): a 128-byte aicore.data record has no time; there is one
--          per AI Core task end, so the k-th record of a (stream, task) is the k-th AI Core
--          execution of that (stream, task) in task_runs, and its time is that end
--          (docs/formats.md#rule-pmu-record-time). Generation 3 (STARS): an ffts_profile context record carries
--          its end time; the AI Core frequency of its time formula is the lpmFreqConv sample
--          in force at that time (the last one at or before it, of samples at one time the last
--          by record index; info.json before the first),
--          as msprof's FFTS PMU path does (docs/formats.md#rule-aicore-time). Block dims of
--          generations 2 and 3 come from the task's op (stg_task_ops), not from here.
-- Columns:
--   device_id          -       device
--   seq                -       record index within the aicore stream
--   stream_id          -       stream id
--   task_id            -       task id
--   block_dim          blocks  blocks of the task (EVENT_COUNT block); NULL for generations 2 and 3
--   total_cycles       cycles  task cycles summed over blocks
--   ts_ns              ns      record time (task end); NULL for an aicore.data record without an execution
--   aic_freq_mhz       MHz     AI Core frequency of the device (info.json); bandwidths use it
--   ai_core_num        cores   AI Cores of the device
--   vec_cycles         cycles  event 0x08 vec_busy_cycles; NULL when not programmed
--   mac_cycles         cycles  event 0x0a cube_busy_cycles
--   scalar_cycles      cycles  event 0x09 scalar_busy_cycles
--   mte1_cycles        cycles  event 0x0b mte1_busy_cycles
--   mte2_cycles        cycles  event 0x0c mte2_busy_cycles
--   mte3_cycles        cycles  event 0x0d mte3_busy_cycles
--   icache_req         count   event 0x54 icache_req
--   icache_miss        count   event 0x55 icache_miss
--   ub_read_req        count   event 0x15
--   ub_write_req       count   event 0x16
--   l1_read_req        count   event 0x31
--   l1_write_req       count   event 0x32
--   l2_read_req        count   event 0x0f
--   l2_write_req       count   event 0x10
--   main_read_req      count   event 0x12
--   main_write_req     count   event 0x13
--   record_kind        -       event_count, aic_pmu or ffts_pmu
--   time_freq_mhz      MHz     AI Core frequency for aicore_time: the sampled one in force (STARS),
--                              else aic_freq_mhz
--   chip               -       chip of the device (devices.chip); Ascend310 selects that chip's
--                              bandwidth rule (sql/macros/pmu.sql)

with task_pmu as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    select *
    from pmu_counters
    where record_kind in ('event_count', 'aic_pmu', 'ffts_pmu') and task_type = 0
),

ai_core_ends as (
    select
        device_id,
        stream_id,
        task_id,
        end_ns,
        row_number() over (partition by device_id, stream_id, task_id order by end_ns, seq) as nth
    from task_runs
    where source = 'hwts' and task_type = 0
),

timed as not materialized (
    -- read by two branches: inlined rather than stored first (pipeline/jobs/transforms.py)
    -- (so generation 2's window below runs twice; one ASOF over all devices instead of the two
    -- branches would cost a run without frequency samples a full sort)
    -- only generation 2's aicore.data records take their time from the k-th execution
    select * from task_pmu where record_kind <> 'aic_pmu'
    union all
    select pmu.* exclude (nth) replace (ends.end_ns as ts_ns)
    from (
        select *, row_number() over (partition by device_id, stream_id, task_id order by seq) as nth
        from task_pmu
        where record_kind = 'aic_pmu'
    ) as pmu
    left join ai_core_ends as ends
        on pmu.device_id = ends.device_id
        and pmu.stream_id = ends.stream_id
        and pmu.task_id = ends.task_id
        and pmu.nth = ends.nth
),

samples as (
    -- of samples at one time, the last by record index
    select device_id, ts_ns, aic_freq_mhz
    from freq_samples
    qualify row_number() over (partition by device_id, ts_ns order by seq desc) = 1
),

sample_counts as (
    select device_id, count(*) as samples from samples group by device_id
),

many_samples as (
    select device_id from sample_counts where samples > 16
),

freq_intervals as (
    -- each sample of a device with few samples, in force from its time until the next one
    select
        device_id,
        ts_ns as from_ns,
        coalesce(lead(ts_ns) over (partition by device_id order by ts_ns), 9223372036854775807) as to_ns,
        aic_freq_mhz
    from samples
    anti join many_samples using (device_id)
),

with_freq as (
    -- the sample in force at the record's time. Devices with few samples (or none): a range
    -- join compares each record with its device's intervals, where an ASOF join would sort
    -- all the wide records; devices with many: the ASOF join
    select timed.*, fi.aic_freq_mhz as sampled_freq_mhz
    from (select * from timed anti join many_samples using (device_id)) as timed
    left join freq_intervals as fi
        on timed.device_id = fi.device_id
        and timed.ts_ns >= fi.from_ns
        and timed.ts_ns < fi.to_ns
    union all
    select timed.*, samples.aic_freq_mhz as sampled_freq_mhz
    from (select * from timed semi join many_samples using (device_id)) as timed
    asof left join samples
        on timed.device_id = samples.device_id
        and timed.ts_ns >= samples.ts_ns
),

device_slots as (
    select device_id, aic_freq_mhz, ai_core_num, chip, pmu_slots(pmu_event_ids) as slots from devices
)

select
    pmu.device_id,
    pmu.seq,
    pmu.stream_id,
    pmu.task_id,
    pmu.block_dim,
    pmu.total_cycles,
    pmu.ts_ns,
    d.aic_freq_mhz,
    d.ai_core_num,
    -- the counters by name (pmu_events' columns, written out: its struct and unnest() cost
    -- planning time on every build)
    pmu_slot_counter(pmu, d.slots.vec_cycles) as vec_cycles,
    pmu_slot_counter(pmu, d.slots.mac_cycles) as mac_cycles,
    pmu_slot_counter(pmu, d.slots.scalar_cycles) as scalar_cycles,
    pmu_slot_counter(pmu, d.slots.mte1_cycles) as mte1_cycles,
    pmu_slot_counter(pmu, d.slots.mte2_cycles) as mte2_cycles,
    pmu_slot_counter(pmu, d.slots.mte3_cycles) as mte3_cycles,
    pmu_slot_counter(pmu, d.slots.icache_req) as icache_req,
    pmu_slot_counter(pmu, d.slots.icache_miss) as icache_miss,
    pmu_slot_counter(pmu, d.slots.ub_read_req) as ub_read_req,
    pmu_slot_counter(pmu, d.slots.ub_write_req) as ub_write_req,
    pmu_slot_counter(pmu, d.slots.l1_read_req) as l1_read_req,
    pmu_slot_counter(pmu, d.slots.l1_write_req) as l1_write_req,
    pmu_slot_counter(pmu, d.slots.l2_read_req) as l2_read_req,
    pmu_slot_counter(pmu, d.slots.l2_write_req) as l2_write_req,
    pmu_slot_counter(pmu, d.slots.main_read_req) as main_read_req,
    pmu_slot_counter(pmu, d.slots.main_write_req) as main_write_req,
    pmu.record_kind,
    coalesce(pmu.sampled_freq_mhz, d.aic_freq_mhz) as time_freq_mhz,
    d.chip
from with_freq as pmu
left join device_slots as d on pmu.device_id = d.device_id
