/* launchwatch._c_api's sequence route: a module's backward found from the sequence numbers of the
 * graph nodes its forward made, with no hook on any node.
 *
 * Why: on a host-bound step the graph-node hooks were the larger part of the module hooks' cost
 * (on torch 2.11, a node's hook 6.6 us: torch's registration, the engine's call into Python, the
 * hook's work; docs/benchmarks.md, "Graph-node hooks on torch 2.11"). Autograd numbers the nodes a
 * thread makes in order (at::sequence_number), so the nodes a module's forward made are the numbers
 * between its pre hook and its post hook, and the modules' calls nest as their ranges do. The
 * engine keeps the node it is running in a thread-local (torch::autograd::get_current_node()), and
 * the node keeps its number. So nothing is done per node: the forward hooks read the counter twice
 * a call, and at each kernel launch on a thread running a graph node (the injection calls
 * resolve_backward_scope there: launchwatch_set_launch_scope_hook) the running node's number finds
 * the innermost module call that made it, whose backward ranges are opened on that thread, below
 * the `backward` scope of the thread that called backward(), as the node hooks open them. That
 * is done once a node: a node's later launches cost a call to torch's function and a compare.
 * The calls are kept in the order they began, at most max_calls of them (the older half dropped).
 *
 * What torch gives for this is C++ without a stable ABI: both functions are looked up by their
 * mangled names in torch's own library, and the offset of a node's number inside the node is
 * measured once at install() (sequence_offsets, on a graph of launchwatch's own on the CPU), not
 * assumed. torch.py's _start_sequence_route decides whether the route is on; anything missing
 * leaves it off, and the node hooks do the work. Numbers are per thread, so one thread's forward
 * calls are recorded (the first that records one); a forward with gradients on another thread (a
 * model run on several threads) turns the route off for good, and the node hooks take over from
 * that call on. Activation checkpointing is the exception: it recomputes a forward on the thread
 * running backward, inside a graph node of the pass. That forward's calls are recorded on that
 * thread (the `recomputed` table, numbered by its own count) with the paths their forward had,
 * and its ranges open as `[recompute]` in the recomputed module's backward scope; where it is run
 * backward itself (torch's reentrant checkpoint: a backward() begun inside that node), that
 * pass's nodes are found in that table, their ranges opened as the module's backward
 * (`opened`, a slot a nested pass). A node also keeps the id torch gives the thread that made it
 * (its offset measured as the number's is): a node another thread made, such as those a backward
 * with create_graph=True makes on CUDA's autograd thread, names no recorded call, and opens as
 * `[double backward]`. A thread's ranges for a pass close at the engine's end-of-pass callback
 * where it runs on that thread (pass_done), else at its next launch in a later pass.
 *
 * Thread safety: the forward side and the set-up run under the GIL; resolve_backward_scope runs on
 * any thread without it, so what both read (the calls, the running passes) is under `lock`, which
 * is never held while the GIL is taken or a Python object touched.
 */
#include "_c_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t (*sequence_peek_fn)(void);
typedef uint64_t (*thread_id_fn)(void);

/* _c_running_node.cpp: torch's get_current_node() (at `get_current_node`) called as C++ does. */
const void* launchwatch_py_running_node(void* get_current_node);

enum {
  max_depth = 64,          /* backward ranges a thread keeps; a deeper module's path is cut */
  max_passes = 16,         /* backward passes running at once (nested backward() calls) */
  max_calls = 1 << 17,     /* forward calls kept: past it, the older half goes (about 10 MiB) */
  path_cache_size = 4096,  /* path tuples whose names are kept ready (cleared when full) */
};

/* One forward call, in the order the calls began (so by `begin`). */
typedef struct {
  uint64_t begin;      /* the first sequence number its forward could give a node */
  uint64_t end;        /* one past the last; 0 while it runs (so it holds none yet) */
  long parent;         /* the index of the call it was made in, or -1 */
  uint32_t names;      /* its path's names: `depth` of them, from names[names] on */
  uint32_t depth;
} call;

/* Forward calls, in the order they began, as the route keeps them: one thread's, numbered by its
 * own counter. */
typedef struct {
  call* calls;
  long count, capacity;
  const char** names; /* every call's names, in one array */
  long names_count, names_capacity;
  long open[max_depth * 4]; /* the recording thread's open calls, innermost last */
  int open_count;
} call_table;

/* A path tuple's names, as C strings that live as long as the process. */
typedef struct {
  PyObject* path; /* held */
  uint32_t depth;
  const char* names[max_depth];
} cached_path;

