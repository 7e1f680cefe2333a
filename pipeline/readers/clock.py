"""Device counter ticks to nanoseconds on the run's host-monotonic timeline (docs/formats.md#clock-device)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DeviceClock:
    hwts_mhz: float | None
    dev_cntvct: int
    host_mon_ns: int

    @property
    def usable(self) -> bool:
        return bool(self.hwts_mhz) and self.hwts_mhz > 0

    def to_ns(self, syscnt: np.ndarray) -> np.ndarray | None:
        """``host_mon_ns + (syscnt - dev_cntvct) * 1e3 / hwts_MHz``, rounded to whole ns.

        Integer arithmetic when the frequency is a whole number of MHz (exact), float
        otherwise. ``None`` when the frequency is unknown.
        """
        if not self.usable:
            return None
        delta = syscnt.astype(np.int64) - np.int64(self.dev_cntvct)
        f = self.hwts_mhz
        if float(f).is_integer():
            fi = np.int64(int(f))
            num = delta * np.int64(2000) + fi
            return np.floor_divide(num, 2 * fi) + np.int64(self.host_mon_ns)
        return np.rint(delta * (1e3 / f)).astype(np.int64) + np.int64(self.host_mon_ns)


def host_monotonic_ns(clock_monotonic_raw: int, cntvct_diff: int, host_freq_mhz: float | None) -> int:
    """The sync point's host time, with the ``cntvct_diff`` correction of docs/formats.md#clock-device."""
    freq_hz = host_freq_mhz * 1e6 if host_freq_mhz and host_freq_mhz > 0 else 1e9
    return clock_monotonic_raw + (round(cntvct_diff * 1e9 / freq_hz) if cntvct_diff else 0)
