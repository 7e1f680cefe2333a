-- pmu: macros shared by the AI Core SQL, so each PMU rule is written once.
--
-- pmu_slots(events)
--   for a device's programmed events (sample.json's ai_core_profiling_events, in slot
--   order), the slot (1-8) of each counter profetl's AI Core formulas use, by name, as a
--   struct; NULL when no slot has the event (docs/formats.md#rule-pmu-slots: slot i counts
--   the i-th event): vec/mac/scalar/mte1/mte2/mte3 cycles (events 0x08, 0x0a, 0x09, 0x0b, 0x0c, 0x0d),
--   I-Cache requests and misses (0x54, 0x55) and the bandwidth requests: ub (0x15, 0x16), l1
--   (0x31, 0x32), l2 (0x0f, 0x10), main memory (0x12, 0x13) reads and writes. Found once per
--   device, not per record.
-- pmu_slot_counter(r, slot)
--   the counter in a slot of a record r (a table alias: its columns counter_0 .. counter_7);
--   NULL for a NULL slot.
-- pmu_events(r, slots)
--   the counters of pmu_slots, by name, as a struct of record r's values (unnest() makes
--   them columns).
-- pmu_ratios(r)
--   the pipe ratios of a row r (a table alias: its columns *_cycles and cycles):
--   <pipe>_ratio = <pipe>_cycles / cycles, NULL without cycles (docs/formats.md#rule-ratios).
-- pmu_bandwidths(r, seconds, ascend310)
--   the eight bandwidths in GB/s of a row r (its *_req columns), over `seconds` (see
--   pmu_bandwidth_seconds), with Ascend310's bytes per request when `ascend310` is true.
-- pmu_ascend310_rule(chip)
--   true when a task's bandwidths follow the Ascend310 (generation 1) rule: the chip of
--   the device is Ascend310 (platform_version 0). msprof computed that chip's bandwidths in
--   its own SQL path, with other constants and another denominator than the later chips.
-- pmu_bandwidth_seconds(ascend310, core_seconds, aicore_time_us)
--   the denominator of the bandwidths of one task, in seconds:
--   * Ascend310: aicore_time in seconds (total_cycles / f_aic / block_dim *
--     ceil(block_dim / ai_core_num)); NULL when aicore_time is NULL (block_dim 0).
--   * later chips (HWTS and STARS): core-seconds, total_cycles / f_aic, f_aic from
--     info.json (msprof's per-task Python and C++ paths; no block scaling).
-- pmu_bandwidth_gbps(requests, event_id, seconds, ascend310)
--   GB/s moved by a bandwidth event: requests * bytes per request / seconds / 2^33.
--   Bytes per request:
--     event                     Ascend310   later chips
--     ub read / write (0x15/16)   256*4       256*4
--     l1 read (0x31)              256*16      256*16
--     l1 write (0x32)             128*8       128*8 (msprof's C++ path; its Python path has 256*8)
--     l2 read / write (0x0f/10)   256*8       256*8
--     main memory r / w (0x12/13) 256*8       8*8
--   so an Ascend310 main-memory bandwidth is 32x what the later chips' constant would give
--   for the same counters, besides the block factor of the denominator.

create or replace macro pmu_slots(events) as
    struct_pack(
        vec_cycles := list_position(events, 8),
        mac_cycles := list_position(events, 10),
        scalar_cycles := list_position(events, 9),
        mte1_cycles := list_position(events, 11),
        mte2_cycles := list_position(events, 12),
        mte3_cycles := list_position(events, 13),
        icache_req := list_position(events, 84),
        icache_miss := list_position(events, 85),
        ub_read_req := list_position(events, 21),
        ub_write_req := list_position(events, 22),
        l1_read_req := list_position(events, 49),
        l1_write_req := list_position(events, 50),
        l2_read_req := list_position(events, 15),
        l2_write_req := list_position(events, 16),
        main_read_req := list_position(events, 18),
        main_write_req := list_position(events, 19)
    );

create or replace macro pmu_slot_counter(r, slot) as
    case slot
        when 1 then r.counter_0
        when 2 then r.counter_1
        when 3 then r.counter_2
        when 4 then r.counter_3
        when 5 then r.counter_4
        when 6 then r.counter_5
        when 7 then r.counter_6
        when 8 then r.counter_7
    end;

create or replace macro pmu_events(r, slots) as
    struct_pack(
        vec_cycles := pmu_slot_counter(r, slots.vec_cycles),
        mac_cycles := pmu_slot_counter(r, slots.mac_cycles),
        scalar_cycles := pmu_slot_counter(r, slots.scalar_cycles),
        mte1_cycles := pmu_slot_counter(r, slots.mte1_cycles),
        mte2_cycles := pmu_slot_counter(r, slots.mte2_cycles),
        mte3_cycles := pmu_slot_counter(r, slots.mte3_cycles),
        icache_req := pmu_slot_counter(r, slots.icache_req),
        icache_miss := pmu_slot_counter(r, slots.icache_miss),
        ub_read_req := pmu_slot_counter(r, slots.ub_read_req),
        ub_write_req := pmu_slot_counter(r, slots.ub_write_req),
        l1_read_req := pmu_slot_counter(r, slots.l1_read_req),
        l1_write_req := pmu_slot_counter(r, slots.l1_write_req),
        l2_read_req := pmu_slot_counter(r, slots.l2_read_req),
        l2_write_req := pmu_slot_counter(r, slots.l2_write_req),
        main_read_req := pmu_slot_counter(r, slots.main_read_req),
        main_write_req := pmu_slot_counter(r, slots.main_write_req)
    );

create or replace macro pmu_ascend310_rule(chip) as coalesce(chip = 'Ascend310', false);

create or replace macro pmu_bandwidth_seconds(ascend310, core_seconds, aicore_time_us) as
    case when ascend310 then aicore_time_us / 1e6 else core_seconds end;

create or replace macro pmu_bandwidth_gbps(requests, event_id, seconds, ascend310) as
    requests * (
        case event_id
            when 21 then 256.0 * 4    -- 0x15 ub_read
            when 22 then 256.0 * 4    -- 0x16 ub_write
            when 49 then 256.0 * 16   -- 0x31 l1_read
            when 50 then 128.0 * 8    -- 0x32 l1_write
            when 15 then 256.0 * 8    -- 0x0f l2_read
            when 16 then 256.0 * 8    -- 0x10 l2_write
            when 18 then (case when ascend310 then 256.0 * 8 else 8.0 * 8 end)  -- 0x12 main memory read
            when 19 then (case when ascend310 then 256.0 * 8 else 8.0 * 8 end)  -- 0x13 main memory write
        end
    ) / nullif(seconds, 0) / 8589934592.0;

create or replace macro pmu_ratios(r) as
    struct_pack(
        vec_ratio := r.vec_cycles / nullif(r.cycles, 0),
        mac_ratio := r.mac_cycles / nullif(r.cycles, 0),
        scalar_ratio := r.scalar_cycles / nullif(r.cycles, 0),
        mte1_ratio := r.mte1_cycles / nullif(r.cycles, 0),
        mte2_ratio := r.mte2_cycles / nullif(r.cycles, 0),
        mte3_ratio := r.mte3_cycles / nullif(r.cycles, 0)
    );

create or replace macro pmu_bandwidths(r, seconds, ascend310) as
    struct_pack(
        ub_read_bw_gbps := pmu_bandwidth_gbps(r.ub_read_req, 21, seconds, ascend310),
        ub_write_bw_gbps := pmu_bandwidth_gbps(r.ub_write_req, 22, seconds, ascend310),
        l1_read_bw_gbps := pmu_bandwidth_gbps(r.l1_read_req, 49, seconds, ascend310),
        l1_write_bw_gbps := pmu_bandwidth_gbps(r.l1_write_req, 50, seconds, ascend310),
        l2_read_bw_gbps := pmu_bandwidth_gbps(r.l2_read_req, 15, seconds, ascend310),
        l2_write_bw_gbps := pmu_bandwidth_gbps(r.l2_write_req, 16, seconds, ascend310),
        main_mem_read_bw_gbps := pmu_bandwidth_gbps(r.main_read_req, 18, seconds, ascend310),
        main_mem_write_bw_gbps := pmu_bandwidth_gbps(r.main_write_req, 19, seconds, ascend310)
    );