static struct {
  atomic_int on;                 /* the route is in use */
  atomic_int off_for_good;       /* turned off by a forward on another thread */
  atomic_ullong newest;          /* the newest running pass's generation (0: none) */
  void* current_node;            /* torch::autograd::get_current_node */
  const void* (*fake_running_node)(void); /* a test's, in place of torch's (_sequence_testing) */
  sequence_peek_fn peek;
  thread_id_fn thread_id;        /* at::RecordFunction::currentThreadId: torch's id of a thread */
  size_t offset;                 /* of a node's sequence number, in bytes */
  size_t thread_offset;          /* of the id of the thread that made a node (0: not known) */
  unsigned long forward_thread;  /* the thread whose forward calls are recorded (0: none yet) */
  uint64_t forward_thread_id;    /* torch's id of it, where thread_offset is known (0: not
                                    known); under `lock` */
  pthread_mutex_t lock;
  call_table table;              /* forward_thread's calls */
  /* The running backward passes, newest last: their generation, caller path, caller thread. */
  struct {
    unsigned long long generation;
    uint32_t caller_path;
    unsigned long caller_thread;
    int recompute; /* begun inside a graph node: a reentrant checkpoint's backward() of its
                      recompute, whose nodes carry the caller thread's own numbers */
  } passes[max_passes];
  int passes_count;
  cached_path* cache[path_cache_size];
} route = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const char loss_name[] = "[loss]";
static const char recompute_name[] = "[recompute]";
static const char double_backward_name[] = "[double backward]";
static const char other_thread_name[] = "[made on another thread]";

/* This thread's forward calls recomputed in backward (activation checkpointing), from its newest
 * recompute's outermost call on: what a reentrant checkpoint's backward() of them, on this same
 * thread, runs. Only this thread reads or writes it; its memory stays with the thread. */
static _Thread_local call_table recomputed;

/* ---- names ----------------------------------------------------------------------------------- */

/* Strings interned for good (each name once): backward ranges compare them by pointer, and a
 * thread's open ranges keep pointing at them after their calls are dropped. Under the GIL. */
static const char** interned;
static size_t interned_count, interned_capacity;

static size_t text_hash(const char* text) {
  size_t hash = 1469598103934665603u;
  for (; *text; ++text) hash = (hash ^ (unsigned char)*text) * 1099511628211u;
  return hash;
}

static const char* intern_name(const char* text) {
  if (interned_count * 2 >= interned_capacity) {
    const size_t capacity = interned_capacity ? interned_capacity * 2 : 1024;
    const char** grown = calloc(capacity, sizeof *grown);
    if (grown == NULL) return NULL;
    for (size_t i = 0; i < interned_capacity; ++i) {
      if (interned[i] == NULL) continue;
      size_t at = text_hash(interned[i]) & (capacity - 1);
      while (grown[at] != NULL) at = (at + 1) & (capacity - 1);
      grown[at] = interned[i];
    }
    free(interned);
    interned = grown;
    interned_capacity = capacity;
  }
  size_t at = text_hash(text) & (interned_capacity - 1);
  while (interned[at] != NULL) {
    if (strcmp(interned[at], text) == 0) return interned[at];
    at = (at + 1) & (interned_capacity - 1);
  }
  char* copy = strdup(text);
  if (copy == NULL) return NULL;
  interned[at] = copy;
  ++interned_count;
  return copy;
}

/* `path`'s names (a tuple of bytes: a _Module's path), cached by the tuple (a _Module keeps its
 * own); NULL with an exception. Under the GIL. */
static const cached_path* path_names(PyObject* path) {
  const size_t slot = ((size_t)path >> 4) & (path_cache_size - 1);
  cached_path* cached = route.cache[slot];
  if (cached != NULL && cached->path == path) return cached;
  const Py_ssize_t depth = PyTuple_Size(path);
  if (depth < 0) return NULL;
  if (cached == NULL && (cached = route.cache[slot] = calloc(1, sizeof *cached)) == NULL) {
    PyErr_NoMemory();
    return NULL;
  }
  if (cached->path != NULL && route.cache[slot] == cached) Py_CLEAR(cached->path);
  cached->depth = (uint32_t)(depth < max_depth ? depth : max_depth);
  for (uint32_t i = 0; i < cached->depth; ++i) {
    const char* text = launchwatch_py_range_name(PyTuple_GetItem(path, i));
    if (text == NULL || (cached->names[i] = intern_name(text)) == NULL) {
      if (!PyErr_Occurred()) PyErr_NoMemory();
      return NULL;
    }
  }
  cached->path = Py_NewRef(path);
  return cached;
}

/* ---- the forward side (under the GIL) -------------------------------------------------------- */

/* The node the engine runs on this thread, or NULL. */
static const void* running_node(void) {
  return route.fake_running_node != NULL ? route.fake_running_node()
                                         : launchwatch_py_running_node(route.current_node);
}

/* The route off for good: the injection stops calling the resolver, and the graph-node hooks
 * (which close what it left open on their thread first: launchwatch_py_forget_sequence_ranges)
 * do the work from the next forward call on. */
static void stop_for_good(void) {
  atomic_store(&route.off_for_good, 1);
  if (atomic_exchange(&route.on, 0) && launchwatch_py_set_launch_scope_hook != NULL) {
    launchwatch_py_set_launch_scope_hook(NULL);
  }
}

int launchwatch_py_sequence_route_here(void) {
  if (!atomic_load_explicit(&route.on, memory_order_relaxed)) return route_off;
  const unsigned long thread = PyThread_get_thread_ident();
  if (route.forward_thread == thread) return route_records;
  if (route.forward_thread == 0) {
    const uint64_t id = route.thread_offset != 0 ? route.thread_id() : 0;
    pthread_mutex_lock(&route.lock);
    route.forward_thread_id = id;
    pthread_mutex_unlock(&route.lock);
    route.forward_thread = thread;
    return route_records;
  }
  /* A forward on a second thread: its nodes' numbers are that thread's own count. Made while
   * this thread runs a graph node of a pass, it is a recompute (activation checkpointing). */
  pthread_mutex_lock(&route.lock);
  const int passes = route.passes_count;
  pthread_mutex_unlock(&route.lock);
  if (passes > 0 && running_node() != NULL) return route_recompute;
  stop_for_good();
  return route_off;
}

