"""Command line: `python -m nvfp4 info | bench | --cmake-dir | --version`."""

from __future__ import annotations

import argparse
import os
import sys


def _cmake_dir() -> str:
    # next to the extension: in an editable install that is site-packages, not this source tree
    from . import _nvfp4_ext

    return os.path.join(os.path.dirname(os.path.abspath(_nvfp4_ext.__file__)), "lib", "cmake", "nvfp4")


def _info(args) -> int:
    import nvfp4

    i = nvfp4.info()
    if args.json:
        import json

        print(json.dumps(i, indent=2))
        return 0
    print(f"nvfp4 {i['version']}  (CUDA archs compiled: {', '.join(i['build_archs'])})")
    if not i["devices"]:
        print("no CUDA device visible: GPU ops raise; host (numpy) arrays run the CPU implementations")
    for d in i["devices"]:
        cc = ".".join(str(x) for x in d["compute_capability"])
        print(f"  cuda:{d['device']}  {d['name']}  CC {cc}  {d['multiprocessors']} SMs  "
              f"{d['total_memory_bytes'] / 2**30:.0f} GiB  backend: {d['backend']}")
    print(f"note: sm100a backend: {i['notes']['sm100a']}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nvfp4", description=__doc__)
    parser.add_argument("--cmake-dir", action="store_true",
                        help="print the directory to pass to CMake (nvfp4_DIR / CMAKE_PREFIX_PATH)")
    parser.add_argument("--version", action="store_true", help="print the version")
    sub = parser.add_subparsers(dest="command")
    p_info = sub.add_parser("info", help="devices, the backend each uses, compiled archs")
    p_info.add_argument("--json", action="store_true")
    p_bench = sub.add_parser(
        "bench", help="benchmark the gpu-mode shapes against the reference (main job)",
        description="The main job: every gpu-mode shape checked against a float64 reference and timed twice, "
                    "by CUDA-graph replay (the kernels) and eagerly as the gpu-mode harness times a submission "
                    "(host overhead included), beside cuBLAS bf16 (grouped: also torch._grouped_mm) timed the "
                    "same two ways.")
    from .bench import add_arguments as _bench_args

    _bench_args(p_bench)
    args = parser.parse_args(argv)
    if args.cmake_dir:
        print(_cmake_dir())
        return 0
    if args.version:
        import nvfp4

        print(nvfp4.__version__)
        return 0
    if args.command == "info":
        return _info(args)
    if args.command == "bench":
        from .bench import run

        return run(args)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
