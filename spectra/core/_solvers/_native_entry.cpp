// The one-matrix entry without Python's dispatch: spectra.eigh(a) of one small plain CPU
// tensor in one call, from the tensor object to the (w, v) pair.
//
// The direct path's Python route (spectra/core/_pipeline/_direct.py, _solvers/_native.py)
// spends most of a small call on Python-level steps around one compiled call: reading the
// tensor's attributes, two output allocations through torch's Python binding (~0.9 us
// each), the addresses. Here the same tests are made on the C++ tensor, the outputs are
// allocated by ATen and the compiled solve (_native_eigh.c, through its capsule) runs on
// them: the same checks, solver, finiteness test and gauge, so the same bits
// (tests/core/test_native_entry.py). Whatever is not plain (a subclass, a lazy conjugate or
// negation, a functorch or dispatch-mode wrapper, history under grad mode, a torch-function
// or dispatch mode, another device, dtype or layout, n outside 1 .. max_n) returns None, and
// the Python route decides, as before. Matrices of max_n < n <= 255 (where LAPACK may
// thread) are taken with the GIL released, only at the sizes the Python route has found no
// strategy claiming (the routes table it marks; configure_threads), on the plan's kernel
// threads: one (the calling thread's OpenMP and MKL counts set and restored as _threads.py
// does) or, from the size where one matrix runs faster threaded, the caller's, as the
// table says. A handful of matrices: solve_few.
//
// It is built only where torch's headers are found at build time (setup.py), for that
// torch version; _native.py uses it only under the same version.
#include <Python.h>

#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/SavedTensorHooks.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/linalg_eigh.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cmath>
#include <exception>
#include <optional>
#include <tuple>

#include "_native_eigh.h"

#ifndef SPECTRA_TORCH_VERSION
#define SPECTRA_TORCH_VERSION "unknown"
#endif

namespace {

const spectra_native_api* api = nullptr;
double constants[4][5];  // per kind: tol, 1 - tol, (1 - tol)^2, low, high (the gauge's)
long max_n = 0;          // the largest n taken (0: not configured)
double degenerate_tol = 0.0;  // the backward's relative gap below which pairs count as tied
float degenerate_tol32 = 0.0f;  // the same for float32 (0: no float32 tracked route)
// the calling thread's OpenMP and MKL thread counts (the functions _threads.py sets them
// with; null: not found, and matrices of n > max_n are not taken), and the sizes the entry
// may take above max_n: routes[(kind * 2 + vectors) * 256 + n] is 1 (on one kernel
// thread) or 2 (on the caller's) where the Python route found no strategy claiming one
// such matrix, 0 otherwise (it marks them; zeroed when the registry changes)
int (*omp_get)() = nullptr;
void (*omp_set)(int) = nullptr;
int (*mkl_local)(int) = nullptr;
const unsigned char* routes = nullptr;
const int64_t routed_max_n = 255;

// one kernel thread for the calling thread while it lives (LAPACK may thread from n = 26:
// below the size the plan threads, one thread keeps a matrix's bits those it has in any
// batch), as _threads.py's
// set_thread_kernel_threads / restore_thread_kernel_threads
struct OneKernelThread {
  int old_omp = 1, old_mkl = 1;
  OneKernelThread() {
    (void)at::get_num_threads();  // torch's lazy per-thread setup first: it cannot undo ours
    old_omp = omp_get();
    if (old_omp != 1) omp_set(1);
    if (mkl_local != nullptr) old_mkl = mkl_local(1);
  }
  ~OneKernelThread() {
    if (old_omp != 1) omp_set(old_omp);
    if (mkl_local != nullptr && old_mkl != 1) mkl_local(old_mkl);
  }
};

const double tiny64 = 2.2250738585072014e-308;
const float tiny32 = 1.17549435e-38f;

// _backward_fast._row_separated: every gap of the ascending row above tol * scale (Python's
// max of max(row), -min(row) and the smallest normal; a NaN gap fails)
bool row_separated(const double* w, int64_t n) {
  if (n < 2) return true;
  double hi = w[0], lo = w[0];
  for (int64_t i = 1; i < n; i++) {
    if (w[i] > hi) hi = w[i];
    if (w[i] < lo) lo = w[i];
  }
  double scale = hi;
  if (-lo > scale) scale = -lo;
  if (tiny64 > scale) scale = tiny64;
  const double bound = degenerate_tol * scale;
  for (int64_t i = 1; i < n; i++)
    if (!(w[i] - w[i - 1] > bound)) return false;
  return true;
}

// _backward_fast.well_separated's float32 test (NumPy's, in float32: the gaps, the scale
// max(|w|) or the smallest normal, the bound float32(tol) * scale; a NaN fails)
bool row_separated32(const float* w, int64_t n) {
  if (n < 2) return true;
  float scale = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    const float x = std::fabs(w[i]);
    if (!(x <= scale)) scale = x;  // NaN propagates, as NumPy's max
  }
  if (tiny32 > scale) scale = tiny32;
  const float bound = degenerate_tol32 * scale;
  for (int64_t i = 1; i < n; i++) {
    const float gap = w[i] - w[i - 1];
    if (!(gap > bound)) return false;
  }
  return true;
}