/* Drops the older half of the calls, from the first outermost call of the newer half on (none
 * is open: an outermost call begins only when none is). A graph made that long ago (some hundred
 * thousand module calls) and still to be run backward would find its calls gone: its nodes'
 * launches go to `[loss]`. Under `lock`. */
static void drop_old_calls(call_table* table) {
  long first = table->count / 2;
  while (first < table->count && table->calls[first].parent >= 0) ++first;
  if (first <= 0 || first >= table->count) return;
  const uint32_t first_name = table->calls[first].names;
  memmove(table->calls, table->calls + first,
          (size_t)(table->count - first) * sizeof *table->calls);
  table->count -= first;
  for (long i = 0; i < table->count; ++i) {
    call* c = &table->calls[i];
    c->parent = c->parent >= first ? c->parent - first : -1;
    c->names -= first_name;
  }
  memmove(table->names, table->names + first_name,
          (size_t)(table->names_count - first_name) * sizeof *table->names);
  table->names_count -= first_name;
}

/* Room for one more call and `depth` more names; 0, or -1 (out of memory). */
static int make_room(call_table* table, uint32_t depth) {
  if (table->count == table->capacity) {
    const long capacity = table->capacity ? table->capacity * 2 : 4096;
    call* grown = realloc(table->calls, (size_t)capacity * sizeof *grown);
    if (grown == NULL) return -1;
    table->calls = grown;
    table->capacity = capacity;
  }
  if (table->names_count + depth > table->names_capacity) {
    long capacity = table->names_capacity ? table->names_capacity * 2 : 16384;
    while (capacity < table->names_count + depth) capacity *= 2;
    const char** grown = realloc(table->names, (size_t)capacity * sizeof *grown);
    if (grown == NULL) return -1;
    table->names = grown;
    table->names_capacity = capacity;
  }
  return 0;
}

/* Records a call of `names` beginning at `begin`, inside the innermost open one; its index, or -1
 * (out of memory, or nested past the stack: its nodes go to the call around it). */
static long table_begins(call_table* table, const cached_path* names, uint64_t begin) {
  if (table->open_count >= (int)(sizeof table->open / sizeof *table->open) ||
      make_room(table, names->depth) != 0) {
    return -1;
  }
  const long index = table->count++;
  call* c = &table->calls[index];
  c->begin = begin;
  c->end = 0;
  c->parent = table->open_count > 0 ? table->open[table->open_count - 1] : -1;
  c->names = (uint32_t)table->names_count;
  c->depth = names->depth;
  memcpy(table->names + table->names_count, names->names, names->depth * sizeof *table->names);
  table->names_count += names->depth;
  table->open[table->open_count++] = index;
  return index;
}

/* Ends call `index` at `end`. Calls above it still open did not return (closed out of order):
 * they keep no range. */
static void table_ends(call_table* table, long index, uint64_t end) {
  for (int i = table->open_count - 1; i >= 0; --i) {
    if (table->open[i] == index) {
      table->open_count = i;
      if (index < table->count) table->calls[index].end = end;
      return;
    }
  }
}

/* `path`'s names, or NULL (not recorded: its nodes go to the call around it, the program goes
 * on). */
static const cached_path* recorded_names(PyObject* path) {
  const cached_path* names = path_names(path);
  if (names == NULL) PyErr_Clear();
  return names;
}

long launchwatch_py_call_begins(PyObject* path) {
  const cached_path* names = recorded_names(path);
  if (names == NULL) return -1;
  const uint64_t begin = route.peek();
  pthread_mutex_lock(&route.lock);
  call_table* table = &route.table;
  if (table->open_count == 0 && table->count >= max_calls) drop_old_calls(table);
  const long index = table_begins(table, names, begin);
  pthread_mutex_unlock(&route.lock);
  return index;
}

void launchwatch_py_call_ends(long index) {
  if (index < 0) return;
  const uint64_t end = route.peek();
  pthread_mutex_lock(&route.lock);
  table_ends(&route.table, index, end);
  pthread_mutex_unlock(&route.lock);
}

/* The newest running pass that is not a recompute's backward(), or -1. Under `lock`. */
static int newest_outer_pass(void) {
  int i = route.passes_count - 1;
  while (i >= 0 && route.passes[i].recompute) --i;
  return i;
}

/* The caller path (its `backward` scope) of the newest pass not a recompute's, or 0. Under
 * `lock`. */
static uint32_t outer_pass_path(void) {
  const int outer = newest_outer_pass();
  return outer >= 0 ? route.passes[outer].caller_path : 0;
}

static void resolve_backward_scope(void);

/* What this thread's newest recompute was made in: the node, and the newest pass not a
 * recompute's then. */
static _Thread_local struct {
  const void* node;
  unsigned long long generation;
} recomputing;

/* The newest pass this thread began inside a graph node (a recompute's backward()), or -1: the
 * thread is inside it, so every node it runs is that pass's. Under `lock`. */
static int recompute_pass_here(unsigned long thread) {
  for (int i = route.passes_count - 1; i >= 0; --i) {
    if (route.passes[i].recompute && route.passes[i].caller_thread == thread) return i;
  }
  return -1;
}

