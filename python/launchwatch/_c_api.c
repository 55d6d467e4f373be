/* launchwatch._c_api: the injection's C API (src/inject/c_api.hpp) as Python built-in functions,
 * and (_c_hooks.c, added to the module at import) torch.py's hooks in C.
 *
 * Why: the torch hooks (torch.py) open and close a range per module call forward and backward, and
 * on a host-bound step of small modules the calls themselves were the hooks' largest cost when made
 * through ctypes (about 0.5 us each: argument conversion, a GIL release and re-take, libffi); a
 * built-in function taking its arguments by METH_FASTCALL costs tens of nanoseconds
 * (docs/benchmarks.md, bench/torch/hook_cost.py). _sink.py uses this module when it loads and
 * falls back to ctypes when it does not (no compiler or Python headers at build time, a Python
 * older than 3.10).
 *
 * Built for CPython's stable ABI (abi3, Py_LIMITED_API 3.10: METH_FASTCALL is in it from 3.10),
 * so one build loads on every CPython from 3.10 on. It links nothing but libc: the C API is looked
 * up at run time in the injection library `launchwatch run` loaded (load(path)).
 *
 * Thread safety: the functions run with the GIL held (the C API takes only launchwatch's own
 * locks, never waits for Python, so holding it cannot deadlock); each thread has its own ranges.
 */
#include "_c_api.h"

#include <dlfcn.h>
#include <limits.h>

typedef int (*version_fn)(void);
typedef uint32_t (*current_path_fn)(void);

/* Set once by load() (under the GIL) and never cleared: the library stays loaded for good. */
launchwatch_push_fn launchwatch_py_push;
launchwatch_push_under_fn launchwatch_py_push_under;
launchwatch_pop_to_fn launchwatch_py_pop_to;
launchwatch_set_launch_scope_hook_fn launchwatch_py_set_launch_scope_hook;
static current_path_fn current_path_;

/* Looks `name` up in `library`; sets an OSError naming it when missing. */
static void* symbol(void* library, const char* path, const char* name) {
  void* found = dlsym(library, name);
  if (found == NULL) {
    PyErr_Format(PyExc_OSError, "%s has no %s: not a launchwatch injection library with the C API",
                 path, name);
  }
  return found;
}

static PyObject* load(PyObject* module, PyObject* path_object) {
  (void)module;
  PyObject* encoded = PyUnicode_EncodeFSDefault(path_object);
  if (encoded == NULL) return NULL;
  const char* path = PyBytes_AsString(encoded);
  if (path == NULL) {
    Py_DECREF(encoded);
    return NULL;
  }
  /* The injection library is loaded already (ctypes or NVTX opened it): this takes another
   * reference to the same copy, never released. */
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    PyErr_Format(PyExc_OSError, "cannot load %s: %s", path, dlerror());
    Py_DECREF(encoded);
    return NULL;
  }
  /* In order, stopping at the first missing, so the error names it. */
  version_fn version = NULL;
  launchwatch_push_fn push = NULL;
  launchwatch_push_under_fn push_under = NULL;
  launchwatch_pop_to_fn pop_to = NULL;
  current_path_fn current_path = NULL;
  if ((version = (version_fn)symbol(library, path, "launchwatch_c_api_version")) == NULL ||
      (push = (launchwatch_push_fn)symbol(library, path, "launchwatch_range_push")) == NULL ||
      (push_under = (launchwatch_push_under_fn)symbol(library, path,
                                                      "launchwatch_range_push_under")) == NULL ||
      (pop_to = (launchwatch_pop_to_fn)symbol(library, path, "launchwatch_range_pop_to")) == NULL ||
      (current_path = (current_path_fn)symbol(library, path, "launchwatch_current_path")) == NULL) {
    Py_DECREF(encoded);
    return NULL;
  }
  if (version() != 1) {
    PyErr_Format(PyExc_OSError, "%s has C API version %d; this package speaks version 1", path,
                 version());
    Py_DECREF(encoded);
    return NULL;
  }
  Py_DECREF(encoded);
  launchwatch_py_push = push;
  launchwatch_py_push_under = push_under;
  launchwatch_py_pop_to = pop_to;
  current_path_ = current_path;
  /* Optional: a library without it has no sequence route. */
  launchwatch_py_set_launch_scope_hook = (launchwatch_set_launch_scope_hook_fn)dlsym(
      library, "launchwatch_set_launch_scope_hook");
  Py_RETURN_NONE;
}

