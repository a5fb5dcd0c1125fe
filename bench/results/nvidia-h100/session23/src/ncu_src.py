# Session 24 prep: one decode-route call each on 7168^2 M = 4 and 4096x14336 M = 4 (linear scales), for ncu.
import torch, nvfp4
from nvfp4 import reference as R
import numpy as np
rng = np.random.default_rng(0)
for (N, K) in [(7168, 7168), (4096, 14336)]:
    b, sfb = R.make_operand(N, K, None, "linear", rng)
    a, sfa = R.make_operand(4, K, None, "linear", rng)
    b, sfb, a, sfa = (torch.from_numpy(x).cuda() for x in (b, sfb, a, sfa))
    nvfp4.gemm(a, sfa, b, sfb)
torch.cuda.synchronize()
print("ok")
