"""Control files of a collection directory as pydantic models (docs/formats.md#control-files).

Unknown keys are kept (``extra="allow"``) so nothing a producer wrote is lost; the
run keeps each file's full text as well. Values that producers write either as
strings or as numbers (frequencies, ids) are accepted in both forms.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

# Ranges a value must be in to be a value and not a producer's garbage: a number that no
# clock, counter or device can have becomes ``bad_metadata`` naming the field, instead of an
# overflow deep in the decoding. Times are microseconds or nanoseconds since an epoch,
# within 64-bit counters and Python's datetimes (up to the year 9999).
MAX_TIME_US = 253_402_300_799_999_999  # 9999-12-31T23:59:59.999999Z
MAX_I64 = 2**63 - 1
MAX_I32 = 2**31 - 1
FREQ_MHZ = (1e-3, 1e6)  # 1 kHz .. 1 THz: every clock the files name is well inside
TimeUs = Annotated[int, Field(ge=0, le=MAX_TIME_US)]
Counter = Annotated[int, Field(ge=0, le=MAX_I64)]
Small = Annotated[int, Field(ge=0, le=MAX_I32)]


class MetadataError(Exception):
    """A control file that cannot be used; ``str()`` is a one-line reason."""


def _num(v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip()
    if not s or s.upper() in {"NA", "N/A"}:
        return None
    try:
        return float(s)
    except ValueError:
        return None


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


def _check_freq(v: Any) -> Any:
    """A frequency in MHz as the producers write it (number or text, "NA", 0 or less for none),
    refused when it is not finite or a positive number outside ``FREQ_MHZ``."""
    f = _num(v)
    if f is not None and not (math.isfinite(f) and (f <= 0 or FREQ_MHZ[0] <= f <= FREQ_MHZ[1])):
        raise ValueError(f"{v!r} is not a frequency in MHz ({FREQ_MHZ[0]:g} to {FREQ_MHZ[1]:g})")
    return v


class CpuInfo(_Open):
    frequency: Any = Field(default=None, alias="Frequency")

    _freq = field_validator("frequency")(classmethod(lambda cls, v: _check_freq(v)))

    @property
    def frequency_mhz(self) -> float | None:
        f = _num(self.frequency)
        return f if f and f > 0 else None


class DeviceInfo(_Open):
    id: Small | None = None
    hwts_frequency: Any = None
    aic_frequency: Any = None
    aiv_frequency: Any = None
    ai_core_num: Small | None = None
    aiv_num: Small | None = None

    _freq = field_validator("hwts_frequency", "aic_frequency", "aiv_frequency")(
        classmethod(lambda cls, v: _check_freq(v))
    )

    @property
    def hwts_mhz(self) -> float | None:
        return _num(self.hwts_frequency)

    @property
    def aic_mhz(self) -> float | None:
        return _num(self.aic_frequency)


class InfoJson(_Open):
    platform_version: str
    devices: str | None = None
    pid: str | None = None
    cpu: list[CpuInfo] = Field(default_factory=list, alias="CPU")
    device_info: list[DeviceInfo] = Field(default_factory=list, alias="DeviceInfo")

    @field_validator("platform_version", "devices", "pid", mode="before")
    @classmethod
    def _as_text(cls, v: Any) -> Any:
        return None if v is None else str(v)

    @property
    def host_freq_mhz(self) -> float | None:
        return self.cpu[0].frequency_mhz if self.cpu else None

    @property
    def pid_int(self) -> int | None:
        return int(self.pid) if self.pid and self.pid.isdigit() else None


class SampleJson(_Open):
    devices: str | None = None
    ai_core_profiling_mode: str | None = None
    ai_core_metrics: str | None = None
    ai_core_profiling_events: str | None = None

    @field_validator("devices", mode="before")
    @classmethod
    def _as_text(cls, v: Any) -> Any:
        return None if v is None else str(v)

    def event_ids(self) -> list[int]:
        """Counter slot -> PMU event id, from ``ai_core_profiling_events`` (hex list)."""
        text = (self.ai_core_profiling_events or "").strip()
        if not text:
            return []
        ids = []
        for part in text.split(","):
            part = part.strip()
            try:
                ids.append(int(part[:20], 16) if len(part) <= 20 else MAX_I32 + 1)
            except ValueError:
                raise MetadataError(f"ai_core_profiling_events has {part!r}, not a hex event id") from None
            if ids[-1] > MAX_I32:
                raise MetadataError(
                    f"ai_core_profiling_events has {part[:24]!r}, out of the range of event ids"
                )
        return ids


class StartInfo(_Open):
    collection_date_begin: str | None = Field(default=None, alias="collectionDateBegin")
    collection_time_begin_us: TimeUs | None = Field(default=None, alias="collectionTimeBegin")
    clock_monotonic_raw_ns: Counter | None = Field(default=None, alias="clockMonotonicRaw")


class SyncLog(BaseModel):
    """``host_start.log(.N)`` or ``dev_start.log.N``: ``key: value`` lines, maybe under a section.

    Both the current key set (``clock_monotonic_raw``, ``cntvct``, ``cntvct_diff``) and
    the 2022 one (``clock_realtime`` first) are read by key.
    """

    section: str | None = None
    values: dict[str, int] = Field(default_factory=dict)

    @property
    def clock_monotonic_raw(self) -> int | None:
        return self.values.get("clock_monotonic_raw")

    @property
    def cntvct(self) -> int | None:
        return self.values.get("cntvct")

    @property
    def cntvct_diff(self) -> int:
        return self.values.get("cntvct_diff", 0)


def read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise MetadataError("is a directory, not a file") from None
    except OSError as e:
        raise MetadataError(f"cannot be read ({e.strerror})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MetadataError(f"is not UTF-8 text (byte {e.start})") from None


def _json(path: Path) -> dict:
    text = read_text(path)
    try:
        data = json.loads(text)
    except RecursionError:
        raise MetadataError("is JSON nested too deep to be a control file") from None
    except ValueError:  # not JSON, or a number of more digits than Python converts
        # msprof reads only the first line; accept a valid first line followed by noise.
        try:
            data = json.loads(text.splitlines()[0] if text else "")
        except RecursionError:
            raise MetadataError("is JSON nested too deep to be a control file") from None
        except (ValueError, IndexError) as e:
            raise MetadataError(f"is not JSON ({e.msg if hasattr(e, 'msg') else str(e)[:120]})") from None
    if not isinstance(data, dict):
        raise MetadataError("is JSON but not an object")
    return data


def _model(cls, path: Path):
    try:
        return cls.model_validate(_json(path))
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise MetadataError(f"{loc}: {err['msg']}") from None


def read_info(path: Path) -> InfoJson:
    return _model(InfoJson, path)


def read_sample(path: Path) -> SampleJson:
    return _model(SampleJson, path)


def read_start_info(path: Path) -> StartInfo:
    return _model(StartInfo, path)


_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_ ]*?)\s*:\s*(-?\d+)\s*$")


def read_sync_log(path: Path) -> SyncLog:
    section = None
    values: dict[str, int] = {}
    for line in read_text(path).splitlines():
        s = line.strip()
        if not s:
            continue
        if s.startswith("[") and s.endswith("]"):
            if section is not None:
                break  # msprof takes the first section only
            section = s[1:-1]
            continue
        m = _LINE.match(s)
        if m:
            digits = m.group(2)
            value = int(digits) if len(digits) <= 20 else None
            if value is None or not 0 <= value <= MAX_I64:
                raise MetadataError(
                    f"{m.group(1)}: {digits[:24]}{'...' if len(digits) > 24 else ''} is out of the "
                    "range of a 64-bit clock"
                )
            values[m.group(1)] = value
    if "clock_monotonic_raw" not in values and "cntvct" not in values:
        raise MetadataError("has neither clock_monotonic_raw nor cntvct")
    return SyncLog(section=section, values=values)


# Metric set names: hiprof's (the seed document) to msprof's vocabulary. Event ids always
# come from sample.json; the name is recorded for people and for the docs.
METRIC_SET_ALIASES = {
    "aicoreArithmeticThroughput": "ArithmeticUtilization",
    "aicorePipeline": "PipeUtilization",
    "aicoreSynchronization": "Synchronization",
    "aicoreMemoryBandwidth": "Memory",
    "aicoreInternalMemoryBandwidth": "MemoryL0",
    "aicorePipelineStall": "ResourceConflictRatio",
    "aicoreMetricsAll": "All",
}


def normalise_metric_set(name: str | None) -> str | None:
    if name is None:
        return None
    return METRIC_SET_ALIASES.get(name, name)


CHIPS = {
    "0": "Ascend310",
    "1": "Ascend910A",
    "2": "mdc",
    "3": "lhisi",
    "4": "Ascend310P",
    "5": "Ascend910B",
    "7": "Ascend310B",
    "15": "Ascend950",
}
