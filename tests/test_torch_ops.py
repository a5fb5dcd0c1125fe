"""nvfp4.torch: the torch.library operators (torch.ops.nvfp4.*) and torch.compile of the
public functions. CPU tensors run the float64 CPU backend, so everything but the CUDA-graph
tests runs here; results of a compiled function are compared bitwise with the eager calls
(same backend, same inputs). Skipped without torch."""

from __future__ import annotations

import importlib
import math
import re
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch.compiler, "substitute_in_graph"):
    pytest.skip(f"torch {torch.__version__} has no torch.compiler.substitute_in_graph (needs >= 2.5)",
                allow_module_level=True)

import nvfp4  # noqa: E402
import nvfp4.gpumode  # noqa: E402
import nvfp4.ops  # noqa: E402
import nvfp4.torch as nt  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

ops = torch.ops.nvfp4
HAVE_FP4 = hasattr(torch, "float4_e2m1fn_x2") and hasattr(torch, "float8_e4m3fn")

FUNCTIONAL = ["gemv", "gemm", "dual_gemm", "grouped_gemm", "grouped_gemm_packed", "quantize", "quantize_scaled",
              "dequantize", "swizzle_scales", "unswizzle_scales"]
MUTATING = ["gemv_out", "gemm_out", "dual_gemm_out", "grouped_gemm_out", "grouped_gemm_packed_out", "dequantize_out",
            "swizzle_scales_out", "unswizzle_scales_out"]


# ----------------------------------------------------------------------------------------
# inputs: nvfp4.quantize of random float32 tensors
# ----------------------------------------------------------------------------------------

