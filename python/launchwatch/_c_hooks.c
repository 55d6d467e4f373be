/* launchwatch._c_api's torch hooks: torch.py's forward pre and post hooks and its graph-node
 * pre hook (_NodeHook), written in C.
 *
 * Why: on a host-bound step of many small modules the hooks' own Python was their largest cost
 * (about 2.6 us a module call forward and 5-7 us for each graph node's hook in backward, on
 * torch 1.13: docs/benchmarks.md, "Hooks in C"). These are line for line torch.py's
 * _forward_pre, _forward_post, _hook_graph, _node_hook (with _add_node_hook) and
 * _NodeHook.__call__ with its _this_pass, _open_backward and _close_backward_to, on the same
 * Python state (torch.py's `_thread`, `_states`, `_passes`, the _Module objects, the forward and
 * backward lists), so the Python implementation (the fallback where this module does not load)
 * and this one behave alike, may run in one process, and torch.py's rarer paths (a module's first
 * call, a call closed out of order, nested outputs, the end of a backward pass) stay Python: the
 * hooks call them back.
 * Ranges go straight to the injection's C API when the process's sink is the extension's own
 * (set_native_sink), else through the sink's Python methods (a test's recording sink, ctypes).
 *
 * Thread safety: every function runs with the GIL held; per-thread state is `_thread`'s.
 */
#include "_c_api.h"

/* torch.py's objects, set once by hooks_setup() (under the GIL), never released. */
static struct {
  PyObject* sink_module;   /* launchwatch._sink: its `current` and get() */
  PyObject* sink_get;      /* _sink.get */
  PyObject* native_sink;   /* the sink whose calls are the C API's own (None: none) */
  PyObject* thread;        /* _thread: forward, backward, generation, callback_queued, ... */
  PyObject* states;        /* _states: id(module) -> _Module */
  PyObject* passes;        /* _passes: (generation, caller path, caller thread) */
  PyObject* new_state;     /* _new_module_state(module, parent_call) */
  PyObject* close_forward; /* _close_forward(module) */
  PyObject* input_nodes;   /* _input_nodes(args) */
  PyObject* graph_nodes;   /* _graph_nodes(value, nodes) */
  PyObject* queue_end;     /* _queue_end_of_pass(generation) */
  PyObject* grad_enabled;  /* torch.is_grad_enabled */
  PyObject* tensor;        /* torch.Tensor */
  PyObject* compiling;     /* Dynamo's is_compiling, or None where torch has no Dynamo */
  PyObject* new_carrier;   /* _new_carrier(): this thread's carrier, made (None: no direct route) */
  PyObject* direct_route;  /* _direct_route: [True] until torch refuses the direct route */
} ctx;

static PyTypeObject* node_hook_type;

/* Attribute names, interned once. */
static PyObject *s_current, *s_active, *s_push, *s_push_under, *s_pop_to, *s_forward, *s_backward,
    *s_generation, *s_callback_queued, *s_node, *s_hooked, *s_parent, *s_first, *s_rest, *s_path,
    *s_grad_fn, *s_register_prehook, *s_entries, *s_carrier, *s_backward_hooks,
    *s_register_hook_dict;
static PyObject* zero; /* the carrier's output number, the hook dict's one key */
static PyObject* everything; /* pop_to(1 << 30): pops nothing, says how many ranges are open */

typedef struct {
  PyObject_HEAD
  PyObject* entries; /* (True, call): a forward call's backward begins; (False, call): ended */
} node_hook;

static int ready(void) {
  if (ctx.thread != NULL) return 1;
  PyErr_SetString(PyExc_RuntimeError, "launchwatch._c_api: call hooks_setup(...) first");
  return 0;
}

/* ---- the sink -------------------------------------------------------------------------------- */

/* `_sink.current or _sink.get()`: a new reference, or NULL with an exception. */
static PyObject* current_sink(void) {
  PyObject* sink = PyObject_GetAttr(ctx.sink_module, s_current);
  if (sink == NULL) return NULL;
  const int truth = PyObject_IsTrue(sink);
  if (truth < 0) {
    Py_DECREF(sink);
    return NULL;
  }
  if (truth) return sink;
  Py_DECREF(sink);
  return PyObject_CallNoArgs(ctx.sink_get);
}

/* Whether `sink` records: 1, 0, or -1 with an exception. */
static int sink_active(PyObject* sink) {
  if (sink == ctx.native_sink) return 1;
  PyObject* active = PyObject_GetAttr(sink, s_active);
  if (active == NULL) return -1;
  const int truth = PyObject_IsTrue(active);
  Py_DECREF(active);
  return truth;
}