bool all_finite(const double* w, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!std::isfinite(w[i])) return false;
  return true;
}

// a real matrix (kind 0: float32, 1: float64) that requires grad under grad mode: torch's
// own eigh node (the Python route's eigh_native), the gauge written into its output, the
// separation test; (w, v, separated) or None
PyObject* tracked(const at::Tensor& a, int kind, int64_t n, bool vectors, bool check) {
  const c10::DispatchKeySet included = c10::impl::tls_local_dispatch_key_set().included_;
  if (included.has(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
      included.has(c10::DispatchKey::FuncTorchDynamicLayerBackMode) ||
      at::SavedTensorDefaultHooks::get_hooks().has_value())
    Py_RETURN_NONE;  // a transform, or hooks that may pack v before the gauge
  if (check && !api->hermitian(kind, a.const_data_ptr(), n, a.stride(0), a.stride(1), 0))
    Py_RETURN_NONE;  // not exactly symmetric (or NaN): the full path decides
  at::Tensor w, v;
  if (n > max_n) {  // the plan's kernel threads (the caller's guard): other Python threads run
    Py_BEGIN_ALLOW_THREADS std::tie(w, v) = at::linalg_eigh(a, "L");
    Py_END_ALLOW_THREADS
  } else {
    std::tie(w, v) = at::linalg_eigh(a, "L");
  }
  const double* c = constants[kind];
  if (vectors && !api->gauge(kind, v.data_ptr(), n, n, c[0], c[1], c[2], c[3], c[4]))
    Py_RETURN_NONE;
  bool separated, finite = true;
  if (kind == 1) {
    const double* wd = w.const_data_ptr<double>();
    separated = row_separated(wd, n);
    if (check && !separated) finite = all_finite(wd, n);
  } else {
    const float* wf = w.const_data_ptr<float>();
    separated = row_separated32(wf, n);
    for (int64_t i = 0; check && !separated && i < n; i++) finite = finite && std::isfinite(wf[i]);
  }
  if (!finite) Py_RETURN_NONE;
  PyObject* out = PyTuple_New(3);
  if (out == nullptr) return nullptr;
  PyTuple_SET_ITEM(out, 0, THPVariable_Wrap(std::move(w)));
  PyTuple_SET_ITEM(out, 1, THPVariable_Wrap(std::move(v)));
  PyObject* flag = separated ? Py_True : Py_False;
  Py_INCREF(flag);
  PyTuple_SET_ITEM(out, 2, flag);
  return out;
}
c10::DispatchKeySet plain_keys, inference_keys;

// whether a torch-function or dispatch mode is active (it sees every op of the Python
// route: that route keeps them)
bool modes_active() {
  return c10::impl::TorchDispatchModeTLS::any_modes_set() ||
         at::impl::PythonTorchFunctionTLS::stack_len() > 0;
}

// the entry's answer: (w, v) with vectors, else (w, None)
PyObject* answer(at::Tensor&& w, at::Tensor&& v, bool vectors) {
  PyObject* out = PyTuple_New(2);
  if (out == nullptr) return nullptr;
  PyTuple_SET_ITEM(out, 0, THPVariable_Wrap(std::move(w)));
  if (vectors) {
    PyTuple_SET_ITEM(out, 1, THPVariable_Wrap(std::move(v)));
  } else {
    Py_INCREF(Py_None);
    PyTuple_SET_ITEM(out, 1, Py_None);
  }
  return out;
}

int kind_of(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float:
      return 0;
    case c10::ScalarType::Double:
      return 1;
    case c10::ScalarType::ComplexFloat:
      return 2;
    case c10::ScalarType::ComplexDouble:
      return 3;
    default:
      return -1;
  }
}

