// nanobind module: one call per op. Converts the arguments (op_args.hpp), allocates the
// outputs the caller did not pass, calls the C ABI with the GIL released, and turns a
// failed status into a Python exception. No validation lives here (api.cpp does it; the
// output shapes below are inferred only where the operands' ranks allow, else a 0-element
// placeholder lets the C ABI report what is wrong). Scratch is the library's cached
// workspace (NVFP4_WORKSPACE_CACHED): no size query, no allocation per call.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <string>
#include <vector>

#include "op_args.hpp"

namespace nb = nanobind;
using nvfp4_bindings::OpArgs;
using nvfp4_bindings::parse_layout;
using nvfp4_bindings::squeeze_unit;

namespace {

// The GIL is released around every call into the library.
#define CALL(expr)                                                \
  do {                                                            \
    nvfp4_status_t st_;                                           \
    {                                                             \
      nb::gil_scoped_release release_;                            \
      st_ = (expr);                                               \
    }                                                             \
    if (st_ != NVFP4_SUCCESS) nvfp4_bindings::raise_status(st_);  \
  } while (0)

const char* float_dtype(const char* op, const char* arg, const char* name) {
  for (const char* ok : {"float16", "bfloat16", "float32"})
    if (std::strcmp(ok, name) == 0) return name;
  throw nb::value_error(
      (std::string(op) + ": " + arg + " must be one of float16, bfloat16, float32, got '" + name + "'").c_str());
}

nvfp4_activation_t parse_activation(const char* s) {
  if (std::strcmp(s, "silu") == 0) return NVFP4_ACT_SILU;
  if (std::strcmp(s, "gelu_tanh") == 0) return NVFP4_ACT_GELU_TANH;
  throw nb::value_error((std::string("activation must be 'silu' or 'gelu_tanh', got '") + s + "'").c_str());
}

// Output shape of gemm / dual: a (.., M, K/2), b (.., N, K/2) -> (.., M, N); -1: unknown.
int gemm_out_shape(const nvfp4_tensor_t& a, const nvfp4_tensor_t& b, int64_t* shape) {
  if ((a.ndim != 2 && a.ndim != 3) || b.ndim < 2) return -1;
  for (int i = 0; i < a.ndim - 1; ++i) shape[i] = a.shape[i];
  shape[a.ndim - 1] = b.shape[b.ndim - 2];
  return a.ndim;
}

// The items of a Python sequence (any iterable), alive as long as this object.
struct Items {
  nb::object fast;  // a list or tuple holding the references
  std::vector<nb::handle> v;
  Items(nb::handle seq, const char* what) : fast(nb::steal(PySequence_Fast(seq.ptr(), what))) {
    if (!fast.is_valid()) throw nb::python_error();
    PyObject** p = PySequence_Fast_ITEMS(fast.ptr());
    v.assign(p, p + PySequence_Fast_GET_SIZE(fast.ptr()));
  }
};

}  // namespace