/* sink.push(name): the depth, a new reference. */
static PyObject* sink_push(PyObject* sink, PyObject* name) {
  if (sink == ctx.native_sink) {
    const char* text = launchwatch_py_range_name(name);
    return text == NULL ? NULL : PyLong_FromLong(launchwatch_py_push(text));
  }
  return PyObject_CallMethodObjArgs(sink, s_push, name, NULL);
}

/* sink.push_under(parent, name): the depth, a new reference. */
static PyObject* sink_push_under(PyObject* sink, PyObject* parent, PyObject* name) {
  if (sink == ctx.native_sink) {
    const unsigned long path = PyLong_AsUnsignedLong(parent);
    if (path == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    if (path > UINT32_MAX) {
      PyErr_SetString(PyExc_OverflowError, "a path id is a 32-bit unsigned integer");
      return NULL;
    }
    const char* text = launchwatch_py_range_name(name);
    return text == NULL ? NULL
                        : PyLong_FromLong(launchwatch_py_push_under((uint32_t)path, text));
  }
  return PyObject_CallMethodObjArgs(sink, s_push_under, parent, name, NULL);
}

/* sink.pop_to(depth): what it returned, a new reference. */
static PyObject* sink_pop_to(PyObject* sink, PyObject* depth) {
  if (sink == ctx.native_sink) {
    const int to = launchwatch_py_depth(depth);
    if (to == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLong(launchwatch_py_pop_to(to));
  }
  return PyObject_CallMethodObjArgs(sink, s_pop_to, depth, NULL);
}

/* sink.pop_to(depth) on the current sink; 0, or -1 with an exception. */
static int pop_current_to(PyObject* depth) {
  PyObject* sink = current_sink();
  if (sink == NULL) return -1;
  PyObject* left = sink_pop_to(sink, depth);
  Py_DECREF(sink);
  if (left == NULL) return -1;
  Py_DECREF(left);
  return 0;
}

/* ---- helpers --------------------------------------------------------------------------------- */

/* isinstance(value, torch.Tensor): 1, 0, or -1 with an exception. */
static int is_tensor(PyObject* value) {
  if ((PyObject*)Py_TYPE(value) == ctx.tensor) return 1;
  return PyObject_IsInstance(value, ctx.tensor);
}

/* A tuple's or a list's length and items (borrowed): the node lists torch.py builds are one or
 * the other. */
static Py_ssize_t sequence_size(PyObject* sequence) {
  return PyTuple_Check(sequence) ? PyTuple_Size(sequence) : PyList_Size(sequence);
}

static PyObject* sequence_item(PyObject* sequence, Py_ssize_t index) {
  return PyTuple_Check(sequence) ? PyTuple_GetItem(sequence, index)
                                 : PyList_GetItem(sequence, index);
}

/* torch.py's _holds: whether `nodes` holds `node` itself. */
static int holds(PyObject* nodes, PyObject* node) {
  const Py_ssize_t size = sequence_size(nodes);
  for (Py_ssize_t i = 0; i < size; ++i) {
    if (sequence_item(nodes, i) == node) return 1;
  }
  return 0;
}

/* torch.is_grad_enabled(): 1, 0, or -1 with an exception. */
static int grad_enabled(void) {
  PyObject* enabled = PyObject_CallNoArgs(ctx.grad_enabled);
  if (enabled == NULL) return -1;
  const int truth = PyObject_IsTrue(enabled);
  Py_DECREF(enabled);
  return truth;
}

/* ---- forward --------------------------------------------------------------------------------- */

/* torch.py's _input_nodes: a module taking one tensor without a call back into Python. */
static PyObject* input_nodes(PyObject* args) {
  if (PyTuple_Check(args) && PyTuple_Size(args) == 1) {
    PyObject* arg = PyTuple_GetItem(args, 0);
    const int tensor = is_tensor(arg);
    if (tensor < 0) return NULL;
    if (tensor) {
      PyObject* node = PyObject_GetAttr(arg, s_grad_fn);
      if (node == NULL) return NULL;
      PyObject* nodes = node == Py_None ? PyTuple_New(0) : PyTuple_Pack(1, node);
      Py_DECREF(node);
      return nodes;
    }
  }
  return PyObject_CallFunctionObjArgs(ctx.input_nodes, args, NULL);
}

/* torch.py's _forward_pre; where the sequence route records this thread's calls, the call's record
   in place of its input nodes (its caller, the wrapped Module.__call__ or annotate()'s per-module
   hook, checks Dynamo first, where torch has it). */
static PyObject* forward_pre(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 2) {
    PyErr_Format(PyExc_TypeError, "forward_pre(module, args) takes 2 arguments, not %zd", argc);
    return NULL;
  }
  if (!ready()) return NULL;
  PyObject* module = argv[0];
  PyObject *result = NULL, *sink = NULL, *forward = NULL, *parent_call = NULL, *key = NULL,
           *state = NULL, *first = NULL, *rest = NULL, *depth = NULL, *nodes = NULL, *entry = NULL,
           *path = NULL;
  if ((sink = current_sink()) == NULL) goto done;
  const int active = sink_active(sink);
  if (active <= 0) {
    if (active == 0) result = Py_NewRef(Py_None);
    goto done;
  }
  if ((forward = PyObject_GetAttr(ctx.thread, s_forward)) == NULL) goto done;
  const Py_ssize_t open = PyList_Size(forward);
  if (open < 0) goto done;
  parent_call = open > 0 ? PyList_GetItem(forward, open - 1) : Py_None;
  Py_INCREF(parent_call);
  PyObject* parent_state = open > 0 ? PyTuple_GetItem(parent_call, 1) : Py_None;
  if (parent_state == NULL || (key = PyLong_FromVoidPtr(module)) == NULL) goto done;
  const int grad = grad_enabled();
  if (grad < 0) goto done;
  const int route = grad && sink == ctx.native_sink ? launchwatch_py_sequence_route_here()
                                                    : route_off;
  /* A recompute's outermost call keeps the state its module's forward last had, and so its path
   * (no open call on this thread would make it a root). */
  const int recompute_root = route == route_recompute && open == 0;
  state = PyDict_GetItemWithError(ctx.states, key);
  if (state != NULL) {
    Py_INCREF(state);
    PyObject* parent = PyObject_GetAttr(state, s_parent);
    if (parent == NULL) goto done;
    Py_DECREF(parent); /* only its identity is compared; the state holds it */
    if (parent != parent_state && !recompute_root) Py_CLEAR(state);
  } else if (PyErr_Occurred()) {
    goto done;
  }
  if (state == NULL &&
      (state = PyObject_CallFunctionObjArgs(ctx.new_state, module, parent_call, NULL)) == NULL) {
    goto done;
  }
  if ((first = PyObject_GetAttr(state, s_first)) == NULL) goto done;
  if (recompute_root) {
    if ((path = PyObject_GetAttr(state, s_path)) == NULL) goto done;
    const long pushed = launchwatch_py_recompute_root_pushes(path);
    if (pushed >= 0 && (depth = PyLong_FromLong(pushed)) == NULL) goto done;
  }
  if (depth != NULL) {
    /* pushed under the pass's `backward` scope */
  } else if (first == Py_None) {
    if ((depth = sink_pop_to(sink, everything)) == NULL) goto done;
  } else {
    if ((depth = sink_push(sink, first)) == NULL) goto done;
    if ((rest = PyObject_GetAttr(state, s_rest)) == NULL) goto done;
    const Py_ssize_t names = sequence_size(rest);
    if (names < 0) goto done;
    for (Py_ssize_t i = 0; i < names; ++i) {
      PyObject* pushed = sink_push(sink, sequence_item(rest, i));
      if (pushed == NULL) goto done;
      Py_DECREF(pushed);
    }
  }
  if (route != route_off) {
    /* The sequence route (_c_sequence.c): (module, state, depth, None, the call's index), and
     * True after them for a recompute's call. No node is hooked. */
    if (path == NULL && (path = PyObject_GetAttr(state, s_path)) == NULL) goto done;
    const long call = route == route_records
                          ? launchwatch_py_call_begins(path)
                          : launchwatch_py_recompute_call_begins(path);
    PyObject* index = PyLong_FromLong(call);
    if (index == NULL) goto done;
    entry = route == route_records ? PyTuple_Pack(5, module, state, depth, Py_None, index)
                                   : PyTuple_Pack(6, module, state, depth, Py_None, index, Py_True);
    Py_DECREF(index);
    if (entry == NULL) goto done;
  } else {
    nodes = grad ? input_nodes(argv[1]) : Py_NewRef(Py_None);
    if (nodes == NULL || (entry = PyTuple_Pack(4, module, state, depth, nodes)) == NULL) goto done;
  }
  if (PyList_Append(forward, entry) == 0) result = Py_NewRef(Py_None);
done:
  Py_XDECREF(entry);
  Py_XDECREF(nodes);
  Py_XDECREF(path);
  Py_XDECREF(depth);
  Py_XDECREF(rest);
  Py_XDECREF(first);
  Py_XDECREF(state);
  Py_XDECREF(key);
  Py_XDECREF(parent_call);
  Py_XDECREF(forward);
  Py_XDECREF(sink);
  return result;
}

/* The direct route of torch.py's _add_node_hook: `hook` on `node` through this thread's carrier's
 * hook dict; 0, or 1 where it failed (torch refused it, or no carrier could be made; no exception
 * left: the caller falls back, and the program's forward goes on). */
static int add_through_carrier(PyObject* node, PyObject* hook) {
  PyObject* carrier = PyObject_GetAttr(ctx.thread, s_carrier);
  if (carrier == Py_None) {
    Py_DECREF(carrier);
    carrier = PyObject_CallNoArgs(ctx.new_carrier);
  }
  PyObject* hooks = carrier != NULL ? PyDict_New() : NULL;
  PyObject* added = NULL;
  if (hooks != NULL && PyDict_SetItem(hooks, zero, hook) == 0 &&
      PyObject_SetAttr(carrier, s_backward_hooks, hooks) == 0) {
    added = PyObject_CallMethodObjArgs(node, s_register_hook_dict, carrier, NULL);
  }
  const int status = added != NULL ? 0 : 1;
  if (status == 1) PyErr_Clear();
  Py_XDECREF(added);
  Py_XDECREF(hooks);
  Py_XDECREF(carrier);
  return status;
}

/* torch.py's _add_node_hook: `hook` on `node` as a pre hook; 0, or -1 with an exception. */
static int add_node_hook(PyObject* node, PyObject* hook) {
  if (ctx.new_carrier != Py_None && PyObject_IsTrue(PyList_GetItem(ctx.direct_route, 0)) == 1) {
    if (add_through_carrier(node, hook) == 0) return 0;
    if (PyList_SetItem(ctx.direct_route, 0, Py_NewRef(Py_False)) != 0) return -1;
  }
  PyObject* handle = PyObject_CallMethodObjArgs(node, s_register_prehook, hook, NULL);
  Py_XDECREF(handle);
  return handle == NULL ? -1 : 0;
}

/* torch.py's _node_hook: the hook on `node` (borrowed from `hooked`, this thread's), registered
 * on its first call while the outermost forward runs; NULL with an exception. */
static PyObject* node_hook_of(PyObject* hooked, PyObject* node) {
  PyObject *hook = NULL, *pair = NULL;
  PyObject* key = PyLong_FromVoidPtr(node);
  if (key == NULL) goto done;
  PyObject* found = PyDict_GetItemWithError(hooked, key);
  if (found != NULL) {
    hook = PyTuple_GetItem(found, 1);
    goto done;
  }
  if (PyErr_Occurred()) goto done;
  PyObject* made = PyObject_CallNoArgs((PyObject*)node_hook_type);
  if (made == NULL) goto done;
  if (add_node_hook(node, made) == 0 && (pair = PyTuple_Pack(2, node, made)) != NULL &&
      PyDict_SetItem(hooked, key, pair) == 0) {
    hook = made; /* `hooked` holds it now */
  }
  Py_DECREF(made);
done:
  Py_XDECREF(pair);
  Py_XDECREF(key);
  return hook;
}

/* Appends (begins, call) to `node`'s hook; 0, or -1 with an exception. */
static int add_entry(PyObject* hooked, PyObject* node, PyObject* begins, PyObject* call) {
  PyObject* hook = node_hook_of(hooked, node);
  if (hook == NULL) return -1;
  PyObject* entries = Py_TYPE(hook) == node_hook_type
                          ? Py_NewRef(((node_hook*)hook)->entries)
                          : PyObject_GetAttr(hook, s_entries);
  if (entries == NULL) return -1;
  PyObject* entry = PyTuple_Pack(2, begins, call);
  const int failed = entry == NULL || PyList_Append(entries, entry) != 0;
  Py_XDECREF(entry);
  Py_DECREF(entries);
  return failed ? -1 : 0;
}

/* torch.py's _hook_graph; 0, or -1 with an exception. */
static int hook_graph(PyObject* path, PyObject* inputs, PyObject* result) {
  PyObject *outputs = NULL, *call = NULL, *hooked = NULL;
  int status = -1;
  const int tensor = is_tensor(result);
  if (tensor < 0) return -1;
  if (tensor) {
    PyObject* node = PyObject_GetAttr(result, s_grad_fn);
    if (node == NULL) return -1;
    if (node == Py_None) {
      Py_DECREF(node);
      return 0;
    }
    outputs = PyTuple_Pack(1, node);
    Py_DECREF(node);
    if (outputs == NULL) return -1;
  } else {
    PyObject* empty = PyList_New(0);
    if (empty == NULL) return -1;
    outputs = PyObject_CallFunctionObjArgs(ctx.graph_nodes, result, empty, NULL);
    Py_DECREF(empty);
    if (outputs == NULL) return -1;
    const Py_ssize_t size = sequence_size(outputs);
    if (size <= 0) {
      status = size < 0 ? -1 : 0;
      goto done;
    }
    const int grad = grad_enabled();
    if (grad <= 0) {
      status = grad;
      goto done;
    }
  }
  if ((call = PyTuple_Pack(1, path)) == NULL ||
      (hooked = PyObject_GetAttr(ctx.thread, s_hooked)) == NULL) {
    goto done;
  }
  const Py_ssize_t output_count = sequence_size(outputs);
  for (Py_ssize_t i = 0; i < output_count; ++i) {
    PyObject* node = sequence_item(outputs, i);
    if (!holds(inputs, node) && add_entry(hooked, node, Py_True, call) != 0) goto done;
  }
  const Py_ssize_t input_count = sequence_size(inputs);
  for (Py_ssize_t i = 0; i < input_count; ++i) {
    PyObject* node = sequence_item(inputs, i);
    if (!holds(outputs, node) && add_entry(hooked, node, Py_False, call) != 0) goto done;
  }
  status = 0;
done:
  Py_XDECREF(hooked);
  Py_XDECREF(call);
  Py_XDECREF(outputs);
  return status;
}

/* torch.py's _forward_post. */
static PyObject* forward_post(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 3) {
    PyErr_Format(PyExc_TypeError, "forward_post(module, args, result) takes 3 arguments, not %zd",
                 argc);
    return NULL;
  }
  if (!ready()) return NULL;
  PyObject* module = argv[0];
  PyObject *result = NULL, *entry = NULL, *path = NULL, *hooked = NULL;
  PyObject* forward = PyObject_GetAttr(ctx.thread, s_forward);
  if (forward == NULL) return NULL;
  const Py_ssize_t open = PyList_Size(forward);
  PyObject* last = open > 0 ? PyList_GetItem(forward, open - 1) : NULL;
  if (last != NULL && PyTuple_GetItem(last, 0) == module) { /* the innermost open call */
    entry = Py_NewRef(last);
    if (PyList_SetSlice(forward, open - 1, open, NULL) != 0 ||
        pop_current_to(PyTuple_GetItem(entry, 2)) != 0) {
      goto done;
    }
  } else {
    if ((entry = PyObject_CallFunctionObjArgs(ctx.close_forward, module, NULL)) == NULL) goto done;
    if (entry == Py_None) {
      result = Py_NewRef(Py_None);
      goto done;
    }
  }
  if (PyTuple_Size(entry) >= 5) { /* recorded by the sequence route (6: a recompute's call) */
    const long call = PyLong_AsLong(PyTuple_GetItem(entry, 4));
    if (call == -1 && PyErr_Occurred()) goto done;
    if (PyTuple_Size(entry) == 6) {
      launchwatch_py_recompute_call_ends(call);
    } else {
      launchwatch_py_call_ends(call);
    }
  }
  PyObject* nodes = PyTuple_GetItem(entry, 3);
  if (nodes == NULL) goto done;
  if (nodes != Py_None) {
    if ((path = PyObject_GetAttr(PyTuple_GetItem(entry, 1), s_path)) == NULL ||
        hook_graph(path, nodes, argv[2]) != 0) {
      goto done;
    }
  }
  if (PyList_Size(forward) == 0) {
    if ((hooked = PyObject_GetAttr(ctx.thread, s_hooked)) == NULL) goto done;
    if (PyDict_Size(hooked) > 0) PyDict_Clear(hooked); /* the root returned */
  }
  result = Py_NewRef(Py_None);
done:
  Py_XDECREF(hooked);
  Py_XDECREF(path);
  Py_XDECREF(entry);
  Py_DECREF(forward);
  return result;
}

