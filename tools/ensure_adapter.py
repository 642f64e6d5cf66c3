"""Make sure wgpu finds a WebGPU adapter; on Debian as root install lavapipe when none is found.

``--gl``: an OpenGL adapter instead (llvmpipe through EGL: Mesa's EGL and GL drivers).
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


HOW_GL = (
    "No OpenGL WebGPU adapter was found. On Debian/Ubuntu install Mesa's EGL and GL drivers with:\n"
    "    sudo apt-get update && sudo apt-get install -y libegl1 libegl-mesa0 libgl1-mesa-dri"
)


def vulkan_or_better(gl: bool = False) -> str | None:
    """Name of the best non-GL adapter wgpu finds (with ``gl``: the first OpenGL one), or None."""
    test = "==" if gl else "!="
    code = (
        "import wgpu\n"
        f"ads = [a for a in wgpu.gpu.enumerate_adapters_sync() if a.info['backend_type'] {test} 'OpenGL']\n"
        "print(ads[0].info['device'] + ' (' + ads[0].info['backend_type'] + ')' if ads else '')\n"
    )
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    name = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    return name or None


def main() -> int:
    gl = "--gl" in sys.argv[1:]
    name = vulkan_or_better(gl)
    if name:
        print(f"WebGPU adapter: {name}")
        return 0
    packages = ["libegl1", "libegl-mesa0", "libgl1-mesa-dri"] if gl else ["mesa-vulkan-drivers"]
    is_debian = os.path.exists("/etc/debian_version")
    if is_debian and os.geteuid() == 0 and shutil.which("apt-get"):
        what = "OpenGL" if gl else "Vulkan/Metal/D3D12"
        print(f"No {what} adapter found: installing {' '.join(packages)} ...", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
        res = subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env)
        if res.returncode == 0:
            name = vulkan_or_better(gl)
            if name:
                print(f"WebGPU adapter: {name}")
                return 0
    print(HOW_GL if gl else HOW, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
