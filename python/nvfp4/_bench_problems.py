"""The benchmark problems of `python -m nvfp4 bench` and bench/run.py: the gpu-mode shapes,
the harness that makes random NVFP4 operands and decodes them in float64, and one class
per matmul op (its work in flops and bytes, random input sets, the float64 reference, the
nvfp4 call and its check; the format ops' classes: _bench_formats.py). Parsing of shape specs
("gemm:128x7168x16384") too.
"""

from __future__ import annotations

import re

# gpu-mode benchmark shapes (docs/design.md, "Delivered speed"): gemv (M, K, L); gemm/dual (M, N, K);
# grouped ([M_g], N, K). "packed" runs grouped_gemm_packed on the grouped shapes.
SHAPES = {
    "gemv": ["7168x16384x1", "4096x7168x8", "7168x2048x4"],
    "gemm": ["128x7168x16384", "128x4096x7168", "128x7168x2048"],
    "dual": ["256x4096x7168", "512x4096x7168", "256x3072x4096", "512x3072x7168"],
    "grouped": ["80+176+128+72+64+248+96+160x4096x7168", "40+76+168+72+164+148+196+160x7168x2048",
                "192+320x3072x4096", "128+384x4096x1536"],
}
SHAPES["packed"] = list(SHAPES["grouped"])
MAIN_PROBLEMS = ("gemv", "gemm", "dual", "grouped")
ALIASES = {"dual_gemm": "dual", "grouped_gemm": "grouped", "grouped_gemm_packed": "packed", "moe": "packed"}

SF_LO, SF_HI = 0x18, 0x28   # e4m3 bytes of 1/16 and 1/4 (inclusive): scales of the random operands
GPUMODE_RTOL = GPUMODE_ATOL = 1e-3


# ---------------------------------------------------------------------------------------
# Harness: torch, device, random NVFP4 data, float64 decode
# ---------------------------------------------------------------------------------------

class Harness:
    def __init__(self, torch, device):
        from .reference import E2M1_VALUES, E4M3_VALUES

        self.torch = torch
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        e2m1 = torch.tensor(E2M1_VALUES, dtype=torch.float64)
        byte = torch.arange(256)
        # one row per packed byte: (value of the low nibble, value of the high nibble)
        self._pairs64 = torch.stack((e2m1[byte & 0xF], e2m1[byte >> 4]), dim=-1).to(self.device)
        self._e4m3_64 = torch.tensor(E4M3_VALUES, dtype=torch.float64).to(self.device)
        self._tables = {}

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def stream_handle(self) -> int:
        return int(self.torch.cuda.current_stream().cuda_stream) if self.cuda else 0

    def fp4(self, *shape):
        """Uniformly random packed e2m1 bytes (every code, ±0 included)."""
        return self.torch.randint(0, 256, shape, dtype=self.torch.uint8, device=self.device)

    def scales(self, *shape):
        return self.torch.randint(SF_LO, SF_HI + 1, shape, dtype=self.torch.uint8, device=self.device)

    def decode(self, q, sf, dtype=None):
        """Packed (..., K/2) + linear scales (..., K/16) -> values (..., K) in `dtype`
        (float64 by default). Exact in float32 and bf16 too: e2m1 has 2 significant bits,
        e4m3 4, so every product has at most 6 (bf16 holds 8); the scales used here are
        normal numbers, far from bf16's range limits."""
        dtype = dtype or self.torch.float64
        if dtype not in self._tables:
            self._tables[dtype] = (self._pairs64.to(dtype), self._e4m3_64.to(dtype))
        pairs, e4m3 = self._tables[dtype]
        v = pairs[q.long()].flatten(-2)
        return v * e4m3[sf.long()].repeat_interleave(16, dim=-1)

    def empty_cache(self) -> None:
        if self.cuda:
            self.torch.cuda.empty_cache()