def randn(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


def operand(rng, *shape, sf_layout="linear"):
    """(q, sf, gs) of a random (..., rows, K) float32 tensor."""
    return nvfp4.quantize(randn(rng, *shape), sf_layout=sf_layout)


def same(got, want):
    """Bitwise equality of (nested lists/tuples of) tensors, shapes and dtypes included."""
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
        return
    assert isinstance(got, torch.Tensor), type(got)
    assert got.shape == want.shape and got.dtype == want.dtype and got.device == want.device
    assert torch.equal(got.view(torch.uint8) if got.dtype.itemsize == 1 else got,
                       want.view(torch.uint8) if want.dtype.itemsize == 1 else want)


class GraphRecorder:
    """A torch.compile backend that keeps each FX graph and runs it as is (backend="eager")."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    def targets(self):
        """The nvfp4 operators called, by name ("gemm", "gemm_out", ...)."""
        names = {str(n.target) for gm in self.graphs for n in gm.graph.nodes if n.op == "call_function"}
        return {t.split(".")[1] for t in names if t.startswith("nvfp4.")}


def compiled(fn, backend="eager", **kw):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, backend=backend, **kw)


# ----------------------------------------------------------------------------------------
# registration
# ----------------------------------------------------------------------------------------

def test_every_op_registered_with_its_schema():
    for name in FUNCTIONAL + MUTATING:
        schema = getattr(ops, name).default._schema
        assert not schema.arguments[-1].name == "out" or name in MUTATING
        if name in MUTATING:
            out = schema.arguments[-1]
            assert out.name == "out" and out.alias_info is not None and out.alias_info.is_write, str(schema)
            assert len(schema.returns) == 0
            assert name[:-4] in FUNCTIONAL
        else:
            assert not schema.is_mutable, str(schema)
    s = str(ops.gemm.default._schema)
    assert "float alpha, Tensor? alpha_t" in s, s
    assert "Tensor(a!) out" in str(ops.gemm_out.default._schema)
    assert "Tensor(a!)[] out" in str(ops.grouped_gemm_out.default._schema)
    assert "Tensor[] a_list" in str(ops.grouped_gemm.default._schema)
    assert len(ops.quantize.default._schema.returns) == 3


def test_eager_functions_untouched():
    """The routing is a Dynamo rule only: the public functions are the eager ones."""
    for name in nvfp4.ops.__all__:
        assert getattr(nvfp4, name) is getattr(nvfp4.ops, name)
        assert getattr(nvfp4, name).__module__ == "nvfp4.ops"


def test_import_is_idempotent(rng):
    importlib.reload(nt)   # registers nothing twice, raises nothing
    q, sf, gs = operand(rng, 8, 64)
    w, sw, gw = operand(rng, 16, 64)
    rec = GraphRecorder()
    got = compiled(lambda: nvfp4.gemm(q, sf, w, sw, alpha=gs * gw), rec)()
    same(got, nvfp4.gemm(q, sf, w, sw, alpha=gs * gw))
    assert rec.targets() == {"gemm"}


def test_blocked_scale_bytes_formula():
    for rows in (0, 1, 7, 127, 128, 129, 200, 256, 1000):
        for k in (0, 1, 15, 16, 48, 64, 65, 80, 1000, 4096):
            assert nt.blocked_scale_bytes(rows, k) == nvfp4.blocked_scale_bytes(rows, k), (rows, k)
    # and nvfp4.blocked_scale_bytes traces (no graph break at the extension call)
    f = compiled(lambda x: x.new_zeros(nvfp4.blocked_scale_bytes(x.shape[0], x.shape[1])))
    assert f(torch.ones(130, 96)).shape == (nvfp4.blocked_scale_bytes(130, 96),)


# ----------------------------------------------------------------------------------------
# fake (meta) implementations: output shapes and dtypes as the eager ops
# ----------------------------------------------------------------------------------------

def _cases(rng):
    """(op name, args) of every functional op, on valid inputs."""
    q, sf, gs = operand(rng, 7, 96)
    q3, sf3, gs3 = operand(rng, 2, 5, 64)
    w, sw, gw = operand(rng, 9, 96)
    w3, sw3, _ = operand(rng, 2, 11, 64)
    qb, sfb, _ = operand(rng, 130, 96, sf_layout="blocked")
    wb, swb, _ = operand(rng, 3, 96, sf_layout="blocked")
    v3, sv3, _ = operand(rng, 2, 64)
    moe_w, moe_sw, _ = operand(rng, 3, 12, 96)
    offsets = torch.tensor([0, 2, 2, 7], dtype=torch.int32)
    x4 = randn(rng, 2, 3, 5, 32)
    blocked3 = nvfp4.swizzle_scales(sf3)
    return [
        ("gemv", (q3, sf3, v3, sv3, 1.0, gs3, "linear", "float32", "auto")),
        ("gemv", (q, sf, w[0], sw[0], 0.5, None, "linear", "bfloat16", "auto")),
        ("gemm", (q, sf, w, sw, 0.25, None, "linear", "float16", "auto")),
        ("gemm", (q3, sf3, w3, sw3, 1.0, gs3, "linear", "float32", "auto")),
        ("gemm", (qb, sfb, wb, swb, 1.0, None, "blocked", "bfloat16", "auto")),
        ("dual_gemm", (q, sf, w, sw, w, sw, 0.5, None, 1.0, gw, "silu", "linear", "float32", "auto")),
        ("dual_gemm", (q3, sf3, w3, sw3, w3, sw3, 1.0, gs3, 2.0, None, "gelu_tanh", "linear", "float16", "auto")),
        ("grouped_gemm", ([q, q[:3]], [sf, sf[:3]], [w, w[:4]], [sw, sw[:4]], [0.5, 2.0], None, "linear", "float32",
                          "auto")),
        ("grouped_gemm", ([q], [sf], [w], [sw], None, None, "linear", "bfloat16", "auto")),
        ("grouped_gemm_packed", (q, sf, moe_w, moe_sw, offsets, None, "float16", "auto")),
        ("grouped_gemm_packed", (q, sf, moe_w, moe_sw, offsets, torch.tensor([0.5, 1.0, 2.0]), "float32", "auto")),
        ("quantize", (randn(rng, 7, 96), None, "linear", "auto")),
        ("quantize", (randn(rng, 130, 96), None, "blocked", "auto")),
        ("quantize", (randn(rng, 2, 5, 64), gs, "blocked", "auto")),
        ("quantize", (x4, None, "linear", "auto")),
        ("quantize", (x4, None, "blocked", "auto")),
        ("quantize", (randn(rng, 64), None, "blocked", "auto")),
        ("quantize_scaled", (randn(rng, 3, 200, 32), gs, "blocked", "auto")),
        ("quantize_scaled", (x4, gs, "linear", "auto")),
        ("dequantize", (q, sf, 1.0, gs, "linear", "float32", "auto")),
        ("dequantize", (q3, sf3, 0.5, None, "linear", "bfloat16", "auto")),
        ("dequantize", (qb, sfb, 1.0, None, "blocked", "float16", "auto")),
        ("swizzle_scales", (sf, "auto")),
        ("swizzle_scales", (sf3, "auto")),
        ("swizzle_scales", (nvfp4.unswizzle_scales(sfb, 130, 96), "auto")),
        ("unswizzle_scales", (sfb, 130, 96, "auto")),
        ("unswizzle_scales", (blocked3, 5, 64, "auto")),
        ("unswizzle_scales", (_gpumode_view(blocked3, 5, 64), 5, 64, "auto")),
    ]


def _gpumode_view(blocked, rows, k):
    """The gpu-mode (32, 4, rest_rows, 4, rest_k, L) view of (L, n) blocked scale bytes."""
    L = blocked.shape[0]
    rr, rk = math.ceil(rows / 128), math.ceil(k / 64)
    return blocked.reshape(L, rr, rk, 32, 4, 4).permute(3, 4, 1, 5, 2, 0)


def _fakeify(mode, x):
    if isinstance(x, torch.Tensor):
        return mode.from_tensor(x)
    if isinstance(x, list):
        return [_fakeify(mode, v) for v in x]
    return x


def _meta(x):
    if isinstance(x, (list, tuple)):
        return [_meta(v) for v in x]
    return (tuple(x.shape), x.dtype, x.device)


def test_fake_shapes_and_dtypes_match_eager(rng):
    for name, args in _cases(rng):
        real = getattr(ops, name)(*args)
        with FakeTensorMode() as mode:
            fake = getattr(ops, name)(*[_fakeify(mode, a) for a in args])
        assert _meta(fake) == _meta(real), name
    # the quantize blocked byte count is the library's
    q, sf, _ = ops.quantize(randn(rng, 3, 130, 96), None, "blocked", "auto")
    assert sf.shape == (3, nvfp4.blocked_scale_bytes(130, 96))


def test_fake_does_not_raise_on_bad_arguments(rng):
    """Bad arguments raise the eager error when the op runs, not at trace time."""
    q, sf, _ = operand(rng, 7, 96)
    with FakeTensorMode() as mode:
        fq, fsf = mode.from_tensor(q), mode.from_tensor(sf)
        assert ops.gemm(fq, fsf, fq[0], fsf, 1.0, None, "linear", "int8", "auto").shape == (0,)
        assert ops.gemv(fq[0], fsf, fq[0], fsf, 1.0, None, "linear", "float16", "auto").shape == (0,)
        assert ops.unswizzle_scales(fsf, -3, 7, "auto").shape == (7, 0, 0)


# ----------------------------------------------------------------------------------------
# torch.library.opcheck
# ----------------------------------------------------------------------------------------

def _opcheck_cases(rng):
    cases = {name: args for name, args in reversed(_cases(rng))}  # one case per functional op (the first)
    q, sf, gs = operand(rng, 7, 96)
    w, sw, gw = operand(rng, 9, 96)
    moe_w, moe_sw, _ = operand(rng, 3, 12, 96)
    offsets = torch.tensor([0, 2, 2, 7], dtype=torch.int32)
    sfb = nvfp4.swizzle_scales(sf)
    out = {
        "gemv_out": (q, sf, w[0], sw[0], 1.0, gs, "linear", "float32", "auto", torch.empty(7)),
        "gemm_out": (q, sf, w, sw, 0.5, None, "linear", "float16", "auto", torch.empty(7, 9, dtype=torch.float16)),
        "dual_gemm_out": (q, sf, w, sw, w, sw, 1.0, gs, 1.0, gw, "silu", "linear", "float32", "auto",
                          torch.empty(7, 9)),
        "grouped_gemm_out": ([q, q[:2]], [sf, sf[:2]], [w, w], [sw, sw], [1.0, 0.5], None, "linear", "float32",
                             "auto", [torch.empty(7, 9), torch.empty(2, 9)]),
        "grouped_gemm_packed_out": (q, sf, moe_w, moe_sw, offsets, None, "float32", "auto", torch.empty(7, 12)),
        "dequantize_out": (q, sf, 1.0, gs, "linear", "float32", "auto", torch.empty(7, 96)),
        "swizzle_scales_out": (sf, "auto", torch.empty(sfb.shape, dtype=torch.uint8)),
        "unswizzle_scales_out": (sfb, 7, 96, "auto", torch.empty(7, 6, dtype=torch.uint8)),
    }
    cases.update(out)
    return cases


@pytest.mark.parametrize("name", FUNCTIONAL + MUTATING)
def test_opcheck(name, rng):
    args = _opcheck_cases(rng)[name]
    torch.library.opcheck(getattr(ops, name).default, args)


@pytest.mark.skipif(not HAVE_FP4, reason="torch without float4_e2m1fn_x2")
def test_opcheck_fp4_dtypes(rng):
    """float4_e2m1fn_x2 / float8_e4m3fn operands (opcheck's schema test cannot copy float4
    tensors, a torch limitation: the other checks run)."""
    q, sf, gs = operand(rng, 7, 96)
    w, sw, gw = operand(rng, 9, 96)
    args = (q.view(torch.float4_e2m1fn_x2), sf.view(torch.float8_e4m3fn), w.view(torch.float4_e2m1fn_x2),
            sw.view(torch.float8_e4m3fn), 1.0, gs * gw, "linear", "float32", "auto")
    torch.library.opcheck(ops.gemm.default, args,
                          test_utils=("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic"))
    same(ops.gemm(*args), nvfp4.gemm(q, sf, w, sw, alpha=gs * gw, out_dtype="float32"))


# ----------------------------------------------------------------------------------------
# torch.compile(fullgraph=True) of each public function == eager
# ----------------------------------------------------------------------------------------

BACKENDS = ["eager", "aot_eager"]


def _check_compiled(fn, args, backend, expect_ops):
    want = fn(*args)
    rec = GraphRecorder()
    if backend == "aot_eager":
        from torch._dynamo.backends.common import aot_autograd
        from torch._functorch.aot_autograd import make_boxed_func

        def inner(gm, example_inputs):
            rec.graphs.append(gm)
            return make_boxed_func(gm.forward)
        got = compiled(fn, aot_autograd(fw_compiler=inner))(*args)
    else:
        got = compiled(fn, rec)(*args)
    same(got, want)
    assert set(expect_ops) <= rec.targets(), (expect_ops, rec.targets())
    return got


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_gemv_gemm_dual(backend, rng):
    q, sf, gs = operand(rng, 2, 7, 96)
    w, sw, gw = operand(rng, 2, 9, 96)
    v, sv, gv = operand(rng, 2, 96)
    qb, sfb, _ = operand(rng, 5, 128, sf_layout="blocked")
    wb, swb, _ = operand(rng, 6, 128, sf_layout="blocked")
    a4, s8 = (q.view(torch.float4_e2m1fn_x2), sf.view(torch.float8_e4m3fn)) if HAVE_FP4 else (q, sf)

    def f(q, sf, w, sw, v, sv, gs, gw, gv, a4, s8):
        return (nvfp4.gemv(q, sf, v, sv, alpha=gs * gv, out_dtype="float32"),
                nvfp4.gemv(q[0], sf[0], v[0], sv[0], alpha=0.5),
                nvfp4.gemm(q, sf, w, sw, alpha=gs * gw),
                nvfp4.gemm(qb, sfb, wb, swb, alpha=0.125, sf_layout="blocked", out_dtype="bfloat16"),
                nvfp4.gemm(a4, s8, w, sw, out_dtype="float32"),
                nvfp4.dual_gemm(q, sf, w, sw, w, sw, alpha1=gs * gw, alpha2=0.25, out_dtype="float32"),
                nvfp4.dual_gemm(q[1], sf[1], w[0], sw[0], w[1], sw[1], activation="gelu_tanh"))
    _check_compiled(f, (q, sf, w, sw, v, sv, gs, gw, gv, a4, s8), backend, ["gemv", "gemm", "dual_gemm"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_out_variants(backend, rng):
    q, sf, gs = operand(rng, 7, 96)
    w, sw, gw = operand(rng, 9, 96)

    def f(q, sf, w, sw, gs, gw, o1, o2, o3, o4, o5):
        r1 = nvfp4.gemm(q, sf, w, sw, alpha=gs * gw, out=o1)
        r2 = nvfp4.gemv(q, sf, w[3], sw[3], out=o2, out_dtype="float32")
        r3 = nvfp4.dual_gemm(q, sf, w, sw, w, sw, alpha2=gw, out=o3, out_dtype="float32")
        r4 = nvfp4.dequantize(q, sf, global_scale=gs, out=o4)
        r5 = nvfp4.gemm(q, sf, w, sw, out=o5.t(), out_dtype="float32")   # a transposed (strided) out view
        return r1, r2, r3, r4, r5

    def outs():
        return (torch.full((7, 9), 7.0, dtype=torch.float16), torch.full((7,), 7.0), torch.full((7, 9), 7.0),
                torch.full((7, 96), 7.0), torch.full((9, 7), 7.0))
    want_outs, got_outs = outs(), outs()
    f(q, sf, w, sw, gs, gw, *want_outs)
    f_c = compiled(f, backend)
    res = f_c(q, sf, w, sw, gs, gw, *got_outs)
    same(list(got_outs), list(want_outs))
    for r, o in zip(res[:4], got_outs[:4]):
        assert r is o
    same(res[4], want_outs[4].t())


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_grouped(backend, rng):
    A = [operand(rng, m, 64) for m in (3, 0, 9)]
    B = [operand(rng, n, 64) for n in (5, 4, 6)]
    qa, sfa, _ = operand(rng, 7, 96)
    moe_w, moe_sw, _ = operand(rng, 3, 12, 96)
    offsets = torch.tensor([0, 2, 2, 7], dtype=torch.int32)
    moe_alphas = torch.tensor([0.5, 1.0, 2.0])

    def f(a_list, sfa_list, b_list, sfb_list, gs_list, o_list, o_packed):
        r1 = nvfp4.grouped_gemm(a_list, sfa_list, b_list, sfb_list, alphas=[0.5, 1.0, 2.0], out_dtype="float32")
        r2 = nvfp4.grouped_gemm(a_list, sfa_list, b_list, sfb_list, alphas=gs_list)
        r3 = nvfp4.grouped_gemm(a_list, sfa_list, b_list, sfb_list, out=o_list)
        r4 = nvfp4.grouped_gemm_packed(qa, sfa, moe_w, moe_sw, offsets, alphas=moe_alphas)
        r5 = nvfp4.grouped_gemm_packed(qa, sfa, moe_w, moe_sw, offsets, out=o_packed, out_dtype="float32")
        r6 = nvfp4.grouped_gemm([], [], [], [])
        return r1, r2, r3, r4, r5, r6

    a_list, sfa_list, gs_list = [x[0] for x in A], [x[1] for x in A], [a[2] * b[2] for a, b in zip(A, B)]
    b_list, sfb_list = [x[0] for x in B], [x[1] for x in B]

    def outs():
        return [torch.full((3, 5), 7.0, dtype=torch.float16), torch.empty((0, 4), dtype=torch.float16),
                torch.full((9, 6), 7.0, dtype=torch.float16)], torch.full((7, 12), 7.0)
    (wo, wp), (go, gp) = outs(), outs()
    want = f(a_list, sfa_list, b_list, sfb_list, gs_list, wo, wp)
    rec = GraphRecorder()
    got = compiled(f, rec if backend == "eager" else "aot_eager")(a_list, sfa_list, b_list, sfb_list, gs_list, go, gp)
    same(list(got[:5]), list(want[:5]))
    assert got[5] == [] and isinstance(got[0], list)
    same(go + [gp], wo + [wp])
    if backend == "eager":
        assert rec.targets() == {"grouped_gemm", "grouped_gemm_out", "grouped_gemm_packed", "grouped_gemm_packed_out"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_quantize_family(backend, rng):
    x = randn(rng, 2, 130, 96)
    x4 = randn(rng, 2, 2, 3, 64)
    gs_given = torch.tensor([0.01], dtype=torch.float32)

    def f(x, x4, gs_given):
        q, sf, gs = nvfp4.quantize(x)
        qb, sfb, gsb = nvfp4.quantize(x, sf_layout="blocked", global_scale=gs)
        q2, sf2, gs2 = nvfp4.quantize(x, global_scale=0.02)
        q3, sf3, gs3 = nvfp4.quantize(x4, global_scale=gs_given, sf_layout="blocked")
        q4, sf4, gs4 = nvfp4.quantize(x4)
        deq = nvfp4.dequantize(q, sf, global_scale=gs)
        deqb = nvfp4.dequantize(qb, sfb, global_scale=0.5, sf_layout="blocked", dtype="bfloat16")
        sw = nvfp4.swizzle_scales(sf)
        un = nvfp4.unswizzle_scales(sw, 130, 96)
        un6 = nvfp4.unswizzle_scales(_gpumode_view(sw, 130, 96), 130, 96)
        return (q, sf, gs, qb, sfb, gsb, q2, sf2, gs2, q3, sf3, gs3, q4, sf4, gs4, deq, deqb, sw, un, un6,
                gsb is gs, gs3 is gs_given)

    want = f(x, x4, gs_given)
    assert want[-2] and want[-1]
    got = _check_compiled(lambda *a: f(*a)[:-2], (x, x4, gs_given), backend,
                          ["quantize", "quantize_scaled", "dequantize", "swizzle_scales", "unswizzle_scales"])
    same(list(got), list(want[:-2]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_compile_gpumode_adapters(backend, rng):
    """nvfp4.gpumode.gemm / dual_gemm write permuted views of c through out=."""
    M, N, K, L = 7, 9, 64, 2
    a, sfa, _ = operand(rng, L, M, K)
    b1, sfb1, _ = operand(rng, L, N, K)
    b2, sfb2, _ = operand(rng, L, N, K)
    # gpu-mode layouts: (rows, K/2, L) operands and (rows, K/16, L) scales, (M, N, L) outputs
    g = lambda t: t.permute(1, 2, 0)  # noqa: E731
    sfa_p, sfb1_p, sfb2_p = (_gpumode_view(nvfp4.swizzle_scales(s), r, K) for s, r in ((sfa, M), (sfb1, N), (sfb2, N)))

    def f(c1, c2):
        nvfp4.gpumode.gemm((g(a), g(b1), g(sfa), g(sfb1), sfa_p, sfb1_p, c1))
        nvfp4.gpumode.dual_gemm((g(a), g(b1), g(b2), g(sfa), g(sfb1), g(sfb2), sfa_p, sfb1_p, sfb2_p, c2),
                                sf_layout="blocked")
        return c1, c2

    def outs():
        return (torch.full((L, M, N), 7.0, dtype=torch.float16).permute(1, 2, 0),
                torch.full((L, M, N), 7.0, dtype=torch.float16).permute(1, 2, 0))
    want, got = outs(), outs()
    f(*want)
    res = compiled(f, backend)(*got)
    same(list(got), list(want))
    assert res[0] is got[0] and res[1] is got[1]


def test_compile_dynamic_shapes(rng):
    w, sw, gw = operand(rng, 9, 96, sf_layout="blocked")

    def f(x):
        q, sf, gs = nvfp4.quantize(x, sf_layout="blocked")
        return nvfp4.gemm(q, sf, w, sw, alpha=gs * gw, sf_layout="blocked", out_dtype="float32"), sf

    torch._dynamo.reset()
    fc = torch.compile(f, fullgraph=True, backend="eager", dynamic=True)
    for m in (5, 130, 17):
        x = randn(rng, m, 96)
        same(fc(x), f(x))


# ----------------------------------------------------------------------------------------
# a gated MLP (dual_gemm + gemm): eager and inductor backends
# ----------------------------------------------------------------------------------------

def gated_mlp(x, w13, w2):
    """silu(x·W1ᵀ) * (x·W3ᵀ) · W2ᵀ with nvfp4 weights (q, sf, gs) and activations."""
    (q1, s1, g1), (q3, s3, g3) = w13
    q2, s2, g2 = w2
    qx, sx, gx = nvfp4.quantize(x)
    h = nvfp4.dual_gemm(qx, sx, q1, s1, q3, s3, alpha1=gx * g1, alpha2=gx * g3, out_dtype="bfloat16")
    qh, sh, gh = nvfp4.quantize(h)
    return nvfp4.gemm(qh, sh, q2, s2, alpha=gh * g2, out_dtype="bfloat16")


def _mlp_weights(rng, d, hidden, device="cpu"):
    def w(rows, k):
        return nvfp4.quantize(randn(rng, rows, k).to(device) / math.sqrt(k))
    return (w(hidden, d), w(hidden, d)), w(d, hidden)


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_compile_gated_mlp(backend, rng):
    w13, w2 = _mlp_weights(rng, 64, 96)
    f = compiled(gated_mlp, backend)
    for m in (5, 5, 8):
        x = randn(rng, m, 64)
        same(f(x, w13, w2), gated_mlp(x, w13, w2))


# ----------------------------------------------------------------------------------------
# bad arguments under compile: the eager op's error, at run time
# ----------------------------------------------------------------------------------------

def _eager_error(fn, *args):
    with pytest.raises((ValueError, TypeError)) as info:
        fn(*args)
    return info.type, str(info.value)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_compile_bad_arguments_raise_eager_errors(backend, rng):
    q, sf, gs = operand(rng, 7, 96)
    w, sw, gw = operand(rng, 9, 96)
    w2, sw2, _ = operand(rng, 9, 128)
    x = randn(rng, 7, 96)
    bad = [
        lambda: nvfp4.gemm(q, sf, w2, sw2),                                  # K mismatch
        lambda: nvfp4.gemm(q, sf, w, sw, out_dtype="int8"),                  # out_dtype
        lambda: nvfp4.dual_gemm(q, sf, w, sw, w, sw, activation="relu"),     # activation
        lambda: nvfp4.gemv(q, sf, w[0], sw[0], sf_layout="weird"),           # sf_layout
        lambda: nvfp4.gemm(x, sf, w, sw),                                    # a: float32
        lambda: nvfp4.gemm(q, sf, w, sw, alpha=torch.ones(2)),               # alpha: 2 elements
        lambda: nvfp4.dequantize(q, sf, out=torch.empty(7, 96, dtype=torch.int32)),  # out dtype
        lambda: nvfp4.quantize(x[:, :40]),                                   # K not a multiple of 16
        lambda: nvfp4.unswizzle_scales(nvfp4.swizzle_scales(sf), 7, 90),    # k not a multiple of 16
    ]
    for i, fn in enumerate(bad):
        if backend == "inductor" and i > 1:  # inductor compiles are slow: two cases suffice
            break
        etype, msg = _eager_error(fn)
        with pytest.raises(etype, match=re.escape(msg)):
            compiled(fn, backend)()


def test_untraceable_arguments_fall_back_to_eager(rng):
    """stream= / a str alpha: a graph break to the eager op (its TypeError for a str alpha);
    under fullgraph=True Dynamo reports the break."""
    q, sf, gs = operand(rng, 7, 96)
    w, sw, gw = operand(rng, 9, 96)
    etype, msg = _eager_error(lambda: nvfp4.gemm(q, sf, w, sw, alpha="two"))
    torch._dynamo.reset()
    with pytest.raises(etype, match=re.escape(msg)):
        torch.compile(lambda: nvfp4.gemm(q, sf, w, sw, alpha="two"), backend="eager")()
    f = torch.compile(lambda: nvfp4.gemm(q, sf, w, sw, stream=0) + 1, backend="eager")
    same(f(), nvfp4.gemm(q, sf, w, sw) + 1)
    with pytest.raises(Exception, match="nvfp4: arguments"):
        compiled(lambda: nvfp4.gemm(q, sf, w, sw, stream=0))()


# ----------------------------------------------------------------------------------------
# GPU: fullgraph compile and CUDA graphs (mode="reduce-overhead") of the gated MLP
# ----------------------------------------------------------------------------------------

def _cuda():
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")


def _per_call_us(fn, n=200):
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


def _cudagraph_skips():
    from torch._dynamo.utils import counters
    return counters["inductor"]["cudagraph_skips"]


def _static(*tensors):
    """Weights (and out= buffers) as CUDA graphs want them: same address every call, not
    copied into the graph's input buffers at each replay."""
    for t in tensors:
        torch._dynamo.mark_static_address(t)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_gpu_gated_mlp_compiled(mode, rng):
    """fullgraph compile (inductor) and CUDA graphs of the gated MLP == eager, bitwise; the
    per-call times are printed (run with -s), not asserted."""
    _cuda()
    d, hidden = 2048, 4096
    w13, w2 = _mlp_weights(rng, d, hidden, "cuda")
    _static(*w13[0], *w13[1], *w2)
    torch._dynamo.reset()
    skips = _cudagraph_skips()
    f = torch.compile(gated_mlp, fullgraph=True, mode=None if mode == "default" else mode)
    last = {}
    for m in (16, 16, 16, 128, 128, 128):   # warm-up, record, replay (reduce-overhead) per shape
        x = randn(rng, m, d).cuda()
        want = gated_mlp(x, w13, w2)
        torch.compiler.cudagraph_mark_step_begin()
        got = f(x, w13, w2).clone()   # CUDA-graph outputs are overwritten by the next replay
        same(got, want)
        last[m] = x
    assert _cudagraph_skips() == skips, "CUDA graphs were skipped (TORCH_LOGS=perf_hints says why)"
    for m, x in last.items():
        eager_us = _per_call_us(lambda: gated_mlp(x, w13, w2))

        def run():
            torch.compiler.cudagraph_mark_step_begin()
            return f(x, w13, w2)
        comp_us = _per_call_us(run)
        print(f"\ngated MLP M={m} D={d} H={hidden} on {torch.cuda.get_device_name()}, torch {torch.__version__}: "
              f"eager {eager_us:.1f} us/call, compiled ({mode}) {comp_us:.1f} us/call")


@pytest.mark.gpu
def test_gpu_reduce_overhead_quantize_alpha_out(rng):
    """Under CUDA graphs: quantize with a float global_scale (its tensor made in the graph), a
    device alpha whose value changes between replays, and out= into a static buffer."""
    _cuda()
    w, sw, gw = (t.cuda() for t in operand(rng, 256, 512))
    out_w, out_g = (torch.empty(64, 256, dtype=torch.float16, device="cuda") for _ in range(2))
    _static(w, sw, gw, out_g)

    def f(x, alpha, out):
        q, sf, gs = nvfp4.quantize(x, global_scale=0.01)
        y = nvfp4.gemm(q, sf, w, sw, alpha=alpha, out_dtype="float32")
        nvfp4.gemm(q, sf, w, sw, alpha=gs * gw, out=out)
        return q, sf, gs, y

    torch._dynamo.reset()
    skips = _cudagraph_skips()
    fc = torch.compile(f, fullgraph=True, mode="reduce-overhead")
    for i in range(5):
        x = randn(rng, 64, 512).cuda()
        alpha = torch.tensor([0.5 * (i + 1)], device="cuda")
        want = f(x, alpha, out_w)
        torch.compiler.cudagraph_mark_step_begin()
        got = [t.clone() for t in fc(x, alpha, out_g)]
        same(got, list(want))
        same(out_g, out_w)
    assert _cudagraph_skips() == skips, "CUDA graphs were skipped (TORCH_LOGS=perf_hints says why)"


@pytest.mark.gpu
def test_gpu_reduce_overhead_python_float_alpha(rng):
    """A Python float alpha that changes between calls: right results under reduce-overhead
    (whether torch records a graph per value, reads it on the host or skips CUDA graphs)."""
    _cuda()
    q, sf, gs = (t.cuda() for t in operand(rng, 32, 256))
    w, sw, gw = (t.cuda() for t in operand(rng, 128, 256))

    def f(a, alpha):
        return nvfp4.gemm(a, sf, w, sw, alpha=alpha, out_dtype="float32")

    torch._dynamo.reset()
    skips = _cudagraph_skips()
    fc = torch.compile(f, fullgraph=True, mode="reduce-overhead")
    for alpha in (0.5, 0.25, 3.0, 0.5, 1.5, 0.75):
        torch.compiler.cudagraph_mark_step_begin()
        same(fc(q, alpha).clone(), f(q, alpha))
    print(f"\nPython float alpha under reduce-overhead: {_cudagraph_skips() - skips} CUDA-graph skips")
