"""What the device is (a base class of ``WgpuContext``): adapter, device, queue, features, limits.

``_init_device`` takes the adapter and the device it granted and keeps the facts the launchers
read on every call as plain attributes: ``storage_offset_alignment``, ``max_binding_size``
(rounded down to 4 bytes), ``max_buffer_size``, ``max_workgroups_per_dim``.
"""

from __future__ import annotations

from typing import Any

from . import implementation
from .adapters import WANTED_FEATURES, adapter_description

__all__ = ["DeviceFacts"]


class DeviceFacts:
    """Public attributes: ``device``, ``queue``, ``adapter``, ``adapter_info`` (a dict),
    ``features`` (frozenset of the granted ``WANTED_FEATURES`` and subgroup matrices, by gputensor's names), ``subgroup_matrix_configs``, ``limits`` (dict of granted limits), the
    limits above as ints and ``lost`` (why the device is lost, None while it works)."""

    def _init_device(self, adapter: Any, device: Any) -> None:
        self.adapter = adapter
        self.device = device
        self.queue = device.queue
        #: Why the device is lost (the first cause), None while it works (``device_state``).
        self.lost: str | None = None
        self.adapter_info = dict(adapter.info)
        ours = {name: feature for feature, name in implementation.FEATURES.items()}
        granted = (ours.get(str(f), str(f)) for f in device.features)
        # gputensor's names; a feature requested only for another's sake (Dawn's subgroups,
        # for subgroup matrices) is not one the kernels may use
        self.features = frozenset(f for f in granted if (f in WANTED_FEATURES or f == implementation.SUBGROUP_MATRIX)
                                  and f not in implementation.SKIPPED_FEATURES)
        #: the adapter's subgroup-matrix configurations (``implementation.subgroup_matrix_configs``)
        #: where the device has ``implementation.SUBGROUP_MATRIX``, else ()
        self.subgroup_matrix_configs = (implementation.subgroup_matrix_configs(adapter)
                                        if implementation.SUBGROUP_MATRIX in self.features else ())
        self.limits = dict(device.limits)
        self.storage_offset_alignment = int(self.limits.get("min-storage-buffer-offset-alignment", 256))
        self.max_binding_size = int(self.limits["max-storage-buffer-binding-size"]) // 4 * 4
        self.max_buffer_size = int(self.limits["max-buffer-size"])
        self.max_workgroups_per_dim = int(self.limits["max-compute-workgroups-per-dimension"])

    def __repr__(self) -> str:
        return (
            f"WgpuContext(adapter={adapter_description(self.adapter_info)!r}, "
            f"features={sorted(self.features)}, "
            f"max_binding={self.max_binding_size >> 20} MiB, max_buffer={self.max_buffer_size >> 20} MiB, "
            f"workgroup_storage={self.limits.get('max-compute-workgroup-storage-size')} B)"
        )

    @property
    def is_software(self) -> bool:
        """True for CPU (software) adapters such as lavapipe."""
        return self.adapter_info.get("adapter_type") == "CPU"
