#!/usr/bin/env bash
# Set up Dawn on the CPU: the lavapipe of Mesa 25 from Debian's bookworm-backports, unpacked into a
# folder (nothing installed system-wide; Dawn refuses Debian 12's Mesa 22.3 lavapipe), and wgpudawn.
# Usage: tools/dawn_lavapipe.sh [FOLDER]   (default .dawn); then: source FOLDER/env.sh
# env.sh selects Dawn (GPUTENSOR_WGPU=dawn) and this lavapipe (VK_ICD_FILENAMES).
set -euo pipefail
dest="$(realpath -m "${1:-.dawn}")"
python="${PYTHON:-python3}"
mkdir -p "$dest/apt/lists/partial" "$dest/apt/parts" "$dest/debs" "$dest/root"
echo "deb http://deb.debian.org/debian bookworm-backports main" > "$dest/apt/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$dest/apt/sources.list" -o "Dir::Etc::sourceparts=$dest/apt/parts"
          -o "Dir::State::Lists=$dest/apt/lists" -o APT::Get::List-Cleanup=0)
if ! ls "$dest"/debs/mesa-vulkan-drivers_25*.deb >/dev/null 2>&1; then
    apt-get "${apt_opts[@]}" update -qq
    version="$(apt-cache "${apt_opts[@]}" madison mesa-vulkan-drivers | awk '$3 ~ /^25\./ {print $3; exit}')"
    [ -n "$version" ] || { echo "no Mesa 25 mesa-vulkan-drivers in bookworm-backports" >&2; exit 1; }
    (cd "$dest/debs" && apt-get "${apt_opts[@]}" download "mesa-vulkan-drivers=$version" 2>/dev/null)
fi
dpkg -x "$dest"/debs/mesa-vulkan-drivers_25*.deb "$dest/root"
lib="$dest/root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
[ -f "$lib" ] || { echo "lavapipe not found in the package" >&2; exit 1; }
cat > "$dest/lvp_icd.json" <<JSON
{"file_format_version": "1.0.0", "ICD": {"api_version": "1.4.305", "library_path": "$lib"}}
JSON
"$python" -c "import wgpudawn" 2>/dev/null || "$python" -m pip install -q 'wgpudawn==0.32.0.4'
cat > "$dest/env.sh" <<ENV
export VK_ICD_FILENAMES="$dest/lvp_icd.json" GPUTENSOR_WGPU=dawn XDG_RUNTIME_DIR="\${XDG_RUNTIME_DIR:-/tmp}"
ENV
echo "Dawn on Mesa 25 lavapipe: source $dest/env.sh"