/* ---- backward -------------------------------------------------------------------------------- */

/* torch.py's _close_backward_to; 0, or -1 with an exception. */
static int close_backward_to(PyObject* backward, Py_ssize_t count) {
  const Py_ssize_t open = PyList_Size(backward);
  if (open <= count) return 0;
  PyObject* range = PyList_GetItem(backward, count);
  PyObject* depth = range == NULL ? NULL : Py_XNewRef(PyList_GetItem(range, 1));
  if (depth == NULL) return -1;
  const int status = pop_current_to(depth);
  Py_DECREF(depth);
  if (status != 0) return -1;
  return PyList_SetSlice(backward, count, PyList_Size(backward), NULL);
}

/* torch.py's _this_pass: this thread's backward ranges (a new reference) once they belong to the
 * running pass, None outside one, NULL with an exception. */
static PyObject* this_pass(void) {
  PyObject *result = NULL, *running = NULL, *backward = NULL, *seen = NULL;
  const Py_ssize_t passes = PyList_Size(ctx.passes);
  if (passes < 0) return NULL;
  if (passes == 0) return Py_NewRef(Py_None);
  launchwatch_py_forget_sequence_ranges(); /* graph-node hooks here: the route is off */
  if (ctx.compiling != Py_None) {
    PyObject* compiling = PyObject_CallNoArgs(ctx.compiling);
    if (compiling == NULL) return NULL;
    const int truth = PyObject_IsTrue(compiling);
    Py_DECREF(compiling);
    if (truth != 0) return truth < 0 ? NULL : Py_NewRef(Py_None);
  }
  PyObject* sink = current_sink();
  if (sink == NULL) return NULL;
  const int active = sink_active(sink);
  Py_DECREF(sink);
  if (active <= 0) return active < 0 ? NULL : Py_NewRef(Py_None);
  running = Py_NewRef(PyList_GetItem(ctx.passes, passes - 1));
  PyObject* generation = PyTuple_GetItem(running, 0);
  if (generation == NULL || (backward = PyObject_GetAttr(ctx.thread, s_backward)) == NULL ||
      (seen = PyObject_GetAttr(ctx.thread, s_generation)) == NULL) {
    goto done;
  }
  int differs = PyObject_RichCompareBool(seen, generation, Py_NE);
  if (differs < 0) goto done;
  if (differs) { /* a finished pass's leftovers, if its callback ran elsewhere */
    if (close_backward_to(backward, 0) != 0 ||
        PyObject_SetAttr(ctx.thread, s_generation, generation) != 0) {
      goto done;
    }
  }
  Py_CLEAR(seen);
  if ((seen = PyObject_GetAttr(ctx.thread, s_callback_queued)) == NULL ||
      (differs = PyObject_RichCompareBool(seen, generation, Py_NE)) < 0) {
    goto done;
  }
  if (differs) {
    if (PyObject_SetAttr(ctx.thread, s_callback_queued, generation) != 0) goto done;
    PyObject* queued = PyObject_CallFunctionObjArgs(ctx.queue_end, generation, NULL);
    if (queued == NULL) goto done;
    Py_DECREF(queued);
  }
  result = Py_NewRef(backward);
done:
  Py_XDECREF(seen);
  Py_XDECREF(backward);
  Py_XDECREF(running);
  return result;
}

