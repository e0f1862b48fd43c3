#!/usr/bin/env python3
"""The machine a benchmark ran on, named precisely for its results file: the CPU's model name,
family/model/stepping, the ISA flags that matter to GTCO's kernels, the core count and memory
(AMD EPYC VMs of one name are Zen 3, Zen 4 or Zen 5; Intel Xeons Sapphire or Emerald Rapids).

    python3 bench/machine.py      prints the line (for shell scripts)
"""
import os

FLAGS = ["avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16",
         "amx_int8"]


def describe():
    """e.g. "AMD EPYC (family 25, model 17, stepping 1); flags: avx2=yes ... amx_int8=no;
    2 cores, 24 GiB"."""
    info, flags = {}, set()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "flags" and not flags:
                    flags = set(value.split())
                elif key in ("model name", "cpu family", "model", "stepping") and key not in info:
                    info[key] = value.strip()
    except OSError:
        pass
    memory = ""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    memory = f", {int(line.split()[1]) / 1048576:.0f} GiB"
    except OSError:
        pass
    return (f"{info.get('model name', '?')} (family {info.get('cpu family', '?')}, model "
            f"{info.get('model', '?')}, stepping {info.get('stepping', '?')}); flags: "
            + " ".join(f"{f}={'yes' if f in flags else 'no'}" for f in FLAGS)
            + f"; {os.cpu_count()} cores{memory}")


if __name__ == "__main__":
    print(describe())
