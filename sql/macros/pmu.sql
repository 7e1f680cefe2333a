-- pmu: macros shared by the AI Core SQL, so each PMU rule is written once.
--
-- pmu_counter(events, counters, event_id)
--   the counter of the slot that sample.json programmed with event_id; NULL when no slot
--   has it (raw-formats §6.1, §8: slot i counts the i-th event of ai_core_profiling_events).
-- pmu_events(events, counters)
--   the counters profetl's AI Core formulas use, by name, as a struct (unnest() makes them
--   columns): vec/mac/scalar/mte1/mte2/mte3 cycles (events 0x08, 0x0a, 0x09, 0x0b, 0x0c, 0x0d),
--   I-Cache requests and misses (0x54, 0x55) and the bandwidth requests: ub (0x15, 0x16), l1
--   (0x31, 0x32), l2 (0x0f, 0x10), main memory (0x12, 0x13) reads and writes.
-- pmu_ratios(r)
--   the pipe ratios of a row r (a table alias: its columns *_cycles and cycles):
--   <pipe>_ratio = <pipe>_cycles / cycles, NULL without cycles (analysis-and-exports §A3.3).
-- pmu_bandwidths(r)
--   the eight bandwidths in GB/s of a row r (its *_req columns and core_seconds).
-- pmu_bandwidth_gbps(requests, event_id, core_seconds)
--   GB/s moved by a bandwidth event: requests * bytes per request / core-seconds / 2^33
--   (analysis-and-exports §A3.3). Bytes per request, where msprof's paths disagree (§D1):
--   main memory 8*8 (per-task Python and C++; the Ascend310 SQL path has 256*8), l1_write
--   128*8 (C++ and SQL; Python has 256*8); the others agree.

create or replace macro pmu_counter(events, counters, event_id) as
    counters[list_position(events, event_id)];

create or replace macro pmu_events(events, counters) as
    struct_pack(
        vec_cycles := pmu_counter(events, counters, 8),
        mac_cycles := pmu_counter(events, counters, 10),
        scalar_cycles := pmu_counter(events, counters, 9),
        mte1_cycles := pmu_counter(events, counters, 11),
        mte2_cycles := pmu_counter(events, counters, 12),
        mte3_cycles := pmu_counter(events, counters, 13),
        icache_req := pmu_counter(events, counters, 84),
        icache_miss := pmu_counter(events, counters, 85),
        ub_read_req := pmu_counter(events, counters, 21),
        ub_write_req := pmu_counter(events, counters, 22),
        l1_read_req := pmu_counter(events, counters, 49),
        l1_write_req := pmu_counter(events, counters, 50),
        l2_read_req := pmu_counter(events, counters, 15),
        l2_write_req := pmu_counter(events, counters, 16),
        main_read_req := pmu_counter(events, counters, 18),
        main_write_req := pmu_counter(events, counters, 19)
    );

create or replace macro pmu_bandwidth_gbps(requests, event_id, core_seconds) as
    requests * (
        case event_id
            when 21 then 256.0 * 4    -- 0x15 ub_read
            when 22 then 256.0 * 4    -- 0x16 ub_write
            when 49 then 256.0 * 16   -- 0x31 l1_read
            when 50 then 128.0 * 8    -- 0x32 l1_write
            when 15 then 256.0 * 8    -- 0x0f l2_read
            when 16 then 256.0 * 8    -- 0x10 l2_write
            when 18 then 8.0 * 8      -- 0x12 main memory read
            when 19 then 8.0 * 8      -- 0x13 main memory write
        end
    ) / nullif(core_seconds, 0) / 8589934592.0;

create or replace macro pmu_ratios(r) as
    struct_pack(
        vec_ratio := r.vec_cycles / nullif(r.cycles, 0),
        mac_ratio := r.mac_cycles / nullif(r.cycles, 0),
        scalar_ratio := r.scalar_cycles / nullif(r.cycles, 0),
        mte1_ratio := r.mte1_cycles / nullif(r.cycles, 0),
        mte2_ratio := r.mte2_cycles / nullif(r.cycles, 0),
        mte3_ratio := r.mte3_cycles / nullif(r.cycles, 0)
    );

create or replace macro pmu_bandwidths(r) as
    struct_pack(
        ub_read_bw_gbps := pmu_bandwidth_gbps(r.ub_read_req, 21, r.core_seconds),
        ub_write_bw_gbps := pmu_bandwidth_gbps(r.ub_write_req, 22, r.core_seconds),
        l1_read_bw_gbps := pmu_bandwidth_gbps(r.l1_read_req, 49, r.core_seconds),
        l1_write_bw_gbps := pmu_bandwidth_gbps(r.l1_write_req, 50, r.core_seconds),
        l2_read_bw_gbps := pmu_bandwidth_gbps(r.l2_read_req, 15, r.core_seconds),
        l2_write_bw_gbps := pmu_bandwidth_gbps(r.l2_write_req, 16, r.core_seconds),
        main_mem_read_bw_gbps := pmu_bandwidth_gbps(r.main_read_req, 18, r.core_seconds),
        main_mem_write_bw_gbps := pmu_bandwidth_gbps(r.main_write_req, 19, r.core_seconds)
    );