def compare(h, result, ref, gpumode: bool):
    """(ok, rel. error): ‖out-ref‖/‖ref‖ in float64; ok (gpumode only): every element
    finite and |out-ref| <= atol + rtol·|ref|, else None (peers are not held to it)."""
    t = h.torch
    r = result.double()
    diff = r - ref
    den = float(ref.norm())
    rel = float(diff.norm()) / den if den > 0 else float(diff.norm())
    if not gpumode:
        return None, rel
    ok = bool(t.isfinite(r).all()) and bool((diff.abs() <= GPUMODE_ATOL + GPUMODE_RTOL * ref.abs()).all())
    return ok, rel


# ---------------------------------------------------------------------------------------
# Problems: shape, work, random inputs, reference, and the nvfp4 call
# ---------------------------------------------------------------------------------------

def _positive(name, value):
    v = int(value)
    if v < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return v


def _k(value):
    k = _positive("K", value)
    if k % 32:
        raise ValueError(f"K must be a multiple of 32, got {k}")
    return k


def fp4_row_bytes(k: int) -> int:
    """Bytes of one row of K NVFP4 values with their linear e4m3 scales."""
    return k // 2 + k // 16


class Problem:
    op = ""
    fp16_out = True        # outputs checked with gpu-mode's fp16 tolerance

    @property
    def spec(self) -> str:
        raise NotImplementedError

    @property
    def label(self) -> str:
        raise NotImplementedError

    flops = 0
    nv_bytes = 0            # each input read once + output written once, NVFP4 operands

    def dims(self) -> dict:
        raise NotImplementedError

    def begin_case(self) -> None:
        """Called before a case builds its input sets."""

    def make_set(self, h) -> dict:
        raise NotImplementedError

    def reference(self, h, s):
        raise NotImplementedError

    def check(self, h, result, ref, gpumode: bool):
        return compare(h, result, ref, gpumode)

    # nvfp4: prepare per-set state (outputs), launch, result for check()
    nv_variants = ("",)

    def nv_prepare(self, h, s, variant: str):
        raise NotImplementedError

    def nv_launch(self, h, st, backend: str, variant: str) -> None:
        raise NotImplementedError

    def nv_result(self, st):
        return st["out"]

    def nv_poison(self, st) -> None:
        st["out"].fill_(float("nan"))

    def nv_graphable(self, variant: str) -> bool:
        return True


