# Session 24 scratch: per-CTA phase timeline of the dense decode kernel (dbg.patch: globaltimer / clock64 per CTA).
import ctypes, sys
import numpy as np, torch, nvfp4
from nvfp4 import reference as R
rng = np.random.default_rng(0)
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
lib = None
def getlib():
    global lib
    if lib: return lib
    for line in open("/proc/self/maps"):
        p = line.split()[-1]
        if "nvfp4" in p and p.endswith(".so") or ".so." in p and "nvfp4" in p:
            try:
                l = ctypes.CDLL(p); l.nvfp4_dbg_read; lib = l; return l
            except (OSError, AttributeError): pass
    raise SystemExit("no lib")
shapes = [(4, 7168, 7168), (16, 7168, 7168), (32, 7168, 7168), (4, 4096, 14336), (32, 4096, 14336), (4, 14336, 4096), (32, 14336, 4096)]
for (M, N, K) in shapes:
    b, sfb = R.make_operand(N, K, None, "linear", rng)
    a, sfa = R.make_operand(M, K, None, "linear", rng)
    b, sfb, a, sfa = (torch.from_numpy(x).cuda() for x in (b, sfb, a, sfa))
    for _ in range(3): nvfp4.gemm(a, sfa, b, sfb)
    torch.cuda.synchronize()
    L = getlib()
    res = []
    for rep in range(5):
        L.nvfp4_dbg_clear(); flush.zero_(); torch.cuda.synchronize()
        nvfp4.gemm(a, sfa, b, sfb); torch.cuda.synchronize()
        buf = np.zeros(8192 * 8, dtype=np.uint64)
        assert L.nvfp4_dbg_read(buf.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(buf.nbytes)) == 0
        d = buf.reshape(8192, 8).astype(np.int64)
        d = d[d[:, 0] != 0]
        res.append(d)
    d = res[2]
    n = len(d)
    g0 = d[:, 0] - d[:, 0].min()
    has_end = (d[:, 6] != 0).all()
    ghz = np.median((d[:, 5] - d[:, 1]) / np.maximum(d[:, 6] - d[:, 0], 1)) if has_end else 1.7
    ns = lambda c: c / ghz
    pro = ns(d[:, 2] - d[:, 1]); stream = ns(d[:, 3] - d[:, 2]); bar = ns(d[:, 4] - d[:, 3]); red = ns(d[:, 5] - d[:, 4])
    spans = [((x[:, 6].max() - x[:, 0].min()) / 1e3) if (x[:, 6] != 0).all() else float('nan') for x in res]
    q = lambda v: f"{np.percentile(v,5)/1e3:5.2f}/{np.median(v)/1e3:5.2f}/{v.max()/1e3:5.2f}"
    print(f"M={M} N={N} K={K}: {n} CTAs, clock {ghz:.2f} GHz, span us {' '.join(f'{s:.2f}' for s in spans)}; "
          f"start skew p50/max {np.median(g0)/1e3:.2f}/{g0.max()/1e3:.2f} us")
    print(f"   phases us (p5/p50/max): prologue {q(pro)}  stream {q(stream)}  barrier1 {q(bar)}  reduce+barrier2 {q(red)}")
    end = (d[:, 0] - d[:, 0].min()) / 1e3 + ns(d[:, 5] - d[:, 1]) / 1e3
    st_end = (d[:, 0] - d[:, 0].min()) / 1e3 + ns(d[:, 3] - d[:, 1]) / 1e3
    print(f"   stream end (from first start) p5/p50/max {np.percentile(st_end,5):.2f}/{np.median(st_end):.2f}/{st_end.max():.2f}; CTA end p50/max {np.median(end):.2f}/{end.max():.2f}")
    # per SM: the two CTAs' stream ends
    sm = d[:, 7]
    per = {}
    for i in range(n): per.setdefault(int(sm[i]), []).append(st_end[i])
    smx = np.array([max(v) for v in per.values()])
    print(f"   per-SM last stream end p5/p50/max {np.percentile(smx,5):.2f}/{np.median(smx):.2f}/{smx.max():.2f} over {len(per)} SMs")
