-- pmu: macros shared by the AI Core SQL, so each PMU rule is written once.
--
-- pmu_counter(events, counters, event_id)
--   the counter of the slot that sample.json programmed with event_id; NULL when no slot
--   has it (raw-formats §6.1, §8: slot i counts the i-th event of ai_core_profiling_events).
-- pmu_bandwidth_gbps(requests, event_id, core_seconds)
--   GB/s moved by a bandwidth event: requests * bytes per request / core-seconds / 2^33
--   (analysis-and-exports §A3.3). Bytes per request, where msprof's paths disagree (§D1):
--   main memory 8*8 (per-task Python and C++; the Ascend310 SQL path has 256*8), l1_write
--   128*8 (C++ and SQL; Python has 256*8); the others agree.

create or replace macro pmu_counter(events, counters, event_id) as
    counters[list_position(events, event_id)];

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
