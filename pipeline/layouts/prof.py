"""Layout generations 2 and 3 (msprof ``PROF_*``): host CANN 7+ records and device HW logs.

Offsets and sizes are described in docs/formats.md: host ``api_event``, ``compact`` and
``additional`` records (#api-event, #compact-header), fixed 40-byte ``ts_track`` (#ts-track),
HWTS (#hwts-log), 128-byte AI Core PMU (#aic-pmu), STARS SoC and FFTS+ PMU (#stars-acsq,
#ffts-pmu), ``lpmFreqConv`` (#lpm-freq) and sample-based AI Core (#aic-sample). The
MindSpore 0.5 ``training_trace`` record (20 bytes, #training-trace) is the one read by
mindinsight's step-trace parser. All little-endian, no padding.
"""

from __future__ import annotations

import numpy as np

from pipeline.layouts import Layout, struct
from pipeline.layouts import hiprof as hiprof_layouts

DEVICE_MAGIC = (
    0x6BD3  # u16 at bytes 2-3 of HWTS, AI Core PMU, STARS SoC and FFTS records (docs/formats.md#conventions)
)
EVENT_FLAG = 0xFFFFFFFFFFFFFFFF  # api_event u64 @24 of an EVENT record (docs/formats.md#api-event)

# --- host: api_event, compact, additional (docs/formats.md#api-event) ---------------

API_EVENT = Layout(  # (aging|unaging).api_event.data.slice_N, formats.md#api-event: an API or an EVENT record
    "api_event",
    struct(
        [
            ("magic", "<u2", 0),
            ("level", "<u2", 2),
            ("type", "<u4", 4),
            ("tid", "<u4", 8),
            ("request_id", "<u4", 12),  # EVENT requestId; API reserve
            ("begin", "<u8", 16),  # API beginTime; EVENT timeStamp
            ("end", "<u8", 24),  # API endTime; EVENT reserve = EVENT_FLAG
            ("item_id", "<u8", 32),
        ],
        40,
    ),
)

_COMPACT_HEADER = [
    ("magic", "<u2", 0),
    ("level", "<u2", 2),
    ("type", "<u4", 4),
    ("tid", "<u4", 8),
    ("data_len", "<u4", 12),
    ("timestamp", "<u8", 16),
]

TASK_TRACK = Layout(  # (aging|unaging).compact.task_track.slice_N, formats.md#task-track (runtime level)
    "task_track",
    struct(
        _COMPACT_HEADER
        + [
            ("device_id", "<u2", 24),  # bits 0-11 device id, 12-15 device type
            ("stream_id", "<u2", 26),
            ("task_id", "<u2", 28),
            ("batch_id", "<u2", 30),  # flip_num for FLIP_TASK records
            ("task_type", "<u8", 32),  # type_info_dic["5000_<taskType>"]
            ("kernel_name", "<u8", 40),  # hash id
            ("num_blocks", "<u2", 48),  # extInfo MsporfKernelInfo.numBlocks (C++ only)
        ],
        64,
    ),
)

NODE_BASIC_INFO = (
    Layout(  # (aging|unaging).compact.node_basic_info.slice_N, formats.md#node-basic-info (node level)
        "node_basic_info",
        struct(
            _COMPACT_HEADER
            + [
                ("op_name", "<u8", 24),  # hash id
                ("task_type", "<u4", 32),  # GE task type
                ("op_type", "<u8", 36),  # hash id
                ("block_num", "<u4", 44),  # low 16 block dim, high 16 mix factor
                ("op_flag", "<u4", 48),
                ("op_state", "u1", 52),
            ],
            64,
        ),
    )
)

GRAPH_ID_MAP = Layout(  # (aging|unaging).additional.graph_id_map.slice_N, formats.md#graph-id-map
    "graph_id_map",
    struct(
        _COMPACT_HEADER + [("model_name", "<u8", 24), ("graph_id", "<u4", 32), ("model_id", "<u4", 36)], 256
    ),
)

LEVELS = {  # formats.md#levels: LevelDataType -> api_calls.level
    30000: "pytorch_tx",
    25000: "pta",
    20500: "msproftx",
    20000: "acl",
    15000: "model",
    10000: "node",
    6000: "aicpu",
    5500: "hccl",
    5000: "runtime",
}
ACL_LEVEL, MODEL_LEVEL, NODE_LEVEL, RUNTIME_LEVEL = 20000, 15000, 10000, 5000
FLIP_TASK_TYPE, MAINTENANCE_TASK_TYPE = 98, 6  # compact task_track types that are no device task