class Gemv(Problem):
    op = "gemv"

    def __init__(self, M, K, L=1):
        self.M, self.K, self.L = _positive("M", M), _k(K), _positive("L", L)
        self.flops = 2 * self.L * self.M * self.K
        self.nv_bytes = self.L * ((self.M + 1) * fp4_row_bytes(self.K) + 2 * self.M)

    spec = property(lambda self: f"gemv:{self.M}x{self.K}x{self.L}")
    label = property(lambda self: f"M={self.M} K={self.K} L={self.L}")

    def dims(self):
        return {"M": self.M, "K": self.K, "L": self.L}

    def make_set(self, h):
        M, K, L = self.M, self.K, self.L
        return {"a": h.fp4(L, M, K // 2), "sfa": h.scales(L, M, K // 16),
                "b": h.fp4(L, K // 2), "sfb": h.scales(L, K // 16)}

    def reference(self, h, s):
        return h.torch.einsum("lmk,lk->lm", h.decode(s["a"], s["sfa"]), h.decode(s["b"], s["sfb"]))

    # "blocked": the scales in the blocked layout (the gpu-mode kernels' permuted tensors),
    # swizzled once per input set outside the timing; "gpumode": nvfp4.gpumode's adapter
    # on the gpu-mode input tuple (views of the same set: (rows, K/2, L) operands)
    nv_variants = ("", "blocked", "gpumode")

    def nv_prepare(self, h, s, variant):
        st = {"s": s, "out": h.torch.empty(self.L, self.M, dtype=h.torch.float16, device=h.device)}
        if variant == "gpumode":
            lm = lambda t: t.permute(1, 2, 0)            # (L, M, X) -> (M, X, L)
            vec = lambda t: t.permute(1, 0).unsqueeze(0)  # (L, X) -> (1, X, L)
            st["data"] = (lm(s["a"]), vec(s["b"]), lm(s["sfa"]), vec(s["sfb"]), None, None,
                          st["out"].permute(1, 0).unsqueeze(1))
        if variant == "blocked":
            import nvfp4

            st["sfa"] = nvfp4.swizzle_scales(s["sfa"])
            st["sfb"] = nvfp4.swizzle_scales(s["sfb"].unsqueeze(1))  # (L, 1, K/16): one row per batch
        return st

    def nv_launch(self, h, st, backend, variant):
        import nvfp4

        s = st["s"]
        if variant == "gpumode":
            nvfp4.gpumode.gemv(st["data"], backend=backend)
        elif variant == "blocked":
            nvfp4.gemv(s["a"], st["sfa"], s["b"], st["sfb"], sf_layout="blocked", out=st["out"], backend=backend)
        else:
            nvfp4.gemv(s["a"], s["sfa"], s["b"], s["sfb"], out=st["out"], backend=backend)


class Gemm(Problem):
    op = "gemm"
    n_b = 1
    gpumode_keys = ("a", "b", "sfa", "sfb")  # the gpu-mode tuple's operand order

    def __init__(self, M, N, K):
        self.M, self.N, self.K = _positive("M", M), _positive("N", N), _k(K)
        self.flops = 2 * self.n_b * self.M * self.N * self.K
        self.nv_bytes = (self.M + self.n_b * self.N) * fp4_row_bytes(self.K) + 2 * self.M * self.N

    spec = property(lambda self: f"{self.op}:{self.M}x{self.N}x{self.K}")
    label = property(lambda self: f"M={self.M} N={self.N} K={self.K}")

    def dims(self):
        return {"M": self.M, "N": self.N, "K": self.K}

    def make_set(self, h):
        M, N, K = self.M, self.N, self.K
        return {"a": h.fp4(M, K // 2), "sfa": h.scales(M, K // 16), "b": h.fp4(N, K // 2), "sfb": h.scales(N, K // 16)}

    def reference(self, h, s):
        return h.decode(s["a"], s["sfa"]) @ h.decode(s["b"], s["sfb"]).T

    nv_variants = ("", "blocked", "gpumode")  # as Gemv

    def nv_prepare(self, h, s, variant):
        st = {"s": s, "out": h.torch.empty(self.M, self.N, dtype=h.torch.float16, device=h.device)}
        if variant == "gpumode":
            u = lambda t: t.unsqueeze(-1)  # (rows, X) -> (rows, X, 1)
            ops = [u(s[k]) for k in self.gpumode_keys]
            n = len(ops) // 2
            st["data"] = (*ops[:n], *ops[n:], *([None] * n), u(st["out"]))
        if variant == "blocked":
            import nvfp4

            st["sfa"] = nvfp4.swizzle_scales(s["sfa"])
            st["sfb"] = nvfp4.swizzle_scales(s["sfb"])
        return st

    def nv_launch(self, h, st, backend, variant):
        import nvfp4

        s = st["s"]
        if variant == "gpumode":
            nvfp4.gpumode.gemm(st["data"], backend=backend)
        elif variant == "blocked":
            nvfp4.gemm(s["a"], st["sfa"], s["b"], st["sfb"], sf_layout="blocked", out=st["out"], backend=backend)
        else:
            nvfp4.gemm(s["a"], s["sfa"], s["b"], s["sfb"], out=st["out"], backend=backend)


class Dual(Gemm):
    """C = silu(A·B1ᵀ) * (A·B2ᵀ)."""
    op = "dual"
    n_b = 2
    nv_variants = ("", "gpumode")
    gpumode_keys = ("a", "b1", "b2", "sfa", "sfb1", "sfb2")

    def make_set(self, h):
        M, N, K = self.M, self.N, self.K
        return {"a": h.fp4(M, K // 2), "sfa": h.scales(M, K // 16),
                "b1": h.fp4(N, K // 2), "sfb1": h.scales(N, K // 16),
                "b2": h.fp4(N, K // 2), "sfb2": h.scales(N, K // 16)}

    def reference(self, h, s):
        a = h.decode(s["a"], s["sfa"])
        h1 = a @ h.decode(s["b1"], s["sfb1"]).T
        h2 = a @ h.decode(s["b2"], s["sfb2"]).T
        return h1 * h.torch.sigmoid(h1) * h2

    def nv_launch(self, h, st, backend, variant):
        import nvfp4

        s = st["s"]
        if variant == "gpumode":
            nvfp4.gpumode.dual_gemm(st["data"], backend=backend)
            return
        nvfp4.dual_gemm(s["a"], s["sfa"], s["b1"], s["sfb1"], s["b2"], s["sfb2"], activation="silu",
                        out=st["out"], backend=backend)


class Grouped(Problem):
    """G GEMMs sharing N and K: A rows offsets[g]:offsets[g+1] times expert B[g].
    Stored packed (a (ΣM, K/2), b (G, N, K/2)): grouped_gemm gets row views of it,
    grouped_gemm_packed (op "packed", or the nvfp4 variant "packed" of a "grouped"
    problem) the arrays and the device offsets."""
    op = "grouped"

    def __init__(self, ms, N, K, packed: bool = False):
        self.ms = [int(m) for m in ms]
        if not self.ms or min(self.ms) < 0:
            raise ValueError(f"group sizes must be a non-empty list of M_g >= 0, got {ms}")
        self.N, self.K = _positive("N", N), _k(K)
        self.packed = bool(packed)
        self.op = "packed" if packed else "grouped"
        self.G, self.T = len(self.ms), sum(self.ms)
        self.offsets = [0]
        for m in self.ms:
            self.offsets.append(self.offsets[-1] + m)
        self.flops = 2 * self.T * self.N * self.K
        # the weights of the experts with rows only (an empty expert's need not be read: MoE
        # routing leaves many empty at decode sizes, issue 22); with every M_g > 0, all G
        self.G_used = sum(1 for m in self.ms if m > 0)
        self.nv_bytes = (self.T + self.G_used * self.N) * fp4_row_bytes(self.K) + 2 * self.T * self.N \
            + (4 * (self.G + 1) if packed else 0)

    spec = property(lambda self: f"{self.op}:{'+'.join(map(str, self.ms))}x{self.N}x{self.K}")
    label = property(lambda self: f"G={self.G}{'' if self.G_used == self.G else f'({self.G_used})'} "
                                  f"ΣM={self.T} N={self.N} K={self.K}")

    def dims(self):
        return {"M_g": list(self.ms), "G": self.G, "G_used": self.G_used, "M_total": self.T, "N": self.N,
                "K": self.K}

    def make_set(self, h):
        T, G, N, K = self.T, self.G, self.N, self.K
        return {"a": h.fp4(T, K // 2), "sfa": h.scales(T, K // 16),
                "b": h.fp4(G, N, K // 2), "sfb": h.scales(G, N, K // 16),
                "offsets": h.torch.tensor(self.offsets, dtype=h.torch.int32, device=h.device)}

    def reference(self, h, s):
        a = h.decode(s["a"], s["sfa"])
        b = h.decode(s["b"], s["sfb"])
        out = h.torch.empty(self.T, self.N, dtype=h.torch.float64, device=h.device)
        for g in range(self.G):
            lo, hi = self.offsets[g], self.offsets[g + 1]
            out[lo:hi] = a[lo:hi] @ b[g].T
        return out

    def _use_packed(self, variant):
        return self.packed or variant == "packed"

    def nv_prepare(self, h, s, variant):
        out = h.torch.empty(self.T, self.N, dtype=h.torch.float16, device=h.device)
        st = {"s": s, "out": out}
        if not self._use_packed(variant):
            rows = [(self.offsets[g], self.offsets[g + 1]) for g in range(self.G)]
            st["lists"] = ([s["a"][lo:hi] for lo, hi in rows], [s["sfa"][lo:hi] for lo, hi in rows],
                           [s["b"][g] for g in range(self.G)], [s["sfb"][g] for g in range(self.G)],
                           [out[lo:hi] for lo, hi in rows])
        return st

    def nv_launch(self, h, st, backend, variant):
        import nvfp4

        s = st["s"]
        if self._use_packed(variant):
            nvfp4.grouped_gemm_packed(s["a"], s["sfa"], s["b"], s["sfb"], s["offsets"], out=st["out"],
                                      backend=backend)
        else:
            a, sfa, b, sfb, outs = st["lists"]
            nvfp4.grouped_gemm(a, sfa, b, sfb, out=outs, backend=backend)


def parse_spec(spec: str) -> Problem:
    """"gemm:128x7168x16384", "gemv:7168x16384x1" (M x K [x L]), "dual:MxNxK",
    "grouped:80+176+128x4096x7168" (M_g joined by '+', then N, K), "packed:..." (same,
    grouped_gemm_packed), "quantize:MxK", "dequantize:MxK", "swizzle:MxK", "unswizzle:MxK"."""
    op, sep, rest = spec.strip().partition(":")
    op = ALIASES.get(op.strip().lower(), op.strip().lower())
    if not sep or not rest:
        raise ValueError(f"shape {spec!r}: expected PROBLEM:DIMS, e.g. gemm:128x7168x16384")
    parts = rest.strip().lower().replace("×", "x").split("x")

    def ints(n_min, n_max, what):
        if not n_min <= len(parts) <= n_max:
            raise ValueError(f"shape {spec!r}: {op} takes {what}")
        try:
            return [int(p) for p in parts]
        except ValueError:
            raise ValueError(f"shape {spec!r}: {op} takes {what} (integers)") from None

    if op == "gemv":
        return Gemv(*ints(2, 3, "MxK or MxKxL"))
    if op in ("gemm", "dual"):
        return (Gemm if op == "gemm" else Dual)(*ints(3, 3, "MxNxK"))
    if op in ("grouped", "packed"):
        if len(parts) != 3:
            raise ValueError(f"shape {spec!r}: {op} takes M1+M2+...xNxK")
        try:
            ms = [int(m) for m in parts[0].split("+")]
            n, k = int(parts[1]), int(parts[2])
        except ValueError:
            raise ValueError(f"shape {spec!r}: {op} takes M1+M2+...xNxK (integers)") from None
        return Grouped(ms, n, k, packed=(op == "packed"))
    from ._bench_formats import Dequantize, Quantize, Swizzle  # (they import this module)

    if op == "quantize":
        return Quantize(*ints(2, 2, "MxK"))
    if op == "dequantize":
        return Dequantize(*ints(2, 2, "MxK"))
    if op in ("swizzle", "unswizzle"):
        return Swizzle(*ints(2, 2, "MxK"), inverse=(op == "unswizzle"))
    raise ValueError(f"shape {spec!r}: unknown problem {op!r}; choose from gemv, gemm, dual, grouped, packed, "
                     "quantize, dequantize, swizzle, unswizzle")


def select_problems(problems_arg: str, shapes_arg: str | None, default_problems=MAIN_PROBLEMS) -> list:
    """--shapes (explicit specs) wins; else the benchmark shapes of --problems."""
    if shapes_arg:
        specs = [s for s in re.split(r"[,\s;]+", shapes_arg) if s]
        # a comma inside a grouped list is allowed too: "grouped:80,176x4096x7168" is not
        # ambiguous after splitting only where a token has no ':' -> glue it back
        glued = []
        for s in specs:
            if ":" not in s and glued:
                glued[-1] += "+" + s
            else:
                glued.append(s)
        return [parse_spec(s) for s in glued]
    names = [ALIASES.get(p.strip().lower(), p.strip().lower()) for p in (problems_arg or "").split(",") if p.strip()]
    names = names or list(default_problems)
    unknown = [n for n in names if n not in SHAPES]
    if unknown:
        raise ValueError(f"unknown problem(s) {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    return [parse_spec(f"{n}:{s}") for n in names for s in SHAPES[n]]
