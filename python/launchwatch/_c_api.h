/* What the two C files of launchwatch._c_api share: the injection's C API, looked up by load()
 * (_c_api.c), and the torch hooks' module members (_c_hooks.c), which call it directly when the
 * process's sink is the extension's own.
 *
 * Thread safety: the pointers are set once, under the GIL, before any hook can read them.
 */
#ifndef LAUNCHWATCH_PYTHON_C_API_H
#define LAUNCHWATCH_PYTHON_C_API_H

#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

typedef int (*launchwatch_push_fn)(const char*);
typedef int (*launchwatch_push_under_fn)(uint32_t, const char*);
typedef int (*launchwatch_pop_to_fn)(int);

/* The C API's range functions; NULL until load() succeeded. */
extern launchwatch_push_fn launchwatch_py_push;
extern launchwatch_push_under_fn launchwatch_py_push_under;
extern launchwatch_pop_to_fn launchwatch_py_pop_to;

/* `name` as the C API takes it: a bytes object's buffer, or NULL with a TypeError. */
const char* launchwatch_py_range_name(PyObject* name);

/* `depth` as launchwatch_range_pop_to takes it (past int's range: clamped), or -1 with an error
 * set (check PyErr_Occurred). */
int launchwatch_py_depth(PyObject* depth);

/* Adds the hooks' members (hooks_setup, set_native_sink, forward_pre, forward_post, NodeHook) to
 * `module`; 0, or -1 with an exception set. */
int launchwatch_py_add_hooks(PyObject* module);

#endif