NB_MODULE(_nvfp4_ext, m) {
  m.doc() = "Low-level bindings of libnvfp4 (use the `nvfp4` package instead).";

  m.def("version", [] { return std::string(nvfp4_version()); });
  m.def("build_archs", [] { return std::string(nvfp4_build_archs()); });
  m.def("device_count", [] { return nvfp4_device_count(); });
  m.def("device_info", [](int device) {
    nvfp4_device_info_t info{};
    nvfp4_status_t st = nvfp4_device_info(device, &info);
    if (st != NVFP4_SUCCESS) nvfp4_bindings::raise_status(st);
    nb::dict d;
    d["device"] = info.device_id;
    d["name"] = std::string(info.name);
    d["compute_capability"] = nb::make_tuple(info.cc_major, info.cc_minor);
    d["multiprocessors"] = info.multiprocessors;
    d["total_memory_bytes"] = info.total_memory_bytes;
    d["backend"] = info.backend == NVFP4_BACKEND_AUTO ? std::string("none") : std::string(nvfp4_backend_name(info.backend));
    return d;
  });
  m.def("last_backend", [] { return std::string(nvfp4_backend_name(nvfp4_last_backend())); });
  m.def("stream_synchronize", [](uintptr_t stream) {
    CALL(nvfp4_stream_synchronize(reinterpret_cast<nvfp4_stream_t>(stream)));
  });
  m.def("blocked_scale_bytes", &nvfp4_blocked_scale_bytes, nb::arg("rows"), nb::arg("k"));
  m.def("blocked_scale_offset", &nvfp4_blocked_scale_offset, nb::arg("row"), nb::arg("col"), nb::arg("k"));

  // Every op: arrays as any DLPack object, `out` None (allocated here) or an array,
  // `stream` None / int / stream object, `alloc` None or the Python layer's allocator
  // for arrays without the exchange API. Returns the output(s).
  m.def("gemv", [](nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle alpha, const char* layout,
                   const char* out_dtype, nb::handle out, nb::handle stream, const char* backend, nb::handle alloc,
                   bool batch_last) {
    OpArgs args("gemv", alloc, batch_last);
    nvfp4_tensor_t ta = args.input(a, "a"), tsa = args.input(sfa, "sfa"), tb = args.input(b, "b"),
                   tsb = args.input(sfb, "sfb"), to;
    if (batch_last) {  // gpu-mode b (1, K/2, L) and sfb (1, K/16, L): (L, 1, X) -> (L, X)
      squeeze_unit(&tb, 1);
      if (tsb.ndim == 3) squeeze_unit(&tsb, 1);
    }
    const nvfp4_scalar_t s = args.scalar(alpha, "alpha");
    int64_t shape[2] = {ta.shape[0], ta.shape[1]};
    const int nd = (ta.ndim == 2 || ta.ndim == 3) ? ta.ndim - 1 : -1;
    nb::object result = args.output_or_new(out, shape, nd, float_dtype("gemv", "out_dtype", out_dtype), &to);
    if (batch_last && to.ndim == 3) squeeze_unit(&to, 2);  // gpu-mode c (M, 1, L) -> (L, M, 1) -> (L, M)
    const nvfp4_exec_t e = args.exec(stream, backend);
    CALL(nvfp4_gemv(&ta, &tsa, &tb, &tsb, s, parse_layout(layout), &to, &e));
    return result;
  }, nb::arg("a").none(), nb::arg("sfa").none(), nb::arg("b").none(), nb::arg("sfb").none(), nb::arg("alpha").none(),
     nb::arg("layout"), nb::arg("out_dtype"), nb::arg("out").none(), nb::arg("stream").none(), nb::arg("backend"),
     nb::arg("alloc").none(),
     nb::arg("batch_last") = false);

  m.def("gemm", [](nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle alpha, const char* layout,
                   const char* out_dtype, nb::handle out, nb::handle stream, const char* backend, nb::handle alloc,
                   bool batch_last) {
    OpArgs args("gemm", alloc, batch_last);
    nvfp4_tensor_t ta = args.input(a, "a"), tsa = args.input(sfa, "sfa"), tb = args.input(b, "b"),
                   tsb = args.input(sfb, "sfb"), to;
    const nvfp4_scalar_t s = args.scalar(alpha, "alpha");
    int64_t shape[3];
    const int nd = gemm_out_shape(ta, tb, shape);
    nb::object result = args.output_or_new(out, shape, nd, float_dtype("gemm", "out_dtype", out_dtype), &to);
    const nvfp4_exec_t e = args.exec(stream, backend);
    CALL(nvfp4_gemm(&ta, &tsa, &tb, &tsb, s, parse_layout(layout), &to, &e));
    return result;
  }, nb::arg("a").none(), nb::arg("sfa").none(), nb::arg("b").none(), nb::arg("sfb").none(), nb::arg("alpha").none(),
     nb::arg("layout"), nb::arg("out_dtype"), nb::arg("out").none(), nb::arg("stream").none(), nb::arg("backend"),
     nb::arg("alloc").none(),
     nb::arg("batch_last") = false);

  m.def("dual_gemm", [](nb::handle a, nb::handle sfa, nb::handle b1, nb::handle sfb1, nb::handle b2, nb::handle sfb2,
                        nb::handle alpha1, nb::handle alpha2, const char* activation, const char* layout,
                        const char* out_dtype, nb::handle out, nb::handle stream, const char* backend,
                        nb::handle alloc, bool batch_last) {
    OpArgs args("dual_gemm", alloc, batch_last);
    const nvfp4_activation_t act = parse_activation(activation);
    nvfp4_tensor_t ta = args.input(a, "a"), tsa = args.input(sfa, "sfa"), tb1 = args.input(b1, "b1"),
                   tsb1 = args.input(sfb1, "sfb1"), tb2 = args.input(b2, "b2"), tsb2 = args.input(sfb2, "sfb2"), to;
    const nvfp4_scalar_t s1 = args.scalar(alpha1, "alpha1"), s2 = args.scalar(alpha2, "alpha2");
    int64_t shape[3];
    const int nd = gemm_out_shape(ta, tb1, shape);
    nb::object result = args.output_or_new(out, shape, nd, float_dtype("dual_gemm", "out_dtype", out_dtype), &to);
    const nvfp4_exec_t e = args.exec(stream, backend);
    CALL(nvfp4_dual_gemm(&ta, &tsa, &tb1, &tsb1, &tb2, &tsb2, s1, s2, act, parse_layout(layout), &to, &e));
    return result;
  }, nb::arg("a").none(), nb::arg("sfa").none(), nb::arg("b1").none(), nb::arg("sfb1").none(), nb::arg("b2").none(),
     nb::arg("sfb2").none(), nb::arg("alpha1").none(), nb::arg("alpha2").none(), nb::arg("activation"),
     nb::arg("layout"), nb::arg("out_dtype"), nb::arg("out").none(), nb::arg("stream").none(), nb::arg("backend"),
     nb::arg("alloc").none(),
     nb::arg("batch_last") = false);

  // For bench/overhead.py: describes every array of `arrays` as an op describes its operands
  // (the DLPack C exchange API where the type has one) and returns how many: the per-array
  // host cost that a call taking G groups of arrays pays G times whatever the library does.
  m.def("_describe_arrays", [](nb::handle arrays) {
    Items items(arrays, "_describe_arrays: arrays must be a sequence");
    OpArgs args("_describe_arrays", nb::none());
    for (nb::handle h : items.v) args.input(h, "arrays");
    return items.v.size();
  }, nb::arg("arrays"));
  // The floor under _describe_arrays: only reading each array's DLPack view (for torch tensors
  // the DLPack C exchange call, torch's own cost), nothing of the library's. Returns the ranks' sum.
  m.def("_read_arrays", [](nb::handle arrays) {
    Items items(arrays, "_read_arrays: arrays must be a sequence");
    int64_t ranks = 0;
    for (nb::handle h : items.v) ranks += nvfp4_bindings::read_array_only(h);
    return ranks;
  }, nb::arg("arrays"));

  m.def("grouped_gemm", [](nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle alphas,
                           const char* layout, const char* out_dtype, nb::handle out, nb::handle stream,
                           const char* backend, nb::handle alloc, bool batch_last) {
    Items ia(a, "grouped_gemm: a must be a sequence"), isa(sfa, "grouped_gemm: sfa must be a sequence"),
        ib(b, "grouped_gemm: b must be a sequence"), isb(sfb, "grouped_gemm: sfb must be a sequence");
    const size_t g = ia.v.size();
    nb::list results;
    if (g == 0) return results;
    Items io(out.is_none() ? nb::handle(results) : out, "grouped_gemm: out must be a sequence");
    if (isa.v.size() != g || ib.v.size() != g || isb.v.size() != g || (!out.is_none() && io.v.size() != g))
      throw nb::value_error("grouped_gemm: a, sfa, b, sfb (and out if given) must have the same length");
    OpArgs args("grouped_gemm", alloc, batch_last);
    // gpu-mode groups are (rows, cols, 1): read as (1, rows, cols), used as (rows, cols)
    auto group_view = [batch_last](nvfp4_tensor_t t) {
      if (batch_last && t.ndim == 3) squeeze_unit(&t, 0);
      return t;
    };
    const char* dtype = float_dtype("grouped_gemm", "out_dtype", out_dtype);
    std::vector<nvfp4_tensor_t> ta(g), tsa(g), tb(g), tsb(g), to(g);
    std::vector<nvfp4_scalar_t> s(g, nvfp4_scalar_t{1.0f, nullptr});
    for (size_t i = 0; i < g; ++i) {
      ta[i] = group_view(args.input(ia.v[i], "a"));
      tsa[i] = group_view(args.input(isa.v[i], "sfa"));
      tb[i] = group_view(args.input(ib.v[i], "b"));
      tsb[i] = group_view(args.input(isb.v[i], "sfb"));
    }
    if (!alphas.is_none()) args.scalars(alphas, "alphas", g, s.data());
    for (size_t i = 0; i < g; ++i) {
      int64_t shape[2] = {ta[i].shape[0], tb[i].shape[0]};
      const int nd = ta[i].ndim == 2 && tb[i].ndim == 2 ? 2 : -1;
      results.append(args.output_or_new(out.is_none() ? nb::none() : io.v[i], shape, nd, dtype, &to[i]));
      to[i] = group_view(to[i]);
    }
    const nvfp4_exec_t e = args.exec(stream, backend);
    CALL(nvfp4_grouped_gemm(static_cast<int32_t>(g), ta.data(), tsa.data(), tb.data(), tsb.data(), s.data(),
                            parse_layout(layout), to.data(), &e));
    return results;
  }, nb::arg("a").none(), nb::arg("sfa").none(), nb::arg("b").none(), nb::arg("sfb").none(), nb::arg("alphas").none(),
     nb::arg("layout"), nb::arg("out_dtype"), nb::arg("out").none(), nb::arg("stream").none(), nb::arg("backend"),
     nb::arg("alloc").none(),
     nb::arg("batch_last") = false);

  m.def("grouped_gemm_packed", [](nb::handle a, nb::handle sfa, nb::handle b, nb::handle sfb, nb::handle offsets,
                                  nb::handle alphas, const char* out_dtype, nb::handle out, nb::handle stream,
                                  const char* backend, nb::handle alloc) {
    OpArgs args("grouped_gemm_packed", alloc);
    nvfp4_tensor_t ta = args.input(a, "a"), tsa = args.input(sfa, "sfa"), tb = args.input(b, "b"),
                   tsb = args.input(sfb, "sfb"), toff = args.input(offsets, "offsets"), tal{}, to;
    if (!alphas.is_none()) tal = args.input(alphas, "alphas");
    int64_t shape[2] = {ta.shape[0], tb.shape[1]};
    const int nd = ta.ndim == 2 && tb.ndim == 3 ? 2 : -1;
    nb::object result =
        args.output_or_new(out, shape, nd, float_dtype("grouped_gemm_packed", "out_dtype", out_dtype), &to);
    const nvfp4_exec_t e = args.exec(stream, backend);
    CALL(nvfp4_grouped_gemm_packed(&ta, &tsa, &tb, &tsb, &toff, alphas.is_none() ? nullptr : &tal, &to, &e));
    return result;
  }, nb::arg("a").none(), nb::arg("sfa").none(), nb::arg("b").none(), nb::arg("sfb").none(),
     nb::arg("offsets").none(), nb::arg("alphas").none(), nb::arg("out_dtype"), nb::arg("out").none(),
     nb::arg("stream").none(), nb::arg("backend"), nb::arg("alloc").none());

  // x (K) / (rows, K) / (L, rows, K) -> (q, sf, global_scale); q, sf and global_scale may
  // be given (None: allocated). With compute_global_scale, global_scale receives
  // amax / (6*448) first; otherwise it is read (a 1-element float32 array).
  m.def("quantize", [](nb::handle x, nb::handle q, nb::handle sf, nb::handle global_scale, bool compute_global_scale,
                       const char* layout, nb::handle stream, const char* backend, nb::handle alloc) {
    OpArgs args("quantize", alloc);
    const nvfp4_sf_layout_t sf_layout = parse_layout(layout);
    nvfp4_tensor_t tx = args.input(x, "x"), tq, tsf, tg;
    const int nd = tx.ndim;
    const int64_t k = nd > 0 ? tx.shape[nd - 1] : 0;
    int64_t shape[NVFP4_MAX_DIMS] = {};
    for (int i = 0; i + 1 < nd; ++i) shape[i] = tx.shape[i];
    if (nd > 0) shape[nd - 1] = k / 2;
    nb::object rq = args.output_or_new(q, shape, nd > 0 ? nd : -1, "uint8", &tq);
    int64_t sf_shape[NVFP4_MAX_DIMS] = {};
    int sf_nd = -1;
    if (sf_layout == NVFP4_SF_BLOCKED && nd >= 1) {
      const int64_t nbytes = nvfp4_blocked_scale_bytes(nd >= 2 ? tx.shape[nd - 2] : 1, k);
      if (nd == 3) {
        sf_shape[0] = tx.shape[0];
        sf_shape[1] = nbytes;
        sf_nd = 2;
      } else {
        sf_shape[0] = nbytes;
        sf_nd = 1;
      }
    } else if (nd > 0) {
      for (int i = 0; i + 1 < nd; ++i) sf_shape[i] = tx.shape[i];
      sf_shape[nd - 1] = k / 16;
      sf_nd = nd;
    }
    nb::object rsf = args.output_or_new(sf, sf_shape, sf_nd, "uint8", &tsf);
    nb::object rg;
    if (global_scale.is_none()) {
      const int64_t one[1] = {1};
      rg = args.allocate(one, 1, "float32", &tg);
    } else {
      rg = nb::borrow(global_scale);
      tg = compute_global_scale ? args.output(global_scale, "global_scale") : args.input(global_scale, "global_scale");
    }
    const nvfp4_exec_t e = args.exec(stream, backend);
    CALL(nvfp4_quantize(&tx, &tq, &tsf, sf_layout, &tg, (compute_global_scale || global_scale.is_none()) ? 1 : 0, &e));
    return nb::make_tuple(rq, rsf, rg);
  }, nb::arg("x").none(), nb::arg("q").none(), nb::arg("sf").none(), nb::arg("global_scale").none(),
     nb::arg("compute_global_scale"), nb::arg("layout"), nb::arg("stream").none(), nb::arg("backend"),
     nb::arg("alloc").none());

  m.def("dequantize", [](nb::handle q, nb::handle sf, nb::handle global_scale, const char* layout, const char* dtype,
                         nb::handle out, nb::handle stream, const char* backend, nb::handle alloc) {
    OpArgs args("dequantize", alloc);
    nvfp4_tensor_t tq = args.input(q, "q"), tsf = args.input(sf, "sf"), to;
    const nvfp4_scalar_t s = args.scalar(global_scale, "global_scale");
    int64_t shape[NVFP4_MAX_DIMS] = {};
    for (int i = 0; i < tq.ndim; ++i) shape[i] = tq.shape[i];
    if (tq.ndim > 0) shape[tq.ndim - 1] *= 2;
    nb::object result =
        args.output_or_new(out, shape, tq.ndim > 0 ? tq.ndim : -1, float_dtype("dequantize", "dtype", dtype), &to);
    const nvfp4_exec_t e = args.exec(stream, backend);
    CALL(nvfp4_dequantize(&tq, &tsf, parse_layout(layout), s, &to, &e));
    return result;
  }, nb::arg("q").none(), nb::arg("sf").none(), nb::arg("global_scale").none(), nb::arg("layout"), nb::arg("dtype"),
     nb::arg("out").none(), nb::arg("stream").none(), nb::arg("backend"), nb::arg("alloc").none());

  m.def("swizzle_scales", [](nb::handle sf, nb::handle out, nb::handle stream, const char* backend, nb::handle alloc) {
    OpArgs args("swizzle_scales", alloc);
    nvfp4_tensor_t ts = args.input(sf, "sf"), to;
    int64_t shape[2] = {};
    int nd = -1;
    if (ts.ndim == 2 || ts.ndim == 3) {
      const int64_t n = nvfp4_blocked_scale_bytes(ts.shape[ts.ndim - 2], 16 * ts.shape[ts.ndim - 1]);
      nd = ts.ndim - 1;
      shape[0] = nd == 2 ? ts.shape[0] : n;
      shape[1] = n;
    }
    nb::object result = args.output_or_new(out, shape, nd, "uint8", &to);
    const nvfp4_exec_t e = args.exec(stream, backend);
    CALL(nvfp4_swizzle_scales(&ts, &to, &e));
    return result;
  }, nb::arg("sf").none(), nb::arg("out").none(), nb::arg("stream").none(), nb::arg("backend"),
     nb::arg("alloc").none());

  // rows, k: the linear tensor's rows and K elements (the caller checked k % 16 == 0).
  m.def("unswizzle_scales", [](nb::handle sf_blocked, int64_t rows, int64_t k, nb::handle out, nb::handle stream,
                               const char* backend, nb::handle alloc) {
    OpArgs args("unswizzle_scales", alloc);
    nvfp4_tensor_t ts = args.input(sf_blocked, "sf_blocked"), to;
    int64_t shape[3] = {ts.shape[0], rows, k / 16};
    int nd = 2;
    if (ts.ndim != 2) {
      shape[0] = rows;
      shape[1] = k / 16;
    } else {
      nd = 3;
    }
    nb::object result = args.output_or_new(out, shape, nd, "uint8", &to);
    const nvfp4_exec_t e = args.exec(stream, backend);
    CALL(nvfp4_unswizzle_scales(&ts, &to, &e));
    return result;
  }, nb::arg("sf_blocked").none(), nb::arg("rows"), nb::arg("k"), nb::arg("out").none(), nb::arg("stream").none(),
     nb::arg("backend"), nb::arg("alloc").none());
}
