"""Layout generation 1 (hiprof era, Ascend310 "chip 0"): host and device records.

Offsets and sizes are described in docs/formats.md: the legacy host structs
(#acl-record to #ge-model-load) and the device TLV streams (#tlv). All little-endian, no padding.
"""

from __future__ import annotations

from pipeline.layouts import Layout, struct

# --- host records (docs/formats.md#acl-record and the sections after it) -----------

ACL_API = Layout(  # AclModule.<acl_model|acl_op|acl_rts|acl_others>.<dev>.slice_N, formats.md#acl-record
    "acl_api",
    struct(
        [
            ("magic", "<u2", 0),
            ("data_tag", "<u2", 2),
            ("api_type", "<u4", 4),
            ("begin", "<u8", 8),
            ("end", "<u8", 16),
            ("pid", "<u4", 24),
            ("tid", "<u4", 28),
            ("api_name", "S64", 32),
        ],
        128,
    ),
    tag=0,
)

RUNTIME_API = Layout(  # Runtime.api.<dev>.slice_N, formats.md#runtime-api-record
    "runtime_api",
    struct(
        [
            ("magic", "<u2", 0),
            ("data_tag", "<u2", 2),
            ("tid", "<u4", 4),
            ("entry", "<u8", 8),
            ("exit", "<u8", 16),
            ("data_size", "<u8", 24),
            ("api_name", "S64", 32),
            ("ret_code", "<u4", 96),
            ("stream_id", "<u4", 100),
            ("task_num", "<u4", 104),
            # taskId[10] as u32: low half task id, high half batch id
            ("task_pairs", ("<u2", (10, 2)), 108),
            ("memcpy_direction", "<u2", 148),
        ],
        256,
    ),
    tag=40,
)

RUNTIME_TASK_TRACK = Layout(  # Runtime.task_track.<dev>.slice_N, formats.md#runtime-task-track
    "runtime_task_track",
    struct(
        [
            ("magic", "<u2", 0),
            ("data_tag", "<u2", 2),
            ("tid", "<u4", 4),
            ("timestamp", "<u8", 8),
            ("task_type", "S32", 16),
            ("task_id", "<u2", 48),
            ("batch_id", "<u2", 50),
            ("stream_id", "<u2", 52),
        ],
        64,
    ),
    tag=41,
)

GE_TASK_DESC = Layout(  # Framework.task_desc_info.<dev>.slice_N, formats.md#ge-task-desc
    "ge_task_desc",
    struct(
        [
            ("magic", "<u2", 0),
            ("data_tag", "<u2", 2),
            ("task_type", "<u4", 4),
            ("op_name_kind", "u1", 8),  # 0 hash id, 1 string
            ("op_name", "S120", 16),
            ("op_name_hash", "<u8", 16),
            ("op_type_kind", "u1", 136),
            ("op_type", "S56", 144),
            ("op_type_hash", "<u8", 144),
            ("cur_iter", "<u8", 200),
            ("timestamp", "<u8", 208),
            ("shape_type", "<u4", 216),
            ("block_dims", "<u4", 220),
            ("model_id", "<u4", 224),
            ("stream_id", "<u4", 228),
            ("task_id", "<u2", 232),
            ("batch_id", "<u2", 234),
            ("tid", "<u4", 236),
            ("context_id", "<u4", 240),
        ],
        256,
    ),
    tag=23,
)

GE_MODEL_TIME = (
    Layout(  # Framework.model_time_info_<a>_<b>.<dev>.slice_N, formats.md#ge-model-time (C struct)
        "ge_model_time",
        struct(
            [
                ("magic", "<u2", 0),
                ("data_tag", "<u2", 2),
                ("model_id", "<u4", 4),
                ("model_name_kind", "u1", 8),
                ("model_name", "S120", 16),
                ("model_name_hash", "<u8", 16),
                ("request_id", "<u4", 136),
                ("tid", "<u4", 140),
                ("input_start", "<u8", 144),
                ("input_end", "<u8", 152),
                ("infer_start", "<u8", 160),
                ("infer_end", "<u8", 168),
                ("output_start", "<u8", 176),
                ("output_end", "<u8", 184),
            ],
            256,
        ),
        tag=22,
    )
)

