#!/usr/bin/env bash
# Rebuilds the checked-in code objects and the reference outputs the tests compare with.
# Needs Debian 12's hipcc and rocm-device-libs (HIP 5.2) and llvm-14; CI does not run this, it
# reads what this wrote. Usage: tests/codeobj/rebuild.sh
set -euo pipefail
cd "$(dirname "$0")"
bundler=/usr/lib/llvm-14/bin/clang-offload-bundler
for tool in hipcc "$bundler" llvm-readelf-14 llvm-objdump-14; do
  command -v "$tool" >/dev/null || {
    echo "rebuild.sh: $tool not found; apt-get install hipcc rocm-device-libs llvm-14" >&2
    exit 1
  }
done
archs=(gfx90a gfx1030)
kernels=assert_kernel,trap_kernel,spin_kernel,lds_kernel,spill_kernel
# One clang offload bundle with both targets, as hipcc --genco writes it.
hipcc "${archs[@]/#/--offload-arch=}" --genco -O2 -std=c++17 -o kernels.hsaco kernels.hip
# The bare ELF of each target, as rocm-debug-agent's --save-code-objects would save it.
for arch in "${archs[@]}"; do
  "$bundler" --type=o --unbundle --inputs=kernels.hsaco \
    --targets="hipv4-amdgcn-amd-amdhsa--$arch" --outputs="kernels-$arch.elf"
  llvm-readelf-14 --notes "kernels-$arch.elf" >"kernels-$arch.notes.txt"
  # The kernels only: __assert_fail's printf code would make the reference ten times larger.
  llvm-objdump-14 -d --mcpu="$arch" --disassemble-symbols="$kernels" "kernels-$arch.elf" \
    >"kernels-$arch.objdump.txt"
done
# The .symtab with its indexes, for codeobj::symbol_index (what `nvdisasm -fun` takes).
llvm-readelf-14 --symbols kernels-gfx90a.elf | sed -n "/Symbol table '.symtab'/,\$p" \
  >kernels-gfx90a.symbols.txt
# 1,000 kernels for the benchmark, one target.
hipcc --offload-arch=gfx90a --genco -O2 -std=c++17 -o many_kernels.hsaco many_kernels.hip
"$bundler" --type=o --unbundle --inputs=many_kernels.hsaco \
  --targets=hipv4-amdgcn-amd-amdhsa--gfx90a --outputs=many_kernels-gfx90a.elf
rm many_kernels.hsaco
