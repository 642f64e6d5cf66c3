"""``DevicePlugin``: a dask.distributed worker plugin that keeps each worker to one gputensor device.

Importing this module imports ``distributed`` (``import gputensor`` does not). One worker
process per device, as dask-cuda does for CUDA devices::

    from distributed import Client, LocalCluster
    from gputensor.dask_plugin import DevicePlugin

    cluster = LocalCluster(n_workers=len(gt.devices()), threads_per_worker=1, processes=True)
    client = Client(cluster)
    client.register_plugin(DevicePlugin())

At a worker's start-up the plugin makes one device the worker process's default
(``gputensor.set_default_device``): arrays the worker's tasks create and the arrays it unpickles
(chunks sent by value from other workers or the client) live there, and operations on them run
there. Which device: ``devices`` (names such as ``'webgpu:1'``; default: every device the worker
lists) indexed by the worker's name when that is an integer (LocalCluster names its workers
0, 1, ...) -- worker ``k`` takes ``devices[k % len(devices)]`` -- or the device the name names,
else by a stable hash of the name. Workers that share one process (``processes=False``) share
its default device: use one process per device.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

from distributed import WorkerPlugin

from ._devices import devices as _devices
from ._devices import set_default_device

__all__ = ["DevicePlugin", "device_for"]


def device_for(name: Any, names: Sequence[str]) -> str:
    """The device name a worker called ``name`` takes among ``names`` (see the module
    docstring). ``ValueError`` for an empty ``names``."""
    if not names:
        raise ValueError("no gputensor device to choose from")
    text = str(name)
    if text in names:
        return text
    if isinstance(name, int) or text.isdigit():
        return names[int(text) % len(names)]
    return names[zlib.crc32(text.encode()) % len(names)]


class DevicePlugin(WorkerPlugin):
    """Make one gputensor device the default of each worker process (module docstring);
    ``worker.gputensor_device`` records its name."""

    name = "gputensor-device"

    def __init__(self, devices: Sequence[Any] | None = None) -> None:
        self.devices = None if devices is None else [str(d) for d in devices]

    def setup(self, worker: Any) -> None:
        names = self.devices or [str(d) for d in _devices()]
        chosen = device_for(worker.name, names)
        set_default_device(chosen)
        worker.gputensor_device = chosen