/* torch.py's _open_backward: opens path[common:] on `backward` (this thread's ranges), under the
 * caller's `backward` on another thread; 0, or -1 with an exception. */
static int open_backward(PyObject* backward, PyObject* path, Py_ssize_t common) {
  if (close_backward_to(backward, common) != 0) return -1;
  const Py_ssize_t passes = PyList_Size(ctx.passes);
  if (passes <= 0) {
    if (passes == 0) PyErr_SetString(PyExc_RuntimeError, "no backward pass is running");
    return -1;
  }
  PyObject* running = Py_NewRef(PyList_GetItem(ctx.passes, passes - 1));
  PyObject* caller_path = PyTuple_GetItem(running, 1);
  PyObject* caller_thread = PyTuple_GetItem(running, 2);
  PyObject* sink = caller_thread == NULL ? NULL : current_sink();
  int status = -1;
  if (sink == NULL) goto done;
  const unsigned long caller = PyLong_AsUnsignedLong(caller_thread);
  if (caller == (unsigned long)-1 && PyErr_Occurred()) goto done;
  const int other_thread = PyThread_get_thread_ident() != caller;
  const Py_ssize_t names = PyTuple_Size(path);
  for (Py_ssize_t i = common; i < names; ++i) {
    PyObject* name = PyTuple_GetItem(path, i);
    PyObject* depth = PyList_Size(backward) == 0 && other_thread
                          ? sink_push_under(sink, caller_path, name)
                          : sink_push(sink, name);
    if (depth == NULL) goto done;
    PyObject* range = PyList_New(3);
    if (range == NULL) {
      Py_DECREF(depth);
      goto done;
    }
    PyList_SetItem(range, 0, Py_NewRef(name));
    PyList_SetItem(range, 1, depth);
    PyList_SetItem(range, 2, Py_NewRef(Py_None));
    const int appended = PyList_Append(backward, range);
    Py_DECREF(range);
    if (appended != 0) goto done;
  }
  status = 0;
done:
  Py_XDECREF(sink);
  Py_DECREF(running);
  return status;
}

