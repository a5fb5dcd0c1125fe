"""The format problems of `python -m nvfp4 bench` and bench/run.py: quantize, dequantize and the
scale-layout swizzle, each timed against a device-to-device copy of its bytes (the problem classes'
interface and the matmul problems: _bench_problems.py, which parses their specs too).
"""

from __future__ import annotations

import math

from ._bench_problems import Problem, _k, _positive, fp4_row_bytes


class Quantize(Problem):
    """x (M, K) bf16 -> packed fp4 + linear e4m3 scales + fp32 global scale. Variants:
    "gs" (a calibrated global scale is given: one pass) and "amax" (computed: amax pass
    first). Timed through the extension with preallocated outputs (the Python quantize()
    allocates its three outputs per call). Checked bit-exactly against
    nvfp4.reference.quantize_ref on the first CHECK_ROWS rows."""
    op = "quantize"
    fp16_out = False
    nv_variants = ("gs", "amax")
    CHECK_ROWS = 256

    def __init__(self, M, K):
        self.M, self.K = _positive("M", M), _k(K)
        self.nv_bytes = self.M * (2 * self.K + fp4_row_bytes(self.K)) + 4

    spec = property(lambda self: f"{self.op}:{self.M}x{self.K}")
    label = property(lambda self: f"M={self.M} K={self.K}")

    def dims(self):
        return {"M": self.M, "K": self.K}

    def make_set(self, h):
        t = h.torch
        x = t.randn(self.M, self.K, dtype=t.bfloat16, device=h.device)
        # float32 division, correctly rounded, as the library does (a CUDA tensor divided by a
        # Python scalar is multiplied by its reciprocal: one ulp off for some amax, which made
        # the reference quantize a few blocks differently; seen on an H200)
        import numpy as np

        amax = np.float32(float(x.abs().max()))
        return {"x": x, "gs": float(amax / np.float32(2688.0))}

    def reference(self, h, s):
        from .reference import quantize_ref

        rows = min(self.M, self.CHECK_ROWS)
        x32 = s["x"][:rows].float().cpu().numpy()
        q, sf, _ = quantize_ref(x32, global_scale=s["gs"])
        return {"q": q, "sf": sf, "gs": s["gs"], "rows": rows}

    def nv_prepare(self, h, s, variant):
        t = h.torch
        return {"s": s, "q": t.empty(self.M, self.K // 2, dtype=t.uint8, device=h.device),
                "sf": t.empty(self.M, self.K // 16, dtype=t.uint8, device=h.device),
                "gs": t.full((1,), s["gs"] if variant == "gs" else 1.0, dtype=t.float32, device=h.device)}

    def nv_poison(self, st):
        st["q"].fill_(0xAA)
        st["sf"].fill_(0x7F)
        if st.get("variant") == "amax":
            st["gs"].fill_(float("nan"))

    def nv_launch(self, h, st, backend, variant):
        from . import _nvfp4_ext

        _nvfp4_ext.quantize(st["s"]["x"], st["q"], st["sf"], st["gs"], variant == "amax", "linear",
                            h.stream_handle(), backend, None)

    def nv_result(self, st):
        return st

    def check(self, h, result, ref, gpumode):
        import numpy as np

        rows = ref["rows"]
        q = result["q"][:rows].cpu().numpy()
        sf = result["sf"][:rows].cpu().numpy()
        gs = float(result["gs"][0])
        bad = int(np.count_nonzero(q != ref["q"])) + int(np.count_nonzero(sf != ref["sf"]))
        frac = bad / (q.size + sf.size)
        gs_ok = math.isclose(gs, ref["gs"], rel_tol=2 ** -23)
        return (bad == 0 and gs_ok), (frac if gs_ok else max(frac, abs(gs / ref["gs"] - 1)))


class Dequantize(Problem):
    """packed fp4 + linear scales (M, K) -> bf16 (M, K); exact, so checked for equality."""
    op = "dequantize"
    fp16_out = False

    def __init__(self, M, K):
        self.M, self.K = _positive("M", M), _k(K)
        self.nv_bytes = self.M * (fp4_row_bytes(self.K) + 2 * self.K)

    spec = property(lambda self: f"{self.op}:{self.M}x{self.K}")
    label = property(lambda self: f"M={self.M} K={self.K}")

    def dims(self):
        return {"M": self.M, "K": self.K}

    def make_set(self, h):
        return {"q": h.fp4(self.M, self.K // 2), "sf": h.scales(self.M, self.K // 16)}

    def reference(self, h, s):
        return h.decode(s["q"], s["sf"], h.torch.float32)   # exact, half the memory of float64

    def nv_prepare(self, h, s, variant):
        return {"s": s, "out": h.torch.empty(self.M, self.K, dtype=h.torch.bfloat16, device=h.device)}

    def nv_launch(self, h, st, backend, variant):
        import nvfp4

        nvfp4.dequantize(st["s"]["q"], st["s"]["sf"], dtype="bfloat16", out=st["out"], backend=backend)

    def check(self, h, result, ref, gpumode):
        diff = (result.float() - ref).abs()
        worst = float(diff.max()) if diff.numel() else 0.0
        ok = bool(h.torch.isfinite(result).all()) and worst == 0.0
        return ok, float(diff.double().norm() / ref.double().norm().clamp_min(1e-30))


class Swizzle(Problem):
    """Scale layout change for an M x K operand: linear (M, K/16) -> blocked ("swizzle"),
    or back ("unswizzle"). A byte permutation, checked exactly against nvfp4.reference."""
    fp16_out = False

    def __init__(self, M, K, inverse: bool = False):
        from .reference import blocked_bytes

        self.M, self.K, self.inverse = _positive("M", M), _k(K), bool(inverse)
        self.op = "unswizzle" if inverse else "swizzle"
        self.blocked = blocked_bytes(self.M, self.K)
        self.nv_bytes = self.M * (self.K // 16) + self.blocked
        self._first = None

    spec = property(lambda self: f"{self.op}:{self.M}x{self.K}")
    label = property(lambda self: f"M={self.M} K={self.K}")

    def dims(self):
        return {"M": self.M, "K": self.K}

    def make_set(self, h):
        """Set 0 is fresh random scales (checked); the other rotation sets are device
        copies of it: they only need other addresses, and building the blocked layout
        on the host for each would cost seconds at 16k x 16k."""
        from .reference import to_blocked

        if self._first is not None:
            return {k: v.clone() for k, v in self._first.items()}
        sf = h.scales(self.M, self.K // 16)
        s = {"linear": sf}
        if self.inverse:
            s["blocked"] = h.torch.from_numpy(to_blocked(sf.cpu().numpy())).to(h.device)
        self._first = s
        return s

    def begin_case(self):
        self._first = None

    def reference(self, h, s):
        from .reference import to_blocked

        return s["linear"].cpu().numpy() if self.inverse else to_blocked(s["linear"].cpu().numpy())

    def nv_prepare(self, h, s, variant):
        t = h.torch
        shape = (self.M, self.K // 16) if self.inverse else (self.blocked,)
        return {"s": s, "out": t.empty(shape, dtype=t.uint8, device=h.device)}

    def nv_poison(self, st):
        st["out"].fill_(0x7F)

    def nv_launch(self, h, st, backend, variant):
        import nvfp4

        s = st["s"]
        if self.inverse:
            nvfp4.unswizzle_scales(s["blocked"], self.M, self.K, out=st["out"], backend=backend)
        else:
            nvfp4.swizzle_scales(s["linear"], out=st["out"], backend=backend)

    def check(self, h, result, ref, gpumode):
        import numpy as np

        got = result.cpu().numpy()
        bad = int(np.count_nonzero(got != ref))
        return bad == 0, bad / max(1, ref.size)
