"""Tensor-parallel gated MLP with nvfp4 and torch.distributed (NCCL), one process per GPU.

    y = W2 · (silu(W1·x) * (W3·x))          x: (tokens, hidden); W1, W3: (inter, hidden); W2: (hidden, inter)

Megatron-style split over P GPUs: W1 and W3 are column-parallel (rank r holds rows
[r·I/P, (r+1)·I/P) of both: its slice of the intermediate activations), W2 is row-parallel
(rank r holds the matching I/P columns), and one all-reduce sums the partial outputs:

    xq, xsf, gx = nvfp4.quantize(x)                                   # replicated tokens
    h_r  = nvfp4.dual_gemm(xq, xsf, W1_r, W3_r, alpha = gx·g1, gx·g3)  # (M, I/P) bf16
    hq_r = nvfp4.quantize(h_r, global_scale=s_h)                      # scales along I: shard-local
    y_r  = nvfp4.gemm(hq_r, W2_r, alpha = s_h·g2)                      # (M, H) fp32 partial
    y    = all_reduce(y_r)

NVFP4 block scales run along the reduction dimension in blocks of 16, so quantizing a shard
of h gives exactly the bytes of the whole h quantized and sliced, provided every shard holds
a multiple of 16 columns and every rank uses the same global scale s_h (a calibrated
constant, as in a served model; here amax(h)/(6·448) of one calibration pass). The sharded
result therefore equals the single-GPU result up to the fp32 summation order.

Checks the result against the float64 reference of the whole (unsharded) MLP
(nvfp4.reference) and times one MLP step eagerly, 1 GPU against P GPUs.

Run:  python examples/tp_gated_mlp_torch.py [--gpus 2]        (spawns one process per GPU)
      torchrun --nproc-per-node 2 examples/tp_gated_mlp_torch.py
      python examples/tp_gated_mlp_torch.py --cpu --tokens 16 --hidden 256 --intermediate 512
                                     (two CPU processes over gloo: the sharding without a GPU)
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

import nvfp4
from nvfp4 import reference as ref


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=256, help="M (default 256)")
    p.add_argument("--hidden", type=int, default=4096, help="H (default 4096)")
    p.add_argument("--intermediate", type=int, default=14336, help="I (default 14336)")
    p.add_argument("--gpus", type=int, default=None, help="processes to spawn (default: every visible GPU)")
    p.add_argument("--iters", type=int, default=50, help="timed steps (default 50)")
    p.add_argument("--tol", type=float, default=1e-3, help="max ‖y − ref‖/‖ref‖ (default 1e-3)")
    p.add_argument("--cpu", action="store_true",
                   help="CPU processes over gloo on the library's float64 CPU backend (checks the sharding "
                        "without a GPU; timings are not meaningful)")
    return p.parse_args(argv)


def quantized_weight(shape, seed, device):
    """A random bf16 weight (std 0.02) quantized on the GPU: (packed, linear scales, global scale)."""
    g = torch.Generator(device=device).manual_seed(seed)  # same bytes on every rank
    w = (torch.randn(shape, generator=g, device=device) * 0.02).to(torch.bfloat16)
    return nvfp4.quantize(w)


def mlp(x, w1, sf1, w3, sf3, w2, sf2, g1, g3, g2, s_h):
    """One gated-MLP step on this rank's shards (device scalars: no host synchronization)."""
    xq, xsf, gx = nvfp4.quantize(x)
    h = nvfp4.dual_gemm(xq, xsf, w1, sf1, w3, sf3, alpha1=gx * g1, alpha2=gx * g3, out_dtype="bfloat16")
    hq, hsf, _ = nvfp4.quantize(h, global_scale=s_h)
    return nvfp4.gemm(hq, hsf, w2, sf2, alpha=s_h * g2, out_dtype="float32")


def step_time_us(fn, iters, dev):
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for _ in range(3):
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync()
    return (time.perf_counter() - t0) / iters * 1e6


def graph_time_us(fn, iters, dev):
    """Per-step time of back-to-back replays of one CUDA graph of `fn` (None on the CPU)."""
    if dev.type != "cuda":
        return None
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return step_time_us(g.replay, iters, dev)


def reference_mlp(x, w1, sf1, w3, sf3, w2, sf2, g1, g3, g2, s_h):
    """float64 reference of the unsharded MLP (the tokens' quantization is the op's own)."""
    f32 = lambda t: np.float32(t.cpu().numpy().reshape(-1)[0])  # noqa: E731
    np_ = lambda t: t.cpu().numpy()  # noqa: E731
    xq, xsf, gx = nvfp4.quantize(x)
    h = ref.dual_gemm_ref(np_(xq), np_(xsf), np_(w1), np_(sf1), np_(w3), np_(sf3),
                          alpha1=f32(gx) * f32(g1), alpha2=f32(gx) * f32(g3))
    h_bf16 = torch.from_numpy(h).to(torch.bfloat16).float().numpy()  # the op's one rounding
    hq, hsf, _ = ref.quantize_ref(h_bf16, global_scale=f32(s_h))
    return ref.gemm_ref(hq, hsf, np_(w2), np_(sf2), alpha=f32(s_h) * f32(g2))


def rel_err(y, want):
    y = y.double().cpu().numpy()
    return float(np.linalg.norm(y - want) / np.linalg.norm(want))


