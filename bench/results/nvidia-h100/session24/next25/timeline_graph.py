# PREPARED IN SESSION 24, NOT RUN. Per-CTA phase timeline of the dense decode kernel (dbg.patch: globaltimer /
# clock64 per CTA into a __device__ table, read through nvfp4_dbg_read) under the bench's conditions: one CUDA
# graph of 16 calls on 8 rotated weight sets (232+ MB: no L2 reuse between calls), replayed; the table holds the
# last call's CTAs (each launch overwrites them). Session 24's version timed one cold eager launch after a 256 MB
# memset (results/nvidia-h100/session24/timeline*.txt); this one shows the steady state of graph replay, PDL included.
import ctypes
import numpy as np, torch, nvfp4
from nvfp4 import reference as R
rng = np.random.default_rng(0)
lib = None
def getlib():
    global lib
    if lib is None:
        for line in open("/proc/self/maps"):
            p = line.split()[-1]
            if "nvfp4" in p and (p.endswith(".so") or ".so." in p):
                try:
                    l = ctypes.CDLL(p); l.nvfp4_dbg_read; lib = l; break
                except (OSError, AttributeError):
                    pass
    return lib
shapes = [(4, 7168, 7168), (16, 7168, 7168), (32, 7168, 7168), (4, 4096, 14336), (32, 4096, 14336), (4, 14336, 4096)]
for (M, N, K) in shapes:
    sets = []
    for r in range(8):
        b, sfb = R.make_operand(N, K, None, "linear", rng)
        a, sfa = R.make_operand(M, K, None, "linear", rng)
        sets.append(tuple(torch.from_numpy(x).cuda() for x in (a, sfa, b, sfb)))
    for s in sets: nvfp4.gemm(*s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    st = torch.cuda.Stream()
    with torch.cuda.stream(st):
        with torch.cuda.graph(g, stream=st, capture_error_mode="thread_local"):
            for i in range(16): nvfp4.gemm(*sets[i % 8])
    L = getlib()
    for rep in range(3): g.replay()
    torch.cuda.synchronize()
    t0 = torch.cuda.Event(enable_timing=True); t1 = torch.cuda.Event(enable_timing=True)
    t0.record(); g.replay(); t1.record(); torch.cuda.synchronize()
    per_call = t0.elapsed_time(t1) * 1e3 / 16
    buf = np.zeros(8192 * 8, dtype=np.uint64)
    assert L.nvfp4_dbg_read(buf.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(buf.nbytes)) == 0
    d = buf.reshape(8192, 8).astype(np.int64)
    d = d[d[:, 0] != 0]
    ghz = np.median((d[:, 5] - d[:, 1]) / np.maximum(d[:, 6] - d[:, 0], 1))
    ns = lambda c: c / ghz
    q = lambda v: f"{np.percentile(v,5)/1e3:5.2f}/{np.median(v)/1e3:5.2f}/{v.max()/1e3:5.2f}"
    start = (d[:, 0] - d[:, 0].min()) / 1e3
    st_end = start + ns(d[:, 3] - d[:, 1]) / 1e3
    end = start + ns(d[:, 5] - d[:, 1]) / 1e3
    print(f"M={M} N={N} K={K}: graph {per_call:.2f} us per call; {len(d)} CTAs; clock {ghz:.2f} GHz; CTA start spread "
          f"p50/max {np.median(start):.2f}/{start.max():.2f} us; span {(d[:, 6].max() - d[:, 0].min())/1e3:.2f} us")
    print(f"   phases us (p5/p50/max): prologue {q(ns(d[:,2]-d[:,1]))}  stream {q(ns(d[:,3]-d[:,2]))}  barrier1 "
          f"{q(ns(d[:,4]-d[:,3]))}  reduce+barrier2 {q(ns(d[:,5]-d[:,4]))}")
    print(f"   stream end p5/p50/max {np.percentile(st_end,5):.2f}/{np.median(st_end):.2f}/{st_end.max():.2f}; CTA end "
          f"p50/max {np.median(end):.2f}/{end.max():.2f} (from the first CTA's start)")
    del sets, g
    torch.cuda.empty_cache()