long launchwatch_py_recompute_root_pushes(PyObject* path) {
  /* The running node's own ranges first, below the recompute's: opened at a launch inside the
   * recompute, they would close the recompute's ranges above them. */
  resolve_backward_scope();
  pthread_mutex_lock(&route.lock);
  const int outer = newest_outer_pass();
  const uint32_t under = outer >= 0 ? route.passes[outer].caller_path : 0;
  const unsigned long long generation = outer >= 0 ? route.passes[outer].generation : 0;
  const int keep = recompute_pass_here(PyThread_get_thread_ident()) >= 0;
  pthread_mutex_unlock(&route.lock);
  /* One recompute may call several modules at its top (checkpoint_sequential): the calls of the
   * recompute before go once a new one begins, unless a backward() of one still runs here (a
   * checkpoint inside a checkpointed module: the inner recompute's calls are added). */
  const void* node = running_node();
  if (!keep && (node != recomputing.node || generation != recomputing.generation)) {
    recomputed.count = recomputed.names_count = 0;
    recomputed.open_count = 0;
  }
  recomputing.node = node;
  recomputing.generation = generation;
  const cached_path* names = recorded_names(path);
  if (names == NULL || names->depth == 0) return -1;
  const long depth = under != 0 ? launchwatch_py_push_under(under, names->names[0])
                                : launchwatch_py_push(names->names[0]);
  if (depth < 0) return -1;
  for (uint32_t i = 1; i < names->depth; ++i) launchwatch_py_push(names->names[i]);
  launchwatch_py_push(recompute_name);
  return depth;
}

long launchwatch_py_recompute_call_begins(PyObject* path) {
  const cached_path* names = recorded_names(path);
  return names != NULL ? table_begins(&recomputed, names, route.peek()) : -1;
}

void launchwatch_py_recompute_call_ends(long index) {
  if (index >= 0) table_ends(&recomputed, index, route.peek());
}

/* ---- the backward side (any thread, no GIL) -------------------------------------------------- */

/* Backward ranges a thread opened for one pass's nodes, outermost first. */
typedef struct {
  unsigned long long generation; /* the pass they belong to */
  int open;
  const char* names[max_depth];
  int depths[max_depth];
} opened_ranges;

/* This thread's ranges, a slot a pass: passes nest (a backward() or a recompute's backward()
 * begun inside a node), each one's ranges above those of the pass it runs inside. Generation 0:
 * a free slot (torch.py counts passes from 1). */
enum { nested_passes = 4 };
static _Thread_local opened_ranges opened[nested_passes];

/* The node this thread last resolved, in the pass that was newest then. */
static _Thread_local struct {
  const void* node;
  unsigned long long generation;
} seen;

/* Closes `ranges` from `count` on. */
static void close_to(opened_ranges* ranges, int count) {
  if (ranges->open > count) {
    launchwatch_py_pop_to(ranges->depths[count]);
    ranges->open = count;
  }
}

/* Whether pass `generation` runs. Under `lock`. */
static int pass_runs(unsigned long long generation) {
  for (int i = 0; i < route.passes_count; ++i) {
    if (route.passes[i].generation == generation) return 1;
  }
  return 0;
}

/* Closes and frees the slots of passes that ended (`all`: every slot), the latest opened first:
 * their ranges are on a thread that did not call their backward(), so no `backward` pop closed
 * them. Under `lock`, or where the route is off. */
static void close_ended(int all) {
  for (;;) {
    opened_ranges* latest = NULL;
    for (int i = 0; i < nested_passes; ++i) {
      opened_ranges* slot = &opened[i];
      if (slot->generation == 0 || (!all && pass_runs(slot->generation))) continue;
      if (slot->open == 0) {
        slot->generation = 0;
      } else if (latest == NULL || slot->depths[0] > latest->depths[0]) {
        latest = slot;
      }
    }
    if (latest == NULL) return;
    close_to(latest, 0);
    latest->generation = 0;
  }
}

/* This thread's slot for pass `generation`, a free one taken for it if it has none, after the
 * ended passes' slots are closed; NULL where passes nest deeper than kept (the ranges then stay
 * as they are). Under `lock`. */
static opened_ranges* ranges_for(unsigned long long generation) {
  close_ended(0);
  for (int i = 0; i < nested_passes; ++i) {
    if (opened[i].generation == generation) return &opened[i];
  }
  for (int i = 0; i < nested_passes; ++i) {
    if (opened[i].generation == 0) {
      opened[i].generation = generation;
      opened[i].open = 0;
      return &opened[i];
    }
  }
  return NULL;
}

/* Opens `names` in `ranges`, keeping the ranges they share with those open; the outermost one
 * below `under` (a path id) where that is not 0, else on this thread's innermost range. */
static void open_names(opened_ranges* ranges, const char* const* names, uint32_t depth,
                       uint32_t under) {
  int common = 0;
  while (common < ranges->open && (uint32_t)common < depth &&
         (ranges->names[common] == names[common] ||
          strcmp(ranges->names[common], names[common]) == 0)) {
    ++common;
  }
  close_to(ranges, common);
  for (uint32_t i = (uint32_t)common; i < depth; ++i) {
    const int at = ranges->open == 0 && under != 0 ? launchwatch_py_push_under(under, names[i])
                                                   : launchwatch_py_push(names[i]);
    ranges->names[ranges->open] = names[i];
    ranges->depths[ranges->open] = at;
    ++ranges->open;
  }
}

