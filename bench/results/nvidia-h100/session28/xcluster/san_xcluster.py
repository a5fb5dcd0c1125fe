"""Session 28: the cluster-decoded grouped kernel (kernel/grouped_gemm.cuh kClusterX) under compute-sanitizer:
clusters of 2 with tails and an empty group, and clusters of 8 (the gpu-mode case 4 shape, smaller N), both
layouts; each result checked against float64 here too (the tools run the same calls)."""
import numpy as np
import torch
import nvfp4
from nvfp4 import reference as ref

rng = np.random.default_rng(28)


def op(m, k):
    q = rng.integers(0, 256, (m, k // 2), dtype=np.uint8)
    s = rng.integers(0x30, 0x40, (m, k // 16), dtype=np.uint8)
    return q, s


worst = 0.0
for Ms, Ns, Ks in [((100, 0, 7, 130), (512, 64, 256, 256), (512, 96, 96, 1024)), ((128, 200), (1024, 1024), (1536, 1536))]:
    A = [op(m, k) for m, k in zip(Ms, Ks)]
    B = [op(n, k) for n, k in zip(Ns, Ks)]
    for layout in ("linear", "blocked"):
        sw = (lambda s: nvfp4.swizzle_scales(s)) if layout == "blocked" else (lambda s: s)
        ga = [torch.from_numpy(q).cuda() for q, _ in A]
        gsa = [sw(torch.from_numpy(s).cuda()) for _, s in A]
        gb = [torch.from_numpy(q).cuda() for q, _ in B]
        gsb = [sw(torch.from_numpy(s).cuda()) for _, s in B]
        outs = nvfp4.grouped_gemm(ga, gsa, gb, gsb, sf_layout=layout, out_dtype="float32", backend="sm90a")
        torch.cuda.synchronize()
        for (qa, sa), (qb, sb), o, m in zip(A, B, outs, Ms):
            if m == 0:
                continue
            r = ref.gemm_ref(qa, sa, qb, sb)  # linear scales (the same values as the swizzled ones)
            e = float(np.linalg.norm(o.cpu().numpy() - r) / max(np.linalg.norm(r), 1e-30))
            worst = max(worst, e)
print("san_xcluster: ran; worst fp32 relnorm vs float64", worst)
assert worst < 1e-5, worst