GE_MODEL_LOAD = Layout(  # Framework.model_load_info_<a>.<dev>.slice_N, formats.md#ge-model-load
    "ge_model_load",
    struct(
        [
            ("magic", "<u2", 0),
            ("data_tag", "<u2", 2),
            ("model_id", "<u4", 4),
            ("model_name_kind", "u1", 8),
            ("model_name", "S120", 16),
            ("model_name_hash", "<u8", 16),
            ("start", "<u8", 136),
            ("end", "<u8", 144),
        ],
        256,
    ),
    tag=20,
)

# --- device TLV streams (docs/formats.md#tlv) ------------------------------------------

_HDR = [("mode", "u1", 0), ("tag", "u1", 1), ("buf_size", "<u2", 2)]

TIME_LINE = Layout(
    "time_line",
    struct(
        _HDR
        + [
            ("task_type", "<u2", 8),
            ("task_state", "<u2", 10),
            ("stream_id", "<u2", 12),
            ("task_id", "<u2", 14),
            ("timestamp", "<u8", 16),
            ("thread", "<u4", 24),
            ("device_id", "<u4", 28),
        ],
        32,
    ),
    tag=3,
)

EVENT_COUNT = Layout(
    "event_count",
    struct(
        _HDR
        + [
            ("task_type", "<u2", 8),
            ("stream_id", "<u2", 10),
            ("task_id", "<u2", 12),
            ("overflow", "<u2", 14),
            ("overflow_cycle", "<u8", 16),
            ("events", ("<u8", (8,)), 24),
            ("task_cyc", "<u8", 88),
            ("timestamp", "<u8", 96),
            ("block", "<u2", 104),
        ],
        112,
    ),
    tag=4,
)

STEP_TRACE = Layout(
    "step_trace",
    struct(
        _HDR
        + [
            ("timestamp", "<u8", 8),
            ("index_id", "<u8", 16),
            ("model_id", "<u8", 24),
            ("stream_id", "<u2", 32),
            ("task_id", "<u2", 34),
            ("tag_id", "<u2", 36),
        ],
        40,
    ),
    tag=10,
)

TS_MEMCPY = Layout(
    "ts_memcpy",
    struct(
        _HDR
        + [
            ("timestamp", "<u8", 8),
            ("stream_id", "<u2", 16),
            ("task_id", "<u2", 18),
            ("task_state", "u1", 20),  # 0 receive, 1 start, 2 end
        ],
        40,
    ),
    tag=11,
)

# Tags that a TLV stream may carry and that a reader walks over. Decoded ones map to a
# layout; the others are documented producer tags whose records are counted, not read.
DECODED_TAGS = {layout.tag: layout for layout in (TIME_LINE, EVENT_COUNT, STEP_TRACE, TS_MEMCPY)}
COUNTED_TAGS = {6: "RUNTIME_TS", 7: "TS_CPU_USAGE", 8: "AI_CORE_STATUS", 9: "AIV_STATUS"}

# TIME_LINE task states (docs/formats.md#time-line)
WAITING, RUNNING, COMPLETE, PENDING = 1, 2, 3, 4
AI_CORE_START, AI_CORE_DONE, AI_CPU_PHASES_TWO_START = 7, 8, 9
KNOWN_TASK_STATES = {
    WAITING,
    RUNNING,
    COMPLETE,
    PENDING,
    AI_CORE_START,
    AI_CORE_DONE,
    AI_CPU_PHASES_TWO_START,
}

# TS_MEMCPY states mapped onto the TIME_LINE ones, so one state machine serves both.
MEMCPY_STATE_TO_TASK_STATE = {0: WAITING, 1: RUNNING, 2: COMPLETE}
MEMCPY_TASK_TYPE = 5  # "memory copy task"

NO_STREAM = 65535  # Runtime.api stream id of a call that belongs to no stream