def worker(rank, world, args):
    if args.cpu:
        dev = torch.device("cpu")
        dist.init_process_group("gloo", rank=rank, world_size=world)
    else:
        torch.cuda.set_device(rank)
        dev = torch.device("cuda", rank)
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    M, H, I = args.tokens, args.hidden, args.intermediate
    if I % (32 * world) or H % 32:
        raise SystemExit(f"--intermediate must be a multiple of {32 * world} and --hidden of 32")
    shard = I // world
    gen = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn((M, H), generator=gen, device=dev).to(torch.bfloat16)
    (w1, sf1, g1), (w3, sf3, g3), (w2, sf2, g2) = (quantized_weight(s, seed, dev) for s, seed in
                                                   [((I, H), 1), ((I, H), 3), ((H, I), 2)])
    # this rank's shards: rows of W1/W3, columns (K) of W2 and of its scales
    rows = slice(rank * shard, (rank + 1) * shard)
    w1_r, sf1_r, w3_r, sf3_r = w1[rows], sf1[rows], w3[rows], sf3[rows]
    w2_r = w2[:, rank * shard // 2:(rank + 1) * shard // 2].contiguous()
    sf2_r = sf2[:, rank * shard // 16:(rank + 1) * shard // 16].contiguous()

    # calibration: the global scale of h, from one unsharded pass, the same on every rank
    xq, xsf, gx = nvfp4.quantize(x)
    h = nvfp4.dual_gemm(xq, xsf, w1, sf1, w3, sf3, alpha1=gx * g1, alpha2=gx * g3, out_dtype="bfloat16")
    s_h = (h.float().abs().max() / (6 * 448)).reshape(1)
    dist.broadcast(s_h, src=0)

    full = (x, w1, sf1, w3, sf3, w2, sf2, g1, g3, g2, s_h)
    mine = (x, w1_r, sf1_r, w3_r, sf3_r, w2_r, sf2_r, g1, g3, g2, s_h)

    def tp_step():
        y = mlp(*mine)
        dist.all_reduce(y)
        return y

    y_tp = tp_step().clone()
    # times: [eager step, graph step, eager shard work alone, eager all-reduce alone]
    dist.barrier()
    t_one = [step_time_us(lambda: mlp(*full), args.iters, dev), graph_time_us(lambda: mlp(*full), args.iters, dev)]\
        if rank == 0 else [0.0, None]
    dist.barrier()
    y_part = mlp(*mine)
    t_tp = [step_time_us(tp_step, args.iters, dev), graph_time_us(tp_step, args.iters, dev),
            step_time_us(lambda: mlp(*mine), args.iters, dev), step_time_us(lambda: dist.all_reduce(y_part), args.iters, dev)]
    gathered = torch.tensor([-1.0 if t is None else t for t in t_tp], device=dev)
    dist.all_reduce(gathered, op=dist.ReduceOp.MAX)  # the slowest rank sets the pace
    t_tp = [None if t < 0 else t for t in gathered.tolist()]
    if rank == 0:
        want = reference_mlp(*full)
        e_tp, e_one = rel_err(y_tp, want), rel_err(mlp(*full), want)
        name = "CPU (gloo)" if args.cpu else torch.cuda.get_device_name(dev)
        print(f"gated MLP, M={M} H={H} I={I}: nvfp4 weights and activations, bf16 h, fp32 y; {name}")
        unit, units = ("process", "processes") if args.cpu else ("GPU", "GPUs")
        for label, t, n in [("eager", 0, 1), ("eager", 0, world), ("CUDA graph", 1, 1), ("CUDA graph", 1, world)]:
            us = (t_one if n == 1 else t_tp)[t]
            if us is None:
                continue
            speed = "" if n == 1 else f" ({M / us / n:.3f} per {unit}), {(t_one[t] or us) / us:.2f}x the 1-{unit} step"
            print(f"  {label:10s} {n} {units if n > 1 else unit}: {us:8.1f} µs/step  {M / us:7.3f} M tokens/s{speed}")
        print(f"  of the eager {world}-{unit} step: shard work {t_tp[2]:.1f} µs, all-reduce of "
              f"{M * H * 4 / 2**20:.1f} MiB fp32 {t_tp[3]:.1f} µs")
        print(f"  ‖y − ref‖/‖ref‖ against the float64 reference: 1 {unit} {e_one:.2e}, {world} {units} {e_tp:.2e}")
        ok = e_tp < args.tol and e_one < args.tol
        print("  matches the float64 reference" if ok else f"  MISMATCH (tolerance {args.tol:g})")
        sys.stdout.flush()
    else:
        ok = True
    flag = torch.tensor([0 if ok else 1], device=dev)
    dist.all_reduce(flag)
    dist.destroy_process_group()
    if flag.item():
        raise SystemExit(1)


def _spawned(rank, world, port, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    worker(rank, world, args)


def main(argv=None):
    args = parse_args(argv)
    if "RANK" in os.environ:  # torchrun
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args)
        return
    world = args.gpus or (2 if args.cpu else torch.cuda.device_count())
    if world < 1 or (not args.cpu and world > torch.cuda.device_count()):
        raise SystemExit(f"--gpus {world}: {torch.cuda.device_count()} CUDA devices visible")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.multiprocessing.spawn(_spawned, args=(world, port, args), nprocs=world, join=True)


if __name__ == "__main__":
    main()
