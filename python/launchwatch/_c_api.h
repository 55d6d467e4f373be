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

typedef int (*launchwatch_set_launch_scope_hook_fn)(void (*)(void));

/* launchwatch_set_launch_scope_hook, where the library has it (NULL: an older one, or not loaded):
 * the sequence route (_c_sequence.c) needs it. */
extern launchwatch_set_launch_scope_hook_fn launchwatch_py_set_launch_scope_hook;

/* `name` as the C API takes it: a bytes object's buffer, or NULL with a TypeError. */
const char* launchwatch_py_range_name(PyObject* name);

/* `depth` as launchwatch_range_pop_to takes it (past int's range: clamped), or -1 with an error
 * set (check PyErr_Occurred). */
int launchwatch_py_depth(PyObject* depth);

/* Adds the hooks' members (hooks_setup, set_native_sink, forward_pre, forward_post, NodeHook) to
 * `module`; 0, or -1 with an exception set. */
int launchwatch_py_add_hooks(PyObject* module);

/* The sequence route (_c_sequence.c): a module's backward found from the sequence numbers of the
 * graph nodes its forward made, where torch lets it be read (torch.py's _start_sequence_route
 * says when). The forward hooks (_c_hooks.c) ask launchwatch_py_sequence_route_here() how this
 * call's backward is found: recorded by the route (route_records), by graph-node hooks
 * (route_off: the route is off, or this is a forward on another thread than the one whose calls
 * it records, outside any backward pass, which turns it off for good), or not at all
 * (route_recompute: a forward on another thread inside a graph node it runs for a backward pass,
 * activation checkpointing recomputing a forward); a
 * recorded call gets launchwatch_py_call_begins(path) (its index, or -1 where it could not be
 * recorded; never an exception) in its pre hook and launchwatch_py_call_ends(index) in its post
 * hook. Under the GIL. */
enum { route_off = 0, route_records = 1, route_recompute = 2 };
int launchwatch_py_sequence_route_here(void);
long launchwatch_py_call_begins(PyObject* path);
void launchwatch_py_call_ends(long index);

/* A recompute's calls (route_recompute), on this thread: each outermost call's ranges are opened
 * by launchwatch_py_recompute_root_pushes(path) (the running node's own backward ranges first,
 * then the module's path as its forward last had it, under the `backward` scope of the newest
 * pass not a recompute's, then `[recompute]`; the depth to pop to, or -1 where it cannot, and the
 * caller pushes as for any call; a new recompute forgets the calls of the one before), and each
 * call is recorded on this thread by launchwatch_py_recompute_call_begins(path) (its index, or
 * -1) and launchwatch_py_recompute_call_ends(index), for a backward() of the recompute on this
 * thread. Under the GIL; never an exception. */
long launchwatch_py_recompute_root_pushes(PyObject* path);
long launchwatch_py_recompute_call_begins(PyObject* path);
void launchwatch_py_recompute_call_ends(long index);

/* Closes the backward ranges the sequence route opened on this thread, if any: the graph-node
 * hooks call it before they open theirs (the route was turned off while its ranges were open). */
void launchwatch_py_forget_sequence_ranges(void);

/* Adds the sequence route's members (sequence_setup, sequence_offsets, pass_begins, pass_ends,
 * ...) to `module`; 0, or -1 with an exception set. */
int launchwatch_py_add_sequence(PyObject* module);

#endif
