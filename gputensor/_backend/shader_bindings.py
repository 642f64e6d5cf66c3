"""How a kernel's WGSL source uses its storage bindings: the one place the binding types of a
pipeline's layout come from. No wgpu here.

Every kernel binds a uniform at ``@binding(0)`` and storage buffers at ``@binding(1..n)`` of
group 0. A storage binding the kernel only reads is declared ``var<storage, read>`` (WGSL's
default access, also when the access is left out), one it writes (stores, atomics, pointers
taken with ``&``) ``var<storage, read_write>``. The layout gives a read binding the type
``read-only-storage`` and a read-write one ``storage``; a binding the source does not declare,
or declares but never names again (a placeholder of a kernel variant), is ``UNUSED`` and laid
out as ``read-only-storage``. ``WgpuContext`` (``bind_groups``) relies on these facts: two
bindings of one buffer may overlap only when neither is writable.

``storage_access(source, n)`` parses the declarations; ``with_writable(source, bindings)``
returns the source with those bindings declared ``read_write`` (for a dispatch that binds one
buffer both read-only and writable, which WebGPU forbids in one dispatch: the read binding is
then bound as a writable one, and reads the same).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = ["READ", "WRITE", "UNUSED", "storage_access", "with_writable"]

#: access of a storage binding: only read, written (or atomic), not used by the kernel
READ, WRITE, UNUSED = "read", "read_write", "unused"

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_DECL = re.compile(
    r"@(?:group\(\s*0\s*\)\s*@binding\(\s*(?P<a>\d+)\s*\)|binding\(\s*(?P<b>\d+)\s*\)\s*@group\(\s*0\s*\))"
    r"\s*var\s*<\s*storage\s*(?:,\s*(?P<access>read_write|read)\s*)?>\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
)


@functools.lru_cache(maxsize=4096)
def storage_access(source: str, n_storage: int) -> tuple[str, ...]:
    """The access (``READ``, ``WRITE`` or ``UNUSED``) of storage bindings 1..``n_storage`` of
    the WGSL ``source``, from its ``var<storage, ...>`` declarations of group 0. ValueError
    for a storage declaration beyond ``n_storage`` or at binding 0."""
    text = _COMMENT.sub("", source)
    access = [UNUSED] * n_storage
    for match in _DECL.finditer(text):
        binding = int(match.group("a") or match.group("b"))
        if not 1 <= binding <= n_storage:
            raise ValueError(f"storage binding {binding} is outside bindings 1..{n_storage} of the call")
        name = match.group("name")
        if len(re.findall(rf"\b{name}\b", text)) > 1:
            access[binding - 1] = WRITE if match.group("access") == "read_write" else READ
    return tuple(access)


def with_writable(source: str, bindings: Iterable[int]) -> str:
    """``source`` with the storage declarations of ``bindings`` (numbers 1..n) made
    ``read_write``."""
    wanted = set(bindings)

    def promote(match: re.Match[str]) -> str:
        binding = int(match.group("a") or match.group("b"))
        if binding not in wanted or match.group("access") == "read_write":
            return match.group(0)
        head = match.group(0)[: match.start("name") - match.start(0)]
        head = re.sub(r"<\s*storage\s*(?:,\s*read\s*)?>", "<storage, read_write>", head)
        return head + match.group("name")

    return _DECL.sub(promote, source)
