# Copies the CUDA sources the emulated checks need into a folder of host-compilable C++: dynamic shared
# memory becomes the emulator's buffer, triple-chevron launches become emu_launch calls, and (unless asked
# to keep them) the heat solver's 256-thread blocks become 64-thread blocks (128-thread ones 32), which the emulator runs four
# times faster; the kernels are written for any block size.
# Usage: python3 transform.py LIB_DIR OUT_DIR [keep]
import re, os, sys
src = sys.argv[1]
out = sys.argv[2] if len(sys.argv) > 2 else 'src/cuda'
keep = len(sys.argv) > 3
os.makedirs(out, exist_ok=True)
files = ['heat.cu', 'heat.cuh', 'heat_kernels.cuh', 'heat_blocked.cuh', 'heat_pass.cu', 'heat_pass.cuh',
         'heat_slab.cu', 'heat_slab.cuh', 'device_context.cu', 'device_context.cuh',
         'memory.cu', 'memory.cuh', 'check.cuh', 'pointer.cuh', 'fault.cu', 'convolve/kernels.cuh', 'convolve/fused.cuh']
for f in files:
    s = open(os.path.join(src, 'cuda', f)).read()
    s = s.replace('extern __shared__ __align__(16) unsigned char shared_raw[];', 'unsigned char *shared_raw = emu_shared;')
    s = s.replace('extern __shared__ __align__(16) unsigned char smem_raw[];', 'unsigned char *smem_raw = emu_shared;')
    s = s.replace('#pragma once', '#pragma once\n#include <cuda_runtime.h>', 1)
    s = re.sub(r'(\([^()]*\)|[\w:<>.]+)<<<(.*?)>>>\(', lambda m: 'emu_launch(%s, %s, ' % (m.group(1), m.group(2)), s, flags=re.S)
    if f == 'heat.cu' and not keep:
        for a, b in [('kFinishThreads = 256', 'kFinishThreads = 64'), ('1024), 256, 0', '1024), 64, 0')]:
            assert a in s, a
            s = s.replace(a, b)
    if f == 'heat_pass.cu' and not keep:
        assert 'kStatsThreads = 256' in s
        s = s.replace('kStatsThreads = 256', 'kStatsThreads = 64')
        # pass kernels: 256-thread blocks become 64, 128-thread ones 32
        s, n = re.subn(r'pass_kernel_of<(\d+), 256, ', r'pass_kernel_of<\1, 64, ', s)
        assert n > 0
        s, n = re.subn(r'pass_kernel_of<(\d+), 128, ', r'pass_kernel_of<\1, 32, ', s)
        assert n > 0
    name = f.replace('.cu', '.cpp') if f.endswith('.cu') else f
    os.makedirs(os.path.dirname(os.path.join(out, name)), exist_ok=True)
    open(os.path.join(out, name), 'w').write(s)
