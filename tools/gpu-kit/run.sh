#!/bin/sh
# The GPU kit's one command, on a machine with a GPU, no network and no Node, from a copy of this repository that
# carries gpu-kit/kit.tar.xz (built by `node tools/gpu-kit/build.mjs`):
#
#   sh tools/gpu-kit/run.sh [--plan smoke|software|gpu] [--out DIR]
#   sh tools/gpu-kit/run.sh --unpack-only   (unpacks the kit, .gl/ and the Medusa heads, and stops: the first of the
#                                            two calls that bring the heads along; README, GPU kit)
#
# Unpacks the kit (once per archive), writes real-shaped random-weight models with Python (KIT_SHAPES, comma-separated, default
# smollm2-135m,smollm2-360m,qwen2.5-0.5b; see tools/gpu-kit/write_model.py), then runs the benchmark's node-webgpu
# backend on the bundled pair and the verify-cost curves fp32 vs fp16 of those models, and writes
# bench/results/<date>T<hhmm>-<gpu>.json and .md. Environment:
#   VK_DRIVER_FILES  the Vulkan driver's ICD json; default: NVIDIA's at /usr/local/nvidia/share/vulkan/icd.d/
#   WEBGPU_ADAPTER   a substring of the adapter's name when several exist; default NVIDIA with that driver
#   SPEC_DECODER_WASM_TIERUP=1  let V8 optimise ORT's wasm (see src/runtime/ort-node-webgpu.ts)
#   KIT_NODE_FLAGS   flags for the kit's node itself, which NODE_OPTIONS does not take (e.g. '--cpu-prof
#                    --cpu-prof-dir=DIR' for a CPU profile of the whole run)
set -eu
cd "$(dirname "$0")/../.."
KIT=gpu-kit/kit
NODE=$KIT/bin/node

# unpack ARCHIVE DIR: with xz where the machine has it, else with Python's tarfile.
unpack() {
  mkdir -p "$2"
  if command -v xz >/dev/null 2>&1; then
    tar -xJf "$1" -C "$2"
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"
  fi
}

# Unpacked once per archive: a stamp file newer than the archive says this one is unpacked. A kit rebuilt and carried
# again to a machine that kept the last one's ignored files (a warm device machine) is unpacked afresh; before, the
# old kit ran, silently.
if [ -f gpu-kit/kit.tar.xz ] && { [ ! -x "$NODE" ] || [ gpu-kit/kit.tar.xz -nt gpu-kit/.kit-unpacked ]; }; then
  echo "unpacking gpu-kit/kit.tar.xz"
  rm -rf "$KIT"
  unpack gpu-kit/kit.tar.xz gpu-kit
  touch gpu-kit/.kit-unpacked
elif [ ! -x "$NODE" ]; then
  echo "gpu-kit/kit.tar.xz is missing: build it with node tools/gpu-kit/build.mjs" >&2
  exit 1
fi

# The models travel packed (gpu-kit/models.tar.xz: the target, the draft model and the EAGLE head; the tree left
# public/models behind to make room): unpacked where the tree lacks them, and again when a newer archive comes.
if [ -f gpu-kit/models.tar.xz ] && { [ ! -f public/models/austen-target/config.json ] ||
  { [ -f gpu-kit/.models-unpacked ] && [ gpu-kit/models.tar.xz -nt gpu-kit/.models-unpacked ]; }; }; then
  echo "unpacking gpu-kit/models.tar.xz into public/models"
  unpack gpu-kit/models.tar.xz public/models
  touch gpu-kit/.models-unpacked
fi

# The Medusa heads travel apart (gpu-kit/medusa.tar.xz, with the kit in a first call): the next call's tree replaces
# public/models, so they are unpacked again from the archive left on the machine, on every run that lacks them.
if [ -f gpu-kit/medusa.tar.xz ] && [ ! -f public/models/austen-medusa/config.json ]; then
  echo "unpacking gpu-kit/medusa.tar.xz into public/models"
  unpack gpu-kit/medusa.tar.xz public/models
fi

NVIDIA_ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f "$NVIDIA_ICD" ]; then
  export VK_DRIVER_FILES="$NVIDIA_ICD"
  export WEBGPU_ADAPTER="${WEBGPU_ADAPTER:-NVIDIA}"
fi
# NVIDIA's Vulkan driver (libGLX_nvidia.so.0) needs libglvnd's libraries, which the lent GPU machines lack (without
# them Dawn finds no driver: "Could not get 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr'"). The README's GPU
# kit section says how to carry Debian's packages in .gl/; they are unpacked here, as the run on an H100 did.
if ls .gl/*.deb >/dev/null 2>&1 && ! ldconfig -p 2>/dev/null | grep -q 'libGLdispatch.so.0 '; then
  echo "installing the carried libglvnd and Vulkan loader packages from .gl/"
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [ "${VK_DRIVER_FILES:-}" = "$NVIDIA_ICD" ] && ! ldconfig -p 2>/dev/null | grep -q 'libGLdispatch.so.0 '; then
  echo "warning: libGLdispatch.so.0 is missing, so NVIDIA's Vulkan driver will not load: carry .gl/ (README, GPU kit)" >&2
fi
LIBS=$KIT/lib
[ -d /usr/local/nvidia/lib64 ] && LIBS="$LIBS:/usr/local/nvidia/lib64"
export LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# dawn.node needs GLIBCXX_3.4.30; use the carried libstdc++ only where the machine's own is older.
if ! "$NODE" -e "require('./$KIT/app/dist/linux-x64/dawn.node')" >/dev/null 2>&1; then
  export LD_LIBRARY_PATH="$KIT/lib/compat:$LD_LIBRARY_PATH"
fi
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-} WEBGPU_ADAPTER=${WEBGPU_ADAPTER:-}"
if [ "${1:-}" = "--unpack-only" ]; then
  echo "unpacked; run again (within the machine's warm time) carrying gpu-kit/models.tar.xz"
  exit 0
fi

MODELS=""
for shape in $(echo "${KIT_SHAPES-smollm2-135m,smollm2-360m,qwen2.5-0.5b}" | tr ',' ' '); do
  dir=gpu-kit/models/$shape
  [ -f "$dir/config.json" ] || python3 tools/gpu-kit/write_model.py --shape "$shape" --out "$dir"
  MODELS="${MODELS:+$MODELS,}$dir"
done

# shellcheck disable=SC2086 # KIT_NODE_FLAGS holds several flags
exec "$NODE" ${KIT_NODE_FLAGS:-} "$KIT/app/gpu-kit.mjs" --models "$MODELS" "$@"