// configure(capsule, constants, max_n, degenerate_tol, degenerate_tol32): the compiled
// solve's table, the gauge's constants (four 5-tuples of floats, by kind), the largest n
// and the backward's float64 and float32 degenerate tolerances (0: no tracked route for
// that dtype); returns True
PyObject* configure(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 5) {
    PyErr_SetString(PyExc_TypeError, "configure takes 5 arguments");
    return nullptr;
  }
  auto* table = static_cast<const spectra_native_api*>(
      PyCapsule_GetPointer(args[0], "spectra.core._solvers._native_eigh.api"));
  if (table == nullptr) return nullptr;
  if (table->version != SPECTRA_NATIVE_API_VERSION) {
    PyErr_SetString(PyExc_RuntimeError, "the compiled helper's table has another version");
    return nullptr;
  }
  for (int k = 0; k < 4; k++) {
    PyObject* row = PySequence_GetItem(args[1], k);
    if (row == nullptr) return nullptr;
    for (int j = 0; j < 5; j++) {
      PyObject* x = PySequence_GetItem(row, j);
      if (x == nullptr) {
        Py_DECREF(row);
        return nullptr;
      }
      constants[k][j] = PyFloat_AsDouble(x);
      Py_DECREF(x);
    }
    Py_DECREF(row);
  }
  long limit = PyLong_AsLong(args[2]);
  double tol = PyFloat_AsDouble(args[3]);
  double tol32 = PyFloat_AsDouble(args[4]);
  if (PyErr_Occurred()) return nullptr;
  try {
    plain_keys = at::empty({1}, at::TensorOptions().dtype(at::kDouble)).key_set();
    {
      c10::InferenceMode guard;
      inference_keys = at::empty({1}, at::TensorOptions().dtype(at::kDouble)).key_set();
    }
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  api = table;
  max_n = limit;
  degenerate_tol = tol;
  degenerate_tol32 = static_cast<float>(tol32);  // NumPy's weak Python float: cast first
  Py_RETURN_TRUE;
}

// the arguments (a, vectors, check, closed) of the solve calls, where a is a plain CPU
// tensor of a solver dtype with dims dimensions (no lazy conjugate or negation, no
// wrapper) and none of the caller's modes is active; false: take the Python route
struct Call {
  const at::Tensor* a = nullptr;
  bool vectors = false, check = false, closed = false;
  int kind = -1;
};

bool read_call(PyObject* const* args, Py_ssize_t nargs, int64_t dims, Call* call) {
  if (nargs != 4 || max_n == 0 || !THPVariable_CheckExact(args[0])) return false;
  call->vectors = PyObject_IsTrue(args[1]) == 1;
  call->check = PyObject_IsTrue(args[2]) == 1;
  call->closed = PyObject_IsTrue(args[3]) == 1;
  const at::Tensor& a = THPVariable_Unpack(args[0]);
  if (!a.defined() || a.dim() != dims || !a.has_storage()) return false;
  const c10::DispatchKeySet keys = a.key_set();
  if (keys != plain_keys && keys != inference_keys) return false;  // conj, neg, wrappers
  call->kind = kind_of(a.scalar_type());
  call->a = &a;
  return call->kind >= 0 && !modes_active();  // a mode sees every op of the Python route
}