GE_TASK_TYPES = [
    "AI_CORE",
    "AI_CPU",
    "AI_VECTOR_CORE",
    "WRITE_BACK",
    "MIX_AIC",
    "MIX_AIV",
    "FFTS_PLUS",
    "DSA_SQE",
    "DVPP",
    "HCCL",
    "FUSION",
    "INVALID",
]  # formats.md#task-types

# --- device: fixed 40-byte ts_track (docs/formats.md#ts-track) -------------------------

TS_TRACK_SIZE = 40
TS_HEADER = struct([("mode", "u1", 0), ("tag", "u1", 1), ("buf_size", "<u2", 2)], TS_TRACK_SIZE)
_TS = [("mode", "u1", 0), ("tag", "u1", 1), ("buf_size", "<u2", 2), ("timestamp", "<u8", 8)]

# Tags 10 (step trace) and 11 (TS memcpy) have the same 40-byte layout as generation 1's
# TLV records of those tags (docs/formats.md#step-trace-record, #ts-memcpy).
TS_STEP_TRACE = hiprof_layouts.STEP_TRACE
TS_MEMCPY = hiprof_layouts.TS_MEMCPY
TS_TASK_TYPE = Layout(
    "ts_task_type",
    struct(
        _TS
        + [
            ("stream_id", "<u2", 16),
            ("task_id", "<u2", 18),
            ("task_type", "<u2", 20),
            ("task_state", "u1", 22),
        ],
        TS_TRACK_SIZE,
    ),
    tag=12,
)
TS_FLIP = Layout(
    "ts_flip",
    struct(_TS + [("stream_id", "<u2", 16), ("flip_num", "<u2", 18), ("task_id", "<u2", 22)], TS_TRACK_SIZE),
    tag=14,
)
TS_BLOCK_NUM = Layout(
    "ts_block_num",
    struct(_TS + [("stream_id", "<u2", 16), ("task_id", "<u2", 18), ("block_num", "<u4", 20)], TS_TRACK_SIZE),
    tag=15,
)
TS_LAYOUTS = {
    layout.tag: layout for layout in (TS_STEP_TRACE, TS_MEMCPY, TS_TASK_TYPE, TS_FLIP, TS_BLOCK_NUM)
}
TS_IGNORED_TAGS = {13: "TASK_FLIP (old)"}  # documented tags msprof skips

# --- device: HWTS chips (docs/formats.md#hwts-log, #aic-pmu, #aic-sample) --------------

HWTS_LOG = Layout(  # hwts.data.<dev>.slice_N; legacy hwts.log.data.45.dev.profiler_default_tag.<dev>.slice_N
    "hwts_log",
    struct(
        [
            ("head", "u1", 0),  # bits 0-2 log type (0 start, 1 end), bits 4-7 cnt
            ("task_type", "u1", 1),  # 0 AI Core, 1 AI CPU (msprof); producer: reserved
            ("magic", "<u2", 2),
            ("block_id", "<u2", 4),
            ("task_id", "<u2", 6),
            ("syscnt", "<u8", 8),
            ("stream_id", "<u4", 16),
        ],
        64,
    ),
)
HWTS_START, HWTS_END = 0, 1

AIC_PMU = Layout(  # aicore.data.<dev>.slice_N, task-based, chips 1-4: one record per AI Core task end
    "aic_pmu",
    struct(
        [
            ("head", "u1", 0),  # bits 4-7 cnt
            ("magic", "<u2", 2),
            ("task_id", "<u2", 6),
            ("total_cycle", "<u8", 16),
            ("counters", ("<u8", (8,)), 32),
            ("stream_id", "<u4", 96),
        ],
        128,
    ),
)

AICPU_TASK = Layout(  # DATA_PREPROCESS.[dev.]AICPU.<dev>.slice_N when binary, formats.md#aicpu-binary
    "aicpu_task",
    struct(
        [
            ("magic", "<u2", 0),  # 0x5A5A
            ("tag", "<u2", 2),  # 60
            ("stream_id", "<u2", 4),
            ("task_id", "<u2", 6),
            ("run_start_us", "<u8", 8),
            ("run_start_syscnt", "<u8", 16),
            ("compute_start_us", "<u8", 24),
            ("memcpy_start_us", "<u8", 32),
            ("memcpy_end_us", "<u8", 40),
            ("run_end_us", "<u8", 48),
            ("run_end_syscnt", "<u8", 56),
            ("thread_id", "<u4", 64),
            ("device_id", "<u4", 68),
            ("submit_syscnt", "<u8", 72),
            ("schedule_syscnt", "<u8", 80),
            ("before_run_syscnt", "<u8", 88),
            ("after_run_syscnt", "<u8", 96),
            ("kernel_type", "<u4", 104),
            ("dispatch_us", "<u4", 108),
            ("total_us", "<u4", 112),
        ],
        128,
    ),
)
AICPU_TASK_TAG = 60