/* One begin (a forward call's backward begins at this node): torch.py's _NodeHook.__call__. */
static int begin(PyObject* self, PyObject* backward, PyObject* call, PyObject* path) {
  PyObject* last = PyObject_GetAttr(ctx.thread, s_node);
  if (last == NULL) return -1;
  const int same_node = last == self;
  Py_DECREF(last);
  if (PyObject_SetAttr(ctx.thread, s_node, self) != 0) return -1;
  const Py_ssize_t depth = PyTuple_Size(path);
  const Py_ssize_t open = PyList_Size(backward);
  const Py_ssize_t limit = open < depth ? open : depth;
  Py_ssize_t common = 0;
  while (common < limit) {
    const int equal = PyObject_RichCompareBool(
        PyList_GetItem(PyList_GetItem(backward, common), 0), PyTuple_GetItem(path, common), Py_EQ);
    if (equal < 0) return -1;
    if (!equal) break;
    ++common;
  }
  if ((common < depth || (!same_node && open > depth)) &&
      open_backward(backward, path, common) != 0) {
    return -1;
  }
  if (depth > 0) { /* the call owns the range at its path's depth */
    PyObject* range = PyList_GetItem(backward, depth - 1);
    if (range == NULL || PyList_SetItem(range, 2, Py_NewRef(call)) != 0) return -1;
  }
  return 0;
}

