# Session 22: GPU timeline (torch profiler / CUPTI) of issue 21's last case (128+384 x 4096 x 1536) under graph
# replay: each kernel's start relative to the call's first kernel, its duration, and gaps; cuBLAS loop beside.
import torch, nvfp4, sys
from torch.profiler import profile, ProfilerActivity
def ops(M, N, K, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    qa = torch.randint(0, 256, (M, K // 2), device="cuda", dtype=torch.uint8, generator=g)
    sa = torch.randint(0x30, 0x40, (M, K // 16), device="cuda", dtype=torch.uint8, generator=g)
    qb = torch.randint(0, 256, (N, K // 2), device="cuda", dtype=torch.uint8, generator=g)
    sb = torch.randint(0x30, 0x40, (N, K // 16), device="cuda", dtype=torch.uint8, generator=g)
    return qa, sa, qb, sb
def timeline(name, fn, calls=10):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        fn(); torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=s, capture_error_mode="thread_local"):
            for _ in range(calls): fn()
    for _ in range(3): g.replay()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record(); [g.replay() for _ in range(20)]; e1.record(); torch.cuda.synchronize()
    per = e0.elapsed_time(e1) * 1000 / 20 / calls
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        g.replay(); torch.cuda.synchronize()
    ev = sorted([e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "emcpy" not in e.name],
                key=lambda e: e.time_range.start)
    t0 = ev[0].time_range.start
    print(f"{name}: graph {per:.2f} us per call; {len(ev)} kernels")
    prev_end = None
    for e in ev[-3 * (len(ev) // calls):]:
        st, en = e.time_range.start - t0, e.time_range.end - t0
        gap = "" if prev_end is None else f" gap {st - prev_end:+6.2f}"
        print(f"   {e.name[:60]:60s} start {st:8.2f} dur {en - st:6.2f}{gap}")
        prev_end = en
import torch.nn.functional as F
Ms, N, K = (128, 384), 4096, 1536
A, SA, B, SB = [], [], [], []
for i, m in enumerate(Ms):
    qa, sa, qb, sb = ops(m, N, K, i); A.append(qa); SA.append(sa); B.append(qb); SB.append(sb)
timeline("nvfp4 grouped 128+384x4096x1536", lambda: nvfp4.grouped_gemm(A, SA, B, SB, out_dtype="float16"))
ab = [torch.randn(m, K, device="cuda", dtype=torch.bfloat16) for m in Ms]
bb = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) for m in Ms]
timeline("cuBLAS loop", lambda: [a @ b.T for a, b in zip(ab, bb)])
for (M, N, K) in [(256, 3072, 4096), (512, 3072, 7168)]:
    qa, sa, qb1, sb1 = ops(M, N, K, 1); _, _, qb2, sb2 = ops(M, N, K, 2)
    timeline(f"nvfp4 dual {M}x{N}x{K}", lambda: nvfp4.dual_gemm(qa, sa, qb1, sb1, qb2, sb2, out_dtype="float16"))
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16); w = torch.randn(2 * N, K, device="cuda", dtype=torch.bfloat16)
    def peer():
        h = a @ w.T
        return F.silu(h[:, :N]) * h[:, N:]
    timeline(f"bf16 dual peer {M}x{N}x{K}", peer)
for (M, N, K) in [(128, 4096, 7168), (512, 3072, 4096)]:
    qa, sa, qb, sb = ops(M, N, K, 3)
    timeline(f"nvfp4 gemm {M}x{N}x{K}", lambda: nvfp4.gemm(qa, sa, qb, sb, out_dtype="float16"))