AIC_SAMPLE = Layout(  # aicore.data.<dev>.slice_N when sample.json says sample-based, formats.md#aic-sample
    "aic_sample",
    struct(
        [
            ("mode", "u1", 0),
            ("counters", ("<u8", (8,)), 8),
            ("task_cyc", "<u8", 72),
            ("timestamp", "<u8", 80),
            ("count_num", "u1", 88),
            ("core_id", "u1", 89),
        ],
        96,
    ),
)

# --- device: STARS chips (docs/formats.md#stars-acsq, #ffts-pmu, #lpm-freq) ------------

STARS_ACSQ = Layout(  # stars_soc.data.<dev>.slice_N, ACSQ task start/end (func type 0 / 1)
    "stars_acsq",
    struct(
        [
            ("head", "<u2", 0),  # bits 0-5 func type, 6-9 cnt, 10-15 SQE type
            ("magic", "<u2", 2),
            ("stream_id", "<u2", 4),
            ("task_id", "<u2", 6),
            ("syscnt", "<u8", 8),
            ("acc", "<u2", 18),
        ],
        64,
    ),
)
ACSQ_START, ACSQ_END = 0, 1

FFTS_PMU = Layout(  # ffts_profile.data.<dev>.slice_N, context PMU (func type 0b101000 = 40)
    "ffts_pmu",
    struct(
        [
            ("head", "<u2", 0),  # bits 0-5 func type, 6-9 cnt
            ("magic", "<u2", 2),
            ("stream_id", "<u2", 4),
            ("task_id", "<u2", 6),
            ("subtask", "<u2", 16),  # bits 0-7 subtask type, bit 10 overflow
            ("subtask_id", "<u2", 18),
            ("ffts", "<u2", 20),  # bits 13-15 ffts type
            ("total_cycle", "<u8", 32),
            ("counters", ("<u8", (8,)), 48),
            ("start_syscnt", "<u8", 112),
            ("end_syscnt", "<u8", 120),
        ],
        128,
    ),
)
FFTS_CONTEXT_PMU, FFTS_BLOCK_PMU = 0b101000, 0b101001

LPM_FREQ_ENTRIES = 55
LPM_ENTRY = np.dtype([("syscnt", "<u8"), ("freq_mhz", "<u4"), ("reserved", "<u4")])  # 16 bytes
LPM_FREQ = Layout(  # lpmFreqConv.data.<dev>.slice_N: up to 55 (syscnt, AI Core MHz) samples
    "lpm_freq",
    struct([("count", "<u4", 0), ("entries", np.dtype((LPM_ENTRY, (LPM_FREQ_ENTRIES,))), 8)], 888),
)

STARS_SQE_TYPES = [
    "AI_CORE",
    "AI_CPU",
    "AIV_SQE",
    "PLACE_HOLDER_SQE",
    "EVENT_RECORD_SQE",
    "EVENT_WAIT_SQE",
    "NOTIFY_RECORD_SQE",
    "NOTIFY_WAIT_SQE",
    "WRITE_VALUE_SQE",
    "VQ6_SQE",
    "TOF_SQE",
    "SDMA_SQE",
    "VPC_SQE",
    "JPEGE_SQE",
    "JPEGD_SQE",
    "DSA_SQE",
    "ROCCE_SQE",
    "PCIE_DMA_SQE",
    "HOST_CPU_SQE",
    "CDQM_SQE",
    "C_CORE_SQE",
]  # msprof sqe_type_map StarsSqeType
HWTS_SQE_TYPES = [
    "AI_CORE",
    "AI_CPU",
    "AIV_SQE",
    "PLACE_HOLDER_SQE",
    "EVENT_RECORD_SQE",
    "EVENT_WAIT_SQE",
    "NOTIFY_RECORD_SQE",
    "NOTIFY_WAIT_SQE",
    "WRITE_VALUE_SQE",
    "SDMA_SQE",
]  # HwSqeType

# --- MindSpore 0.5 (profiler_default_tag naming) ---------------------------------------

TRAINING_TRACE = Layout(  # training_trace.46.dev.profiler_default_tag.<dev>.slice_N, 20 bytes
    "training_trace",
    struct([("tag", "<u8", 0), ("task_id", "<u2", 8), ("stream_id", "<u2", 10), ("syscnt", "<u8", 12)], 20),
)
TRAINING_TRACE_END = 255  # step end; a tag above 255 (the job id) or 0 starts a step; 1 FP, 2 BP