/* One end (a forward call's backward has ended), unless another module's began since and owns
 * the range. */
static int end(PyObject* backward, PyObject* call, PyObject* path) {
  const Py_ssize_t index = PyTuple_Size(path) - 1;
  if (index < 0 || PyList_Size(backward) <= index) return 0;
  PyObject* range = PyList_GetItem(backward, index);
  if (PyList_GetItem(range, 2) != call) return 0;
  return close_backward_to(backward, index);
}

static PyObject* node_hook_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  (void)args;
  (void)kwargs;
  if (!ready()) return NULL;
  PyObject* backward = this_pass();
  if (backward == NULL || backward == Py_None) return backward;
  PyObject* entries = ((node_hook*)self)->entries;
  for (Py_ssize_t i = 0; i < PyList_Size(entries); ++i) {
    PyObject* entry = Py_NewRef(PyList_GetItem(entries, i));
    PyObject* call = PyTuple_GetItem(entry, 1);
    PyObject* path = call == NULL ? NULL : PyTuple_GetItem(call, 0);
    const int status = path == NULL ? -1
                       : PyTuple_GetItem(entry, 0) == Py_True ? begin(self, backward, call, path)
                                                              : end(backward, call, path);
    Py_DECREF(entry);
    if (status != 0) {
      Py_DECREF(backward);
      return NULL;
    }
  }
  Py_DECREF(backward);
  Py_RETURN_NONE;
}

