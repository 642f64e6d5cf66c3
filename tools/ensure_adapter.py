"""Make sure wgpu finds a WebGPU adapter; on Debian as root install lavapipe when none is found.

Exit status 0 when an adapter is available (printing it), 1 with instructions otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

HOW = (
    "No WebGPU adapter was found. gputensor needs one: a GPU with a Vulkan, Metal or D3D12 driver, "
    "or a software adapter. On Debian/Ubuntu install the lavapipe Vulkan driver with:\n"
    "    sudo apt-get update && sudo apt-get install -y mesa-vulkan-drivers"
)


def vulkan_or_better() -> str | None:
    """Name of the best non-GL adapter wgpu finds, or None."""
    code = (
        "import wgpu\n"
        "ads = [a for a in wgpu.gpu.enumerate_adapters_sync() if a.info['backend_type'] != 'OpenGL']\n"
        "print(ads[0].info['device'] + ' (' + ads[0].info['backend_type'] + ')' if ads else '')\n"
    )
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    name = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    return name or None


def main() -> int:
    name = vulkan_or_better()
    if name:
        print(f"WebGPU adapter: {name}")
        return 0
    is_debian = os.path.exists("/etc/debian_version")
    if is_debian and os.geteuid() == 0 and shutil.which("apt-get"):
        print("No Vulkan/Metal/D3D12 adapter found: installing mesa-vulkan-drivers (lavapipe) ...", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
        res = subprocess.run(["apt-get", "install", "-y", "-qq", "mesa-vulkan-drivers"], env=env)
        if res.returncode == 0:
            name = vulkan_or_better()
            if name:
                print(f"WebGPU adapter: {name}")
                return 0
    print(HOW, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