// solve(a, vectors, check, closed) -> (w, v or None), or None: take the Python route;
// closed: whether the plan solves n <= 3 by the closed form (else those return None).
// A real a (n >= 4) that requires grad under grad mode: (w, v, separated) from torch's
// own node (v gauged where vectors; the caller wraps a spectrum not separated); a complex
// one, or a real one of n <= 3 (the closed form): (w, v, None), the eigenpairs without
// history, which the caller puts under its light node.
PyObject* solve(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  try {
    Call call;
    if (!read_call(args, nargs, 2, &call)) Py_RETURN_NONE;
    const at::Tensor& a = *call.a;
    const bool vectors = call.vectors, check = call.check;
    const int kind = call.kind;
    const int64_t n = a.size(0);
    if (n != a.size(1) || n < 1 || n > routed_max_n) Py_RETURN_NONE;
    if (!call.closed && n <= 3) Py_RETURN_NONE;  // the plan's LAPACK: Python's route
    // from max_n + 1 (where LAPACK may thread): where no strategy claims such a matrix
    // (the claims are made for eigenvectors where history is kept), on the plan's threads
    const bool tracking = a.requires_grad() && c10::GradMode::is_enabled();
    std::optional<OneKernelThread> one;
    if (n > max_n) {
      const int flag = (vectors || tracking) ? 1 : 0;
      const unsigned char route = routes == nullptr ? 0 : routes[(kind * 2 + flag) * 256 + n];
      if (omp_set == nullptr || (route != 1 && route != 2)) Py_RETURN_NONE;
      if (route == 1) one.emplace();
    }
    bool light = false;  // eigenpairs for Python's light node (_autograd_one.with_backward)
    if (tracking) {  // the tracked routes
      if (kind <= 1 && n > 3) {
        const bool has_tol = kind == 1 ? degenerate_tol > 0.0 : degenerate_tol32 > 0.0f;
        if (!has_tol) Py_RETURN_NONE;
        return tracked(a, kind, n, vectors, check);
      }
      // complex, or the closed form's n <= 3: solved without history, with vectors (the
      // backward needs them), under no torch.func transform (its rule is the full path's)
      const c10::DispatchKeySet included = c10::impl::tls_local_dispatch_key_set().included_;
      if (included.has(c10::DispatchKey::FuncTorchDynamicLayerFrontMode) ||
          included.has(c10::DispatchKey::FuncTorchDynamicLayerBackMode))
        Py_RETURN_NONE;
      light = true;
    }
    const bool want_v = vectors || light;
    const auto real = (kind == 0 || kind == 2) ? at::kFloat : at::kDouble;
    at::Tensor w = at::empty({n}, at::TensorOptions().dtype(real));
    at::Tensor v;
    if (want_v) v = at::empty_strided({n, n}, {1, n}, at::TensorOptions().dtype(a.scalar_type()));
    const double* c = constants[kind];
    const void* ap = a.const_data_ptr();
    void* wp = w.data_ptr();
    void* vp = want_v ? v.data_ptr() : nullptr;
    const int64_t s0 = a.stride(0), s1 = a.stride(1);
    int status;
    if (n > max_n) {  // other Python threads run meanwhile
      Py_BEGIN_ALLOW_THREADS status = api->eigh(kind, static_cast<int>(n), ap, s0, s1, wp, vp,
                                                check, c[0], c[1], c[2], c[3], c[4]);
      Py_END_ALLOW_THREADS
    } else {
      status = api->eigh(kind, static_cast<int>(n), ap, s0, s1, wp, vp, check, c[0], c[1], c[2],
                         c[3], c[4]);
    }
    if (status != ST_OK) Py_RETURN_NONE;  // refused, failed or ungauged: the Python route
    if (light) {  // (w, v, None): Python puts them under its light node
      PyObject* out = PyTuple_New(3);
      if (out == nullptr) return nullptr;
      PyTuple_SET_ITEM(out, 0, THPVariable_Wrap(std::move(w)));
      PyTuple_SET_ITEM(out, 1, THPVariable_Wrap(std::move(v)));
      Py_INCREF(Py_None);
      PyTuple_SET_ITEM(out, 2, Py_None);
      return out;
    }
    return answer(std::move(w), std::move(v), vectors);
  } catch (const std::exception&) {
    Py_RETURN_NONE;  // e.g. an allocation failure: the Python route reports it
  }
}

