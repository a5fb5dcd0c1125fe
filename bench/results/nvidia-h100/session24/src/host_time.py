# eager per-call wall time of back-to-back decode-route calls (host-bound shapes), median of 7 runs of 3000 calls
import time, numpy as np, torch, nvfp4
from nvfp4 import reference as R
rng = np.random.default_rng(0)
for (M, N, K) in [(16, 4096, 1536), (16, 4096, 2048), (4, 7168, 7168)]:
    b, sfb = R.make_operand(N, K, None, "linear", rng); a, sfa = R.make_operand(M, K, None, "linear", rng)
    b, sfb, a, sfa = (torch.from_numpy(x).cuda() for x in (b, sfb, a, sfa))
    out = nvfp4.gemm(a, sfa, b, sfb); torch.cuda.synchronize()
    ts = []
    for r in range(7):
        torch.cuda.synchronize(); t0 = time.perf_counter()
        for _ in range(3000): nvfp4.gemm(a, sfa, b, sfb)
        torch.cuda.synchronize(); ts.append((time.perf_counter() - t0) / 3000 * 1e6)
    print(f"M={M} N={N} K={K}: eager wall per call {np.median(ts):.2f} us (min {min(ts):.2f})")
