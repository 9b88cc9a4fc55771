"""gpk.devices(): the CUDA devices gpk can use."""
import ctypes
from ctypes import byref, c_int
from typing import NamedTuple

from . import _lib


class DeviceInfo(NamedTuple):
    """One CUDA device as gpk sees it (memory in bytes, SM clock in kHz, CUDA versions as 13000 for 13.0)."""

    index: int
    name: str
    compute_capability: tuple
    total_memory: int
    free_memory: int
    multiprocessors: int
    clock_khz: int
    memory_bus_bits: int
    l2_bytes: int
    driver_version: int
    runtime_version: int


def devices():
    """The usable CUDA devices, as DeviceInfo; an empty list where there is none (no driver, no device,
    a driver too old, a library built without CUDA)."""
    count = c_int(0)
    if _lib.lib.gpk_device_count(byref(count)) != 0:
        return []
    found = []
    for index in range(count.value):
        info = _lib.DeviceInfo_C()
        info.struct_size = ctypes.sizeof(info)
        _lib.check(_lib.lib.gpk_device_get_info(byref(info), index), None)
        found.append(DeviceInfo(index, info.name.decode("utf-8", "replace"), (info.compute_major, info.compute_minor),
                                info.total_memory, info.free_memory, info.multiprocessors, info.clock_khz,
                                info.memory_bus_bits, info.l2_bytes, info.driver_version, info.runtime_version))
    return found