// solve_few(a, vectors, check, closed) -> (w, v or None), or None: take the Python route.
// A handful of matrices, (b, n, n) contiguous, that the caller's plan runs directly (the
// caller has asked the planner): without history under grad mode, every matrix solved as
// the single-matrix entry solves one (the compiled batch loop, _native.native_solve_batch's
// call), outputs allocated here. Anything not plain, a matrix not the helper's, or one
// that requires grad under grad mode returns None, and the Python route decides.
PyObject* solve_few(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  try {
    Call call;
    if (!read_call(args, nargs, 3, &call)) Py_RETURN_NONE;
    const at::Tensor& a = *call.a;
    const bool vectors = call.vectors, check = call.check;
    const int kind = call.kind;
    const int64_t b = a.size(0), n = a.size(1);
    if (n != a.size(2) || n < 1 || n > max_n || b < 1 || !a.is_contiguous()) Py_RETURN_NONE;
    if (!call.closed && n <= 3) Py_RETURN_NONE;  // the plan's LAPACK: Python's route
    if (a.requires_grad() && c10::GradMode::is_enabled()) Py_RETURN_NONE;
    const auto real = (kind == 0 || kind == 2) ? at::kFloat : at::kDouble;
    at::Tensor w = at::empty({b, n}, at::TensorOptions().dtype(real));
    at::Tensor v;
    if (vectors)
      v = at::empty_strided({b, n, n}, {n * n, 1, n}, at::TensorOptions().dtype(a.scalar_type()));
    const double* c = constants[kind];
    const void* ap = a.const_data_ptr();
    void* wp = w.data_ptr();
    void* vp = vectors ? v.data_ptr() : nullptr;
    ptrdiff_t index = -1;
    int status;
    if (b * n * n * n >= 4096) {  // other Python threads run meanwhile
      Py_BEGIN_ALLOW_THREADS status =
          api->eigh_batch(kind, b, static_cast<int>(n), ap, n * n, a.stride(1), a.stride(2), wp,
                          vp, check, c[0], c[1], c[2], c[3], c[4], &index);
      Py_END_ALLOW_THREADS
    } else {
      status = api->eigh_batch(kind, b, static_cast<int>(n), ap, n * n, a.stride(1),
                               a.stride(2), wp, vp, check, c[0], c[1], c[2], c[3], c[4], &index);
    }
    if (status != ST_OK) Py_RETURN_NONE;  // refused, failed or ungauged: the Python route
    return answer(std::move(w), std::move(v), vectors);
  } catch (const std::exception&) {
    Py_RETURN_NONE;  // e.g. an allocation failure: the Python route reports it
  }
}

// configure_threads(omp_set, omp_get, mkl_local, routes): the addresses of the thread-count
// functions (mkl_local 0: none) and of the routes table (4 x 2 x 256 bytes, kept alive by
// the caller); returns True
PyObject* configure_threads(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "configure_threads takes 4 arguments");
    return nullptr;
  }
  void* set = PyLong_AsVoidPtr(args[0]);
  void* get = PyLong_AsVoidPtr(args[1]);
  void* local = PyLong_AsVoidPtr(args[2]);
  void* table = PyLong_AsVoidPtr(args[3]);
  if (PyErr_Occurred()) return nullptr;
  if (set == nullptr || get == nullptr || table == nullptr) {
    PyErr_SetString(PyExc_ValueError, "configure_threads: omp_set, omp_get and routes needed");
    return nullptr;
  }
  omp_set = reinterpret_cast<void (*)(int)>(set);
  omp_get = reinterpret_cast<int (*)()>(get);
  mkl_local = reinterpret_cast<int (*)(int)>(local);
  routes = static_cast<const unsigned char*>(table);
  Py_RETURN_TRUE;
}

PyMethodDef methods[] = {
    {"configure", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(configure)),
     METH_FASTCALL,
     "configure(capsule, constants, max_n, degenerate_tol, degenerate_tol32) -> True"},
    {"solve", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(solve)), METH_FASTCALL,
     "solve(a, vectors, check, closed) -> (w, v or None), (w, v, separated) or None"},
    {"configure_threads",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(configure_threads)),
     METH_FASTCALL, "configure_threads(omp_set, omp_get, mkl_local, routes) -> True"},
    {"solve_few", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(solve_few)),
     METH_FASTCALL, "solve_few(a, vectors, check, closed) -> (w, v or None) or None"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_native_entry",
    "The one-matrix entry without Python's dispatch (see _native.py).",
    -1,
    methods,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

}  // namespace

PyMODINIT_FUNC PyInit__native_entry(void) {
  PyObject* m = PyModule_Create(&module);
  if (m == nullptr) return nullptr;
  if (PyModule_AddStringConstant(m, "torch_version", SPECTRA_TORCH_VERSION) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
