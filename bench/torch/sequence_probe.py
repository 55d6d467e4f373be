"""Probe (issue 22, the sequence route): what torch exports for reading the graph node its autograd
engine runs and that node's sequence number, and where the number sits in a node. Needs torch 2
and a GPU for its second half. Usage: python3 bench/torch/sequence_probe.py

Calls get_current_node through ctypes as a C function returning a pointer, which is NOT how it
returns (a std::shared_ptr, through a hidden pointer on x86-64): the first H200 run of this probe
showed garbage words and then crashed, which is how the route's C++ shim
(python/launchwatch/_c_running_node.cpp) came to be. Kept as that record; the route itself
measures the offset through the shim (torch.py's _sequence_offset)."""
import ctypes, glob, os, sys, time
import torch
print("torch", torch.__version__)
libdir = os.path.join(os.path.dirname(torch.__file__), "lib")
syms = {"get_current_node": "_ZN5torch8autograd16get_current_nodeEv",
        "peek": "_ZN2at15sequence_number4peekEv",
        "thread_id": "_ZN2at14RecordFunction15currentThreadIdEv"}
found = {}
for so in sorted(glob.glob(os.path.join(libdir, "libtorch*.so"))):
    lib = ctypes.CDLL(so, mode=ctypes.RTLD_GLOBAL)
    for k, s in syms.items():
        if k not in found:
            try:
                f = getattr(lib, s); found[k] = (os.path.basename(so), f)
            except AttributeError:
                pass
print({k: v[0] for k, v in found.items()}, "missing", [k for k in syms if k not in found])
print("_current_autograd_node", hasattr(torch._C, "_current_autograd_node"))
gcn = found["get_current_node"][1]; gcn.restype = ctypes.c_void_p
peek = found["peek"][1]; peek.restype = ctypes.c_uint64
tid = found["thread_id"][1]; tid.restype = ctypes.c_uint64
a = torch.zeros(4, requires_grad=True)
p0 = peek(); b = a * 2; p1 = peek(); c = b.sum(); p2 = peek()
print("peek", p0, p1, p2, "b seq", b.grad_fn._sequence_nr(), "c seq", c.grad_fn._sequence_nr(),
      "fwd thread id", tid())
offs = {}
def hook(node, want_seq):
    def h(grad_outputs):
        ptr = gcn()
        raw = ctypes.string_at(ptr, 96)
        words = [int.from_bytes(raw[i:i+8], "little") for i in range(0, 96, 8)]
        offs[node] = ([8*i for i, w in enumerate(words) if w == want_seq], words[:8])
    return h
b.grad_fn.register_prehook(hook("b", b.grad_fn._sequence_nr()))
c.grad_fn.register_prehook(hook("c", c.grad_fn._sequence_nr()))
c.backward()
print("offsets of sequence_nr_ in Node:", offs)
# ResNet-18 on the GPU: module seq ranges in forward, each backward node's module in backward.
import torchvision
m = torchvision.models.resnet18().cuda(); x = torch.randn(32, 3, 224, 224, device="cuda")
ranges = []
def pre(mod, args): mod._lw_b = peek()
def post(mod, args, out): ranges.append((mod._lw_b, peek(), mod.__class__.__name__))
hs = []
for mod in m.modules():
    hs.append(mod.register_forward_pre_hook(pre)); hs.append(mod.register_forward_hook(post))
y = m(x).sum()
print("modules called", len(ranges), "seq span", ranges[-1][:2])
# Every node in the graph: is its seq inside the innermost module range?
seen, stack, inside, outside = set(), [y.grad_fn], 0, 0
while stack:
    n = stack.pop()
    if n is None or id(n) in seen: continue
    seen.add(id(n))
    s = n._sequence_nr()
    if any(b0 <= s < e0 for b0, e0, _ in ranges): inside += 1
    else: outside += 1
    stack += [f for f, _ in n.next_functions]
print("graph nodes", len(seen), "inside a module range", inside, "outside", outside)
for h in hs: h.remove()
# Cost: ctypes calls are not the C cost; time peek via ctypes anyway for scale.
t = time.perf_counter(); [peek() for _ in range(100000)]; print("peek via ctypes ns", (time.perf_counter()-t)*1e4)
# On the device thread: the current node inside a CUDA backward, its sequence number at the offset.
off = None
if offs.get("b") and offs.get("c"):
    common = set(offs["b"][0]) & set(offs["c"][0])
    print("common offsets", sorted(common)); off = min(common) if common else None
seen_cuda = []
def cuda_hook(name, want):
    def h(grad_outputs):
        ptr = gcn()
        got = int.from_bytes(ctypes.string_at(ptr + off, 8), "little") if ptr and off else None
        seen_cuda.append((name, bool(ptr), got == want))
    return h
xa = torch.randn(64, 64, device="cuda", requires_grad=True)
h1 = xa @ xa; h2 = h1.relu().sum()
h1.grad_fn.register_prehook(cuda_hook("mm", h1.grad_fn._sequence_nr()))
h2.grad_fn.register_prehook(cuda_hook("sum", h2.grad_fn._sequence_nr()))
h2.backward()
print("cuda backward: (node, current node set, seq matches)", seen_cuda)
# Per-thread counters: a forward on another thread starts its own count.
import threading
other = []
t = threading.Thread(target=lambda: other.append(peek())); t.start(); t.join()
print("peek on a new thread", other, "main", peek())
