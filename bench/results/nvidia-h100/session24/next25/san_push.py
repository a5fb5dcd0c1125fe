# PREPARED IN SESSION 24, NOT RUN. The K split's push reduction (push_reduce.patch) under compute-sanitizer:
# dense decode calls whose plans split K over clusters of 2, 4 and 7 (fine and full stages, 1..4 token groups,
# both layouts) and one dual call, each checked against the float64 reference on the first 256 rows / columns.
import numpy as np, torch, nvfp4
from nvfp4 import reference as ref

def ops(M, N, K, g):
    qa = torch.randint(0, 256, (M, K // 2), device="cuda", dtype=torch.uint8, generator=g)
    sa = torch.randint(0x30, 0x40, (M, K // 16), device="cuda", dtype=torch.uint8, generator=g)
    qb = torch.randint(0, 256, (N, K // 2), device="cuda", dtype=torch.uint8, generator=g)
    sb = torch.randint(0x30, 0x40, (N, K // 16), device="cuda", dtype=torch.uint8, generator=g)
    return qa, sa, qb, sb

def check(name, c, r):
    err = np.abs(c - r) / (1e-3 + 1e-3 * np.abs(r))
    print(f"{name}: {nvfp4.last_backend()} max err / tol {err.max():.3f}", "ok" if err.max() <= 1 else "FAIL")

for (M, N, K, lay) in [(4, 7168, 7168, "linear"), (4, 4096, 14336, "linear"), (32, 4096, 14336, "blocked"),
                       (17, 14336, 4096, "linear"), (3, 4100, 4000, "blocked"), (25, 7200, 1312, "blocked")]:
    g = torch.Generator(device="cuda").manual_seed(M + N + K)
    qa, sa, qb, sb = ops(M, N, K, g)
    if lay == "blocked":
        c = nvfp4.gemm(qa, torch.from_numpy(ref.to_blocked(sa.cpu().numpy())).cuda(), qb,
                       torch.from_numpy(ref.to_blocked(sb.cpu().numpy())).cuda(), sf_layout="blocked", out_dtype="float32")
    else:
        c = nvfp4.gemm(qa, sa, qb, sb, out_dtype="float32")
    torch.cuda.synchronize()
    r = ref.gemm_ref(qa.cpu().numpy(), sa.cpu().numpy(), qb[:256].cpu().numpy(), sb[:256].cpu().numpy())
    check(f"gemm {M}x{N}x{K} {lay}", c[:, :256].cpu().numpy(), r)

g = torch.Generator(device="cuda").manual_seed(7)
M, N, K = 4, 4096, 7168
qa, sa, qb1, sb1 = ops(M, N, K, g)
_, _, qb2, sb2 = ops(M, N, K, g)
c = nvfp4.dual_gemm(qa, sa, qb1, sb1, qb2, sb2, out_dtype="float32")
torch.cuda.synchronize()
r = ref.dual_gemm_ref(qa.cpu().numpy(), sa.cpu().numpy(), qb1[:256].cpu().numpy(), sb1[:256].cpu().numpy(),
                      qb2[:256].cpu().numpy(), sb2[:256].cpu().numpy())
check(f"dual {M}x{N}x{K}", c[:, :256].cpu().numpy(), r)