/* The library's functions, or a RuntimeError when load() has not succeeded. */
static int loaded(void) {
  if (launchwatch_py_push != NULL) return 1;
  PyErr_SetString(PyExc_RuntimeError, "launchwatch._c_api: call load(path) first");
  return 0;
}

/* `name` as the C API takes it: a bytes object's buffer (NUL-terminated by CPython). */
const char* launchwatch_py_range_name(PyObject* name) {
  if (!PyBytes_Check(name)) {
    PyErr_Format(PyExc_TypeError, "a range name is bytes, not %R", (PyObject*)Py_TYPE(name));
    return NULL;
  }
  return PyBytes_AsString(name);
}

static PyObject* push(PyObject* module, PyObject* name) {
  (void)module;
  if (!loaded()) return NULL;
  const char* text = launchwatch_py_range_name(name);
  if (text == NULL) return NULL;
  return PyLong_FromLong(launchwatch_py_push(text));
}

static PyObject* push_under(PyObject* module, PyObject* const* args, Py_ssize_t count) {
  (void)module;
  if (!loaded()) return NULL;
  if (count != 2) {
    PyErr_Format(PyExc_TypeError, "push_under(parent, name) takes 2 arguments, not %zd", count);
    return NULL;
  }
  const unsigned long parent = PyLong_AsUnsignedLong(args[0]);
  if (parent == (unsigned long)-1 && PyErr_Occurred()) return NULL;
  if (parent > UINT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, "a path id is a 32-bit unsigned integer");
    return NULL;
  }
  const char* text = launchwatch_py_range_name(args[1]);
  if (text == NULL) return NULL;
  return PyLong_FromLong(launchwatch_py_push_under((uint32_t)parent, text));
}

int launchwatch_py_depth(PyObject* depth_object) {
  const long depth = PyLong_AsLong(depth_object);
  if (depth == -1 && PyErr_Occurred()) return -1;
  /* Depths past int's range mean "pop nothing", as the hooks' pop_to(1 << 30) does. */
  return depth > INT_MAX ? INT_MAX : depth < INT_MIN ? INT_MIN : (int)depth;
}

static PyObject* pop_to(PyObject* module, PyObject* depth_object) {
  (void)module;
  if (!loaded()) return NULL;
  const int depth = launchwatch_py_depth(depth_object);
  if (depth == -1 && PyErr_Occurred()) return NULL;
  return PyLong_FromLong(launchwatch_py_pop_to(depth));
}

static PyObject* current_path(PyObject* module, PyObject* unused) {
  (void)module;
  (void)unused;
  if (!loaded()) return NULL;
  return PyLong_FromUnsignedLong(current_path_());
}

static PyMethodDef methods[] = {
    {"load", load, METH_O,
     "load(path): looks the C API up in the injection library at `path` (already loaded by\n"
     "`launchwatch run`); OSError when it has none or another version."},
    {"push", push, METH_O, "push(name: bytes) -> depth: launchwatch_range_push."},
    {"push_under", (PyCFunction)(void (*)(void))push_under, METH_FASTCALL,
     "push_under(parent: int, name: bytes) -> depth: launchwatch_range_push_under."},
    {"pop_to", pop_to, METH_O, "pop_to(depth: int) -> ranges left: launchwatch_range_pop_to."},
    {"current_path", current_path, METH_NOARGS,
     "current_path() -> int: launchwatch_current_path."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef definition = {
    PyModuleDef_HEAD_INIT, "launchwatch._c_api",
    "The injection's C API (src/inject/c_api.hpp) as built-in functions; _sink.py uses it.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__c_api(void) {
  PyObject* module = PyModule_Create(&definition);
  if (module != NULL &&
      (launchwatch_py_add_hooks(module) != 0 || launchwatch_py_add_sequence(module) != 0)) {
    Py_CLEAR(module);
  }
  return module;
}
