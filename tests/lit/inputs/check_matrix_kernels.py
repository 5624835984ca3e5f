#!/usr/bin/env python3
"""check_matrix_kernels.py LL HSACO ARCH MNEMONIC INFO: the static check of an AMD matrix path.

LL is the optimized LLVM IR of a bundle's code object for ARCH (--emit ll), HSACO the code object,
INFO the output of `netc info` on the bundle. Every GEMM kernel (a kernel whose IR uses the GEMM
template's LDS tiles, @gemm_lds) must contain MNEMONIC in llvm-objdump's disassembly, and no kernel
of ARCH may spill (scratch bytes and spilled VGPRs/SGPRs 0, the figures of the code object's
metadata that `netc info` prints). Prints one summary line; exits 1 with the offenders otherwise."""
import re
import subprocess
import sys


def gemm_kernels(ll):
    kernels, name, body = [], None, []
    for line in open(ll):
        m = re.match(r'define .*amdgpu_kernel void @([\w.]+)\(', line)
        if m:
            name, body = m.group(1), []
        elif name and line.startswith('}'):
            if any('@gemm_lds' in b for b in body):
                kernels.append(name)
            name = None
        elif name:
            body.append(line)
    return kernels


def disassembly(hsaco, arch):
    text = subprocess.run(['llvm-objdump', '-d', '--mcpu=' + arch, hsaco], check=True, capture_output=True,
                          text=True).stdout
    funcs, name = {}, None
    for line in text.splitlines():
        m = re.match(r'^[0-9a-f]+ <([\w.]+)>:', line)
        if m:
            name = m.group(1)
            funcs[name] = []
        elif name:
            funcs[name].append(line)
    return {k: '\n'.join(v) for k, v in funcs.items()}


def spills(info, arch):
    """Kernel lines of ARCH's table in `netc info`: (name, scratch, spill v/s) where not all 0."""
    bad, inside, kernels = [], False, 0
    for line in open(info):
        if line.startswith('target '):
            inside = line.startswith('target %s:' % arch)
            continue
        f = line.split()
        if not inside or len(f) < 9 or not f[0].startswith('k') or not f[1].isdigit():
            continue
        kernels += 1
        scratch, spill = f[6], f[7]
        if scratch != '0' or spill != '0/0':
            bad.append('%s (scratch %s, spill %s)' % (f[0], scratch, spill))
    return kernels, bad


def main():
    ll, hsaco, arch, mnemonic, info = sys.argv[1:6]
    gemms = gemm_kernels(ll)
    code = disassembly(hsaco, arch)
    missing = [k for k in gemms if mnemonic not in code.get(k, '')]
    kernels, spilled = spills(info, arch)
    errors = []
    if not gemms:
        errors.append('no GEMM kernels in %s' % ll)
    if missing:
        errors.append('%d of %d GEMM kernels lack %s: %s' % (len(missing), len(gemms), mnemonic, ', '.join(missing)))
    if not kernels:
        errors.append('no kernel table of %s in %s' % (arch, info))
    if spilled:
        errors.append('kernels that spill: ' + ', '.join(spilled))
    if errors:
        for e in errors:
            print('check_matrix_kernels: %s: %s' % (arch, e), file=sys.stderr)
        return 1
    print('%s: %d GEMM kernels, each with %s; none of %d kernels spills' % (arch, len(gemms), mnemonic, kernels))
    return 0


if __name__ == '__main__':
    sys.exit(main())