static PyObject* node_hook_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  if (PyTuple_Size(args) != 0 || (kwargs != NULL && PyDict_Size(kwargs) != 0)) {
    PyErr_SetString(PyExc_TypeError, "NodeHook() takes no arguments");
    return NULL;
  }
  allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
  node_hook* self = (node_hook*)alloc(type, 0);
  if (self == NULL) return NULL;
  if ((self->entries = PyList_New(0)) == NULL) Py_CLEAR(self);
  return (PyObject*)self;
}

static void node_hook_dealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  Py_XDECREF(((node_hook*)self)->entries);
  freefunc free = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free(self);
  Py_DECREF(type);
}

static PyObject* node_hook_entries(PyObject* self, void* closure) {
  (void)closure;
  return Py_NewRef(((node_hook*)self)->entries);
}

static PyGetSetDef node_hook_members[] = {
    {"entries", node_hook_entries, NULL,
     "[(True, call) | (False, call)]: the forward calls whose backward begins or ends here, "
     "innermost module first", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot node_hook_slots[] = {
    {Py_tp_doc, (void*)"The pre hook launchwatch puts on a graph node: torch.py's _NodeHook."},
    {Py_tp_new, (void*)node_hook_new},
    {Py_tp_dealloc, (void*)node_hook_dealloc},
    {Py_tp_call, (void*)node_hook_call},
    {Py_tp_getset, node_hook_members},
    {0, NULL},
};

static PyType_Spec node_hook_spec = {
    "launchwatch._c_api.NodeHook", sizeof(node_hook), 0, Py_TPFLAGS_DEFAULT, node_hook_slots,
};

/* ---- set-up ---------------------------------------------------------------------------------- */

/* *slot = value (a new reference), releasing what it held. */
static void replace(PyObject** slot, PyObject* value) {
  PyObject* old = *slot;
  *slot = value;
  Py_XDECREF(old);
}

static PyObject* hooks_setup(PyObject* self, PyObject* args, PyObject* kwargs) {
  (void)self;
  static char* keywords[] = {"sink_module", "thread", "states", "passes", "new_state",
                             "close_forward", "input_nodes", "graph_nodes", "queue_end_of_pass",
                             "grad_enabled", "tensor", "compiling", "new_carrier",
                             "direct_route", NULL};
  PyObject* objects[14] = {[12] = Py_None, [13] = NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOOOOOO|OO:hooks_setup", keywords,
                                   &objects[0], &objects[1], &objects[2], &objects[3],
                                   &objects[4], &objects[5], &objects[6], &objects[7],
                                   &objects[8], &objects[9], &objects[10], &objects[11],
                                   &objects[12], &objects[13])) {
    return NULL;
  }
  if (!PyList_Check(objects[3]) || !PyDict_Check(objects[2])) {
    PyErr_SetString(PyExc_TypeError, "hooks_setup: states is a dict and passes a list");
    return NULL;
  }
  if (objects[12] != Py_None &&
      (objects[13] == NULL || !PyList_Check(objects[13]) || PyList_Size(objects[13]) != 1)) {
    PyErr_SetString(PyExc_TypeError,
                    "hooks_setup: new_carrier needs direct_route, a list of one flag");
    return NULL;
  }
  if (objects[12] == Py_None) objects[13] = Py_None;
  PyObject* get = PyObject_GetAttrString(objects[0], "get");
  if (get == NULL) return NULL;
  replace(&ctx.sink_get, get);
  replace(&ctx.sink_module, Py_NewRef(objects[0]));
  replace(&ctx.thread, Py_NewRef(objects[1]));
  replace(&ctx.states, Py_NewRef(objects[2]));
  replace(&ctx.passes, Py_NewRef(objects[3]));
  replace(&ctx.new_state, Py_NewRef(objects[4]));
  replace(&ctx.close_forward, Py_NewRef(objects[5]));
  replace(&ctx.input_nodes, Py_NewRef(objects[6]));
  replace(&ctx.graph_nodes, Py_NewRef(objects[7]));
  replace(&ctx.queue_end, Py_NewRef(objects[8]));
  replace(&ctx.grad_enabled, Py_NewRef(objects[9]));
  replace(&ctx.tensor, Py_NewRef(objects[10]));
  replace(&ctx.compiling, Py_NewRef(objects[11]));
  replace(&ctx.new_carrier, Py_NewRef(objects[12]));
  replace(&ctx.direct_route, Py_NewRef(objects[13]));
  Py_RETURN_NONE;
}

static PyObject* set_native_sink(PyObject* self, PyObject* sink) {
  (void)self;
  replace(&ctx.native_sink, Py_NewRef(sink));
  Py_RETURN_NONE;
}

static PyMethodDef hook_methods[] = {
    {"hooks_setup", (PyCFunction)(void (*)(void))hooks_setup, METH_VARARGS | METH_KEYWORDS,
     "hooks_setup(*, sink_module, thread, states, ...): torch.py's state and fallbacks, which\n"
     "forward_pre, forward_post and NodeHook work on (torch.py calls it once)."},
    {"set_native_sink", set_native_sink, METH_O,
     "set_native_sink(sink): the sink whose push, push_under and pop_to are this module's own;\n"
     "the hooks call the C API directly while it is _sink.current."},
    {"forward_pre", (PyCFunction)(void (*)(void))forward_pre, METH_FASTCALL,
     "forward_pre(module, args): torch.py's _forward_pre."},
    {"forward_post", (PyCFunction)(void (*)(void))forward_post, METH_FASTCALL,
     "forward_post(module, args, result): torch.py's _forward_post."},
    {NULL, NULL, 0, NULL},
};

static int intern(PyObject** slot, const char* text) {
  *slot = PyUnicode_InternFromString(text);
  return *slot == NULL ? -1 : 0;
}

int launchwatch_py_add_hooks(PyObject* module) {
  if (intern(&s_current, "current") || intern(&s_active, "active") || intern(&s_push, "push") ||
      intern(&s_push_under, "push_under") || intern(&s_pop_to, "pop_to") ||
      intern(&s_forward, "forward") || intern(&s_backward, "backward") ||
      intern(&s_generation, "generation") || intern(&s_callback_queued, "callback_queued") ||
      intern(&s_node, "node") || intern(&s_hooked, "hooked") || intern(&s_parent, "parent") ||
      intern(&s_first, "first") || intern(&s_rest, "rest") || intern(&s_path, "path") ||
      intern(&s_grad_fn, "grad_fn") || intern(&s_register_prehook, "register_prehook") ||
      intern(&s_entries, "entries") || intern(&s_carrier, "carrier") ||
      intern(&s_backward_hooks, "_backward_hooks") ||
      intern(&s_register_hook_dict, "_register_hook_dict")) {
    return -1;
  }
  if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL) return -1;
  if (everything == NULL && (everything = PyLong_FromLong(1L << 30)) == NULL) return -1;
  if (ctx.native_sink == NULL) ctx.native_sink = Py_NewRef(Py_None);
  if (PyModule_AddFunctions(module, hook_methods) != 0) return -1;
  node_hook_type = (PyTypeObject*)PyType_FromSpec(&node_hook_spec);
  if (node_hook_type == NULL) return -1;
  Py_INCREF(node_hook_type); /* one for the module, one for the hooks */
  if (PyModule_AddObject(module, "NodeHook", (PyObject*)node_hook_type) != 0) {
    Py_DECREF(node_hook_type);
    return -1;
  }
  return 0;
}
