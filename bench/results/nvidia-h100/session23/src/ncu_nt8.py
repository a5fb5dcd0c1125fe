# Session 23: decode-route calls at 24 and 32 tokens on 4096x14336 and 7168^2 (linear scales), one call each;
# ncu profiles each (ncu replays each kernel with the caches flushed).
import sys, torch, nvfp4
from nvfp4 import reference as R
import numpy as np
rng = np.random.default_rng(0)
for (N, K) in [(4096, 14336), (7168, 7168)]:
    b, sfb = R.make_operand(N, K, None, "linear", rng)
    b, sfb = torch.from_numpy(b).cuda(), torch.from_numpy(sfb).cuda()
    for M in (24, 32):
        a, sfa = R.make_operand(M, K, None, "linear", rng)
        a, sfa = torch.from_numpy(a).cuda(), torch.from_numpy(sfa).cuda()
        for _ in range(1):
            nvfp4.gemm(a, sfa, b, sfb)
torch.cuda.synchronize()
print("ok")