/* The innermost call of `table` whose forward gave `number`, or -1. */
static long innermost_call(const call_table* table, uint64_t number) {
  long low = 0, high = table->count; /* the last call with begin <= number: below `high` */
  while (low < high) {
    const long middle = low + (high - low) / 2;
    if (table->calls[middle].begin <= number) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  long at = low - 1;
  while (at >= 0 && !(number < table->calls[at].end)) at = table->calls[at].parent;
  return at;
}

/* A node of pass `generation`, which this thread began itself inside a graph node (a reentrant
 * checkpoint's backward() of its recompute): its number is this thread's count, so it names a
 * call of this thread's newest recompute, whose ranges open below the `backward` scope of the
 * newest pass not a recompute's, as that module's own backward would. A number that names none
 * (a node the recompute did not make) closes them: its launches are in that backward() call's
 * scope. Passes nested that way keep their ranges apart, four deep. Under `lock`. */
static void resolve_recomputed(unsigned long long generation, uint64_t number) {
  opened_ranges* ranges = ranges_for(generation);
  if (ranges == NULL) return;
  const long found = innermost_call(&recomputed, number);
  if (found < 0) {
    close_to(ranges, 0);
    return;
  }
  const uint32_t under = outer_pass_path(); /* 0: on this thread's innermost range, as pushed */
  const call* c = &recomputed.calls[found];
  open_names(ranges, recomputed.names + c->names, c->depth, under);
}

static void resolve_backward_scope(void) {
  const void* node = running_node();
  /* A node's address comes back in a later pass's graph: the same node only in the same pass. */
  const unsigned long long newest = atomic_load_explicit(&route.newest, memory_order_relaxed);
  if (node == seen.node && newest == seen.generation) return;
  seen.node = node;
  seen.generation = newest;
  if (node == NULL) return; /* not running a graph node: its ranges stay as they are */
  uint64_t number;
  memcpy(&number, (const char*)node + route.offset, sizeof number);
  if (number == UINT64_MAX) return; /* AccumulateGrad: in the backward that produced the grad */
  pthread_mutex_lock(&route.lock);
  if (route.passes_count == 0 || !atomic_load_explicit(&route.on, memory_order_relaxed)) {
    close_ended(1); /* a node run by no wrapped backward() */
    pthread_mutex_unlock(&route.lock);
    return;
  }
  const unsigned long thread = PyThread_get_thread_ident();
  const int own = recompute_pass_here(thread);
  if (own >= 0) {
    /* Inside this thread's own backward() of a recompute: its nodes carry this thread's numbers,
     * and name its recompute's calls; the outer pass's ranges are kept for when it goes on. */
    resolve_recomputed(route.passes[own].generation, number);
    pthread_mutex_unlock(&route.lock);
    return;
  }
  /* Another thread's recompute's backward() leaves this one in the pass it runs nodes of. (A
   * recompute's nodes run on a second device's thread are taken for a double backward's: only
   * their maker's id tells them from the forward's, and the recompute's calls are on its
   * thread.) */
  const int outer = newest_outer_pass();
  if (outer < 0) {
    pthread_mutex_unlock(&route.lock);
    return;
  }
  const unsigned long long generation = route.passes[outer].generation;
  const uint32_t caller_path = route.passes[outer].caller_path;
  const unsigned long caller_thread = route.passes[outer].caller_thread;
  opened_ranges* ranges = ranges_for(generation);
  if (ranges != NULL) {
    /* A node made on another thread than the forwards' carries that thread's numbers, which name
     * none of the recorded calls. One this thread made while it ran a backward (create_graph=True
     * on CUDA's autograd thread: a gradient penalty's second backward, a Hessian-vector
     * product's) is a double backward's. (Unknown until a forward is recorded: every node then
     * taken for the forward thread's, as where the maker's offset was not found.) */
    uint64_t maker = route.forward_thread_id;
    if (route.thread_offset != 0 && route.forward_thread_id != 0) {
      memcpy(&maker, (const char*)node + route.thread_offset, sizeof maker);
    }
    static const char* const loss[1] = {loss_name};
    static const char* const double_backward[1] = {double_backward_name};
    static const char* const other_thread[1] = {other_thread_name};
    const int forward_made = maker == route.forward_thread_id;
    const long found = forward_made ? innermost_call(&route.table, number) : -1;
    const call* c = found >= 0 ? &route.table.calls[found] : NULL;
    const char* const* names = c != NULL                      ? route.table.names + c->names
                               : forward_made                 ? loss
                               : maker == route.thread_id()   ? double_backward
                                                              : other_thread;
    open_names(ranges, names, c != NULL ? c->depth : 1, thread != caller_thread ? caller_path : 0);
  }
  pthread_mutex_unlock(&route.lock);
}

void launchwatch_py_forget_sequence_ranges(void) {
  close_ended(1);
  seen.node = NULL;
}

/* ---- members --------------------------------------------------------------------------------- */

static void* torch_symbol(const char* library, const char* name) {
  void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  void* found = handle != NULL ? dlsym(handle, name) : NULL;
  if (found == NULL) found = dlsym(RTLD_DEFAULT, name);
  return found;
}

/* Looks torch's running node and sequence counter up in `library_path` (a str: torch's
 * libtorch_cpu.so, loaded already); either may stay NULL (torch 1.13 has no running node to
 * read). 0, or -1 with an exception (a path that cannot be encoded). */
static int find_torch_functions(PyObject* library_path) {
  PyObject* encoded = PyUnicode_EncodeFSDefault(library_path);
  const char* library = encoded != NULL ? PyBytes_AsString(encoded) : NULL;
  if (library == NULL) {
    Py_XDECREF(encoded);
    return -1;
  }
  route.current_node = torch_symbol(library, "_ZN5torch8autograd16get_current_nodeEv");
  route.peek = (sequence_peek_fn)torch_symbol(library, "_ZN2at15sequence_number4peekEv");
  route.thread_id =
      (thread_id_fn)torch_symbol(library, "_ZN2at14RecordFunction15currentThreadIdEv");
  Py_DECREF(encoded);
  return 0;
}

/* Whether the route can read the node the engine runs: torch's function, or a test's. */
static int running_node_readable(void) {
  return route.current_node != NULL || route.fake_running_node != NULL;
}

/* sequence_setup(torch_library) -> bool: finds what the route reads in torch's library (a path:
 * libtorch_cpu.so, loaded already); False where either is missing. */
static PyObject* sequence_setup(PyObject* self, PyObject* library_path) {
  (void)self;
  if (find_torch_functions(library_path) != 0) return NULL;
  return PyBool_FromLong(route.current_node != NULL && route.peek != NULL &&
                         launchwatch_py_set_launch_scope_hook != NULL);
}

/* sequence_offsets(number) -> int: called from a pre hook on a graph node whose sequence number is
 * `number`, while the engine runs it: a bit for each 8-byte word of the running node (from the
 * second: the first is its vtable) that holds `number`. */
static PyObject* sequence_offsets(PyObject* self, PyObject* number_object) {
  (void)self;
  const unsigned long long number = PyLong_AsUnsignedLongLong(number_object);
  if (number == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
  if (!running_node_readable()) {
    PyErr_SetString(PyExc_RuntimeError, "sequence_offsets: call sequence_setup(...) first");
    return NULL;
  }
  const char* node = running_node();
  unsigned long long bits = 0;
  for (unsigned word = 1; node != NULL && word < 16; ++word) {
    uint64_t value;
    memcpy(&value, node + word * 8, sizeof value);
    if (value == number) bits |= 1ull << word;
  }
  return PyLong_FromUnsignedLongLong(bits);
}

/* What one of torch's uint64_t counters (found by sequence_setup) says on this thread; NULL with
 * an exception where it was not found. */
static PyObject* torch_count(uint64_t (*count)(void), const char* member) {
  if (count == NULL) {
    PyErr_Format(PyExc_RuntimeError, "%s: call sequence_setup(...) first", member);
    return NULL;
  }
  return PyLong_FromUnsignedLongLong(count());
}

/* sequence_thread_id() -> int: torch's id of this thread, as a node made here holds it. */
static PyObject* sequence_thread_id(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  return torch_count(route.thread_id, "sequence_thread_id");
}

/* sequence_peek() -> int: autograd's next sequence number on this thread. */
static PyObject* sequence_peek(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  return torch_count(route.peek, "sequence_peek");
}

/* An offset into a node argument `object` of sequence_start(); -1 with an exception where it is
 * not a multiple of 8 from 8 to 120 bytes (0 too where `none_allowed`). */
static Py_ssize_t node_offset(PyObject* object, int none_allowed) {
  const Py_ssize_t offset = PyLong_AsSsize_t(object);
  if (offset == -1 && PyErr_Occurred()) return -1;
  if ((offset == 0 && none_allowed) || (offset > 0 && offset % 8 == 0 && offset < 128)) {
    return offset;
  }
  PyErr_Format(PyExc_ValueError, "sequence_start: an offset is 8 to 120 bytes%s, not %zd",
               none_allowed ? " (or 0: not known)" : "", offset);
  return -1;
}

/* sequence_start(offset, thread_offset=0) -> bool: the route on, reading a node's number at
 * `offset` bytes and the id of the thread that made it at `thread_offset` (0: not known, every
 * node then taken for the forward thread's), with the injection calling resolve_backward_scope at
 * each launch; False where it cannot be (off for good, or not set up). */
static PyObject* sequence_start(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  (void)self;
  if (argc < 1 || argc > 2) {
    PyErr_Format(PyExc_TypeError, "sequence_start(offset, thread_offset=0) takes 1 or 2 "
                 "arguments, not %zd", argc);
    return NULL;
  }
  const Py_ssize_t offset = node_offset(argv[0], 0);
  const Py_ssize_t thread_offset = argc > 1 ? node_offset(argv[1], 1) : 0;
  if (offset < 0 || thread_offset < 0) return NULL;
  if (!running_node_readable() || route.peek == NULL ||
      launchwatch_py_set_launch_scope_hook == NULL || atomic_load(&route.off_for_good) ||
      (thread_offset != 0 && route.thread_id == NULL)) {
    Py_RETURN_FALSE;
  }
  route.offset = (size_t)offset;
  route.thread_offset = (size_t)thread_offset;
  launchwatch_py_set_launch_scope_hook(resolve_backward_scope);
  atomic_store(&route.on, 1);
  Py_RETURN_TRUE;
}

/* sequence_stop(): the route off for good (the Python hooks put in use: they hook graph nodes). */
static PyObject* sequence_stop(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  stop_for_good();
  Py_RETURN_NONE;
}

/* sequence_on() -> bool: whether the route is in use. */
static PyObject* sequence_on(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  return PyBool_FromLong(atomic_load(&route.on));
}

/* pass_begins(generation, caller_path, caller_thread): a backward() began (torch.py's
 * _wrap_backward), the newest pass. */
static PyObject* pass_begins(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 3) {
    PyErr_Format(PyExc_TypeError, "pass_begins(generation, caller_path, caller_thread) takes 3 "
                 "arguments, not %zd", argc);
    return NULL;
  }
  const unsigned long long generation = PyLong_AsUnsignedLongLong(argv[0]);
  const unsigned long path = PyLong_AsUnsignedLong(argv[1]);
  const unsigned long thread = PyLong_AsUnsignedLong(argv[2]);
  if (PyErr_Occurred()) return NULL;
  /* A recompute's backward(): begun inside the graph node this thread recomputed a forward in,
   * during the same outer pass. (A backward() or grad() a node's own backward calls, with no
   * recompute, runs nodes the recorded thread made.) */
  const void* node = running_node();
  pthread_mutex_lock(&route.lock);
  const int outer = newest_outer_pass();
  const int recompute = node != NULL && node == recomputing.node && outer >= 0 &&
                        route.passes[outer].generation == recomputing.generation &&
                        thread != route.forward_thread;
  if (route.passes_count < max_passes) {
    route.passes[route.passes_count].generation = generation;
    route.passes[route.passes_count].caller_path = (uint32_t)path;
    route.passes[route.passes_count].caller_thread = thread;
    route.passes[route.passes_count].recompute = recompute;
    ++route.passes_count;
  }
  atomic_store_explicit(&route.newest, generation, memory_order_relaxed);
  pthread_mutex_unlock(&route.lock);
  Py_RETURN_NONE;
}

/* pass_ends(generation): that backward() returned, on the thread that called it; the ranges this
 * thread opened for its nodes were closed with its `backward` scope. */
static PyObject* pass_ends(PyObject* self, PyObject* generation_object) {
  (void)self;
  const unsigned long long generation = PyLong_AsUnsignedLongLong(generation_object);
  if (generation == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
  pthread_mutex_lock(&route.lock);
  for (int i = route.passes_count - 1; i >= 0; --i) {
    if (route.passes[i].generation == generation) {
      memmove(&route.passes[i], &route.passes[i + 1],
              (size_t)(route.passes_count - i - 1) * sizeof route.passes[0]);
      --route.passes_count;
      break;
    }
  }
  atomic_store_explicit(
      &route.newest,
      route.passes_count > 0 ? route.passes[route.passes_count - 1].generation : 0,
      memory_order_relaxed);
  pthread_mutex_unlock(&route.lock);
  /* This thread's ranges for it were closed already, by the pop of its `backward`. */
  for (int i = 0; i < nested_passes; ++i) {
    if (opened[i].generation == generation) {
      opened[i].open = 0;
      opened[i].generation = 0;
    }
  }
  seen.node = NULL;
  Py_RETURN_NONE;
}

/* pass_done(generation): the engine's end-of-pass callback, on the thread that finished that
 * pass (CUDA's autograd thread, for a pass whose last node ran there): closes the ranges this
 * thread opened for its nodes, and those opened above them, now rather than at this thread's
 * next launch in a later pass, so a trace's last backward scopes on that thread end with the
 * pass. Nothing where this thread opened none (the caller's own ranges close with `backward`). */
static PyObject* pass_done(PyObject* self, PyObject* generation_object) {
  (void)self;
  const unsigned long long generation = PyLong_AsUnsignedLongLong(generation_object);
  if (generation == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
  opened_ranges* done = NULL;
  for (int i = 0; i < nested_passes; ++i) {
    if (opened[i].generation == generation) done = &opened[i];
  }
  if (done == NULL) Py_RETURN_NONE;
  while (done->open > 0) { /* the slots opened above it first (passes begun in its nodes) */
    opened_ranges* latest = NULL;
    for (int i = 0; i < nested_passes; ++i) {
      opened_ranges* slot = &opened[i];
      if (slot == done || slot->open == 0 || slot->depths[0] <= done->depths[0]) continue;
      if (latest == NULL || slot->depths[0] > latest->depths[0]) latest = slot;
    }
    if (latest == NULL) break;
    close_to(latest, 0);
    latest->generation = 0;
  }
  close_to(done, 0);
  done->generation = 0;
  seen.node = NULL;
  Py_RETURN_NONE;
}

/* ---- for tests: torch's running node faked, the route's state read, a launch's call made ----- */

/* _sequence_testing(running_node, set_launch_scope_hook, torch_library): the route set up with a
 * test's functions (addresses of C functions: `const void* (void)` for the running node, the C
 * API's signature for the hook's setter) and torch's own sequence counter, where torch has no
 * running node to read (torch 1.13). */
static PyObject* sequence_testing(PyObject* self, PyObject* const* argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 3) {
    PyErr_Format(PyExc_TypeError, "_sequence_testing(running_node, set_launch_scope_hook, "
                 "torch_library) takes 3 arguments, not %zd", argc);
    return NULL;
  }
  void* running = PyLong_AsVoidPtr(argv[0]);
  void* set_hook = PyLong_AsVoidPtr(argv[1]);
  if (PyErr_Occurred() || find_torch_functions(argv[2]) != 0) return NULL;
  if (route.peek == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "_sequence_testing: no sequence counter in that library "
                    "(import torch first)");
    return NULL;
  }
  route.fake_running_node = (const void* (*)(void))running;
  launchwatch_py_set_launch_scope_hook = (launchwatch_set_launch_scope_hook_fn)set_hook;
  Py_RETURN_NONE;
}

/* [(begin, end, path)]: `table`'s calls, oldest first. */
static PyObject* calls_of(const call_table* table) {
  PyObject* calls = PyList_New(0);
  if (calls == NULL) return NULL;
  for (long i = 0; i < table->count; ++i) {
    const call* c = &table->calls[i];
    PyObject* path = PyTuple_New(c->depth);
    for (uint32_t n = 0; path != NULL && n < c->depth; ++n) {
      PyObject* name = PyBytes_FromString(table->names[c->names + n]);
      if (name == NULL) Py_CLEAR(path);
      else PyTuple_SetItem(path, n, name);
    }
    PyObject* item = path == NULL ? NULL : Py_BuildValue("(KKN)", (unsigned long long)c->begin,
                                                         (unsigned long long)c->end, path);
    if (item == NULL || PyList_Append(calls, item) != 0) {
      Py_XDECREF(item);
      Py_CLEAR(calls);
      break;
    }
    Py_DECREF(item);
  }
  return calls;
}

/* _sequence_calls() -> [(begin, end, path)]: the recorded forward calls, oldest first. */
static PyObject* sequence_calls(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  pthread_mutex_lock(&route.lock);
  PyObject* calls = calls_of(&route.table);
  pthread_mutex_unlock(&route.lock);
  return calls;
}

/* _sequence_recomputed_calls() -> [(begin, end, path)]: this thread's newest recompute's calls. */
static PyObject* sequence_recomputed_calls(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  return calls_of(&recomputed);
}

/* _sequence_launch(): what the injection does at a launch on this thread (the hook). */
static PyObject* sequence_launch(PyObject* self, PyObject* unused) {
  (void)self;
  (void)unused;
  resolve_backward_scope();
  Py_RETURN_NONE;
}

static PyMethodDef sequence_methods[] = {
    {"sequence_setup", sequence_setup, METH_O,
     "sequence_setup(torch_library) -> bool: finds autograd's running node and sequence counter\n"
     "in torch's library; False where torch or the injection lacks what the route needs."},
    {"sequence_offsets", sequence_offsets, METH_O,
     "sequence_offsets(number) -> int: from a graph node's pre hook, a bit per 8-byte word of\n"
     "the running node that holds `number` (install() measures the offset with it)."},
    {"sequence_peek", sequence_peek, METH_NOARGS,
     "sequence_peek() -> int: autograd's next sequence number on this thread."},
    {"sequence_thread_id", sequence_thread_id, METH_NOARGS,
     "sequence_thread_id() -> int: torch's id of this thread, as the nodes made here hold it."},
    {"sequence_start", (PyCFunction)(void (*)(void))sequence_start, METH_FASTCALL,
     "sequence_start(offset, thread_offset=0) -> bool: the sequence route on, a node's number\n"
     "read at `offset`, the id of the thread that made it at `thread_offset` (0: not known)."},
    {"sequence_stop", sequence_stop, METH_NOARGS,
     "sequence_stop(): the sequence route off for good; graph-node hooks from then on."},
    {"sequence_on", sequence_on, METH_NOARGS,
     "sequence_on() -> bool: whether the sequence route is in use."},
    {"pass_begins", (PyCFunction)(void (*)(void))pass_begins, METH_FASTCALL,
     "pass_begins(generation, caller_path, caller_thread): a backward pass began."},
    {"pass_ends", pass_ends, METH_O, "pass_ends(generation): that backward pass returned."},
    {"pass_done", pass_done, METH_O,
     "pass_done(generation): the engine finished that pass on this thread; its ranges here close."},
    {"_sequence_testing", (PyCFunction)(void (*)(void))sequence_testing, METH_FASTCALL,
     "_sequence_testing(running_node, set_launch_scope_hook, torch_library): for tests, torch's\n"
     "running node read through a test's function."},
    {"_sequence_calls", sequence_calls, METH_NOARGS,
     "_sequence_calls() -> [(begin, end, path)]: for tests, the recorded forward calls."},
    {"_sequence_recomputed_calls", sequence_recomputed_calls, METH_NOARGS,
     "_sequence_recomputed_calls() -> [(begin, end, path)]: for tests, this thread's newest\n"
     "recompute's calls."},
    {"_sequence_launch", sequence_launch, METH_NOARGS,
     "_sequence_launch(): for tests, what a kernel launch on this thread does."},
    {NULL, NULL, 0, NULL},
};

int launchwatch_py_add_sequence(PyObject* module) {
  return PyModule_AddFunctions(module, sequence_methods);
}
