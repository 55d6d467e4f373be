#!/usr/bin/env python3
"""What a pre hook on an autograd graph node costs, registered through torch's Python API against
one added in C++ (issue 22: torch's part of the graph-node hooks is the largest share of what the
module hooks cost a training step).

Per node of a chain of 90 relu(x * 1.0) nodes on a CPU tensor of 8 floats, medians over 400
rounds, the configurations alternating in order round by round, garbage collection off:
- `register_prehook`: `grad_fn.register_prehook(no-op)`, what launchwatch/torch.py does today;
- `C++ add_pre_hook`: a C++ FunctionPreHook that counts, added by a plain CPython function
  (METH_O) of a C++ extension compiled against torch's headers;
- the same added through a pybind11 binding, and the CPython call alone (no hook added): what the
  call itself costs;
- no hook on any node, but one global RecordFunction callback for the autograd engine's nodes
  (BACKWARD_FUNCTION scope), on while the configuration runs, and two reads of autograd's sequence
  number per node: what a design that maps each node's sequence number to the module whose forward
  made it would pay (the reads stand for a module call's two forward hooks).
Prints, per node, the forward (building the chain), the time to register and what the hook added
to backward().

Needs a C++ compiler, torch's C++ headers and pybind11 (Debian: libtorch-dev, pybind11-dev; a pip
wheel of torch ships its headers); the extension is compiled on first use (about half a minute)
and cached by torch.utils.cpp_extension. A probe for a design decision, not part of the tests.

    python3 bench/torch/node_hook_probe.py [--rounds 400]
"""

import argparse
import gc
import statistics
import time

import torch
from torch.utils.cpp_extension import load_inline

CPP = r"""
#include <torch/extension.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_function.h>
#include <ATen/record_function.h>
#include <ATen/SequenceNumber.h>

#include <atomic>
#include <memory>

using namespace torch::autograd;

static std::atomic<long> calls{0};

struct counting_hook : FunctionPreHook {
  variable_list operator()(const variable_list& grads) override {
    calls.fetch_add(1, std::memory_order_relaxed);
    return grads;
  }
};

static std::shared_ptr<Node> node_of(PyObject* object) {
  if (THPCppFunction_Check(object)) return reinterpret_cast<THPCppFunction*>(object)->cdata;
  if (THPFunction_Check(object)) return reinterpret_cast<THPFunction*>(object)->cdata.lock();
  return nullptr;
}

static PyObject* touch(PyObject*, PyObject* grad_fn) {
  if (!node_of(grad_fn)) {
    PyErr_SetString(PyExc_TypeError, "not a graph node");
    return nullptr;
  }
  Py_RETURN_NONE;
}

static PyObject* add_counting(PyObject*, PyObject* grad_fn) {
  const auto node = node_of(grad_fn);
  if (!node) {
    PyErr_SetString(PyExc_TypeError, "not a graph node");
    return nullptr;
  }
  node->add_pre_hook(std::make_unique<counting_hook>());
  Py_RETURN_NONE;
}

static PyMethodDef touch_def{"touch", touch, METH_O, nullptr};
static PyMethodDef add_def{"add_counting", add_counting, METH_O, nullptr};

py::object cpython_functions() {
  return py::make_tuple(py::reinterpret_steal<py::object>(PyCFunction_New(&touch_def, nullptr)),
                        py::reinterpret_steal<py::object>(PyCFunction_New(&add_def, nullptr)));
}

void add_counting_pybind(py::handle grad_fn) {
  const auto node = node_of(grad_fn.ptr());
  if (!node) throw std::invalid_argument("not a graph node");
  node->add_pre_hook(std::make_unique<counting_hook>());
}

long hook_calls() { return calls.load(); }

// A global RecordFunction callback for the autograd engine's nodes only (BACKWARD_FUNCTION): the
// engine then calls it at each node's start and end, with the node's sequence number, which a
// forward hook could have read (at::sequence_number::peek) to know which module made the node.
static std::atomic<long> node_starts{0};
static std::atomic<std::uint64_t> sequence_sum{0};
static std::unique_ptr<at::ObserverContext> node_started(const at::RecordFunction& fn) {
  node_starts.fetch_add(1, std::memory_order_relaxed);
  sequence_sum.fetch_add(static_cast<std::uint64_t>(fn.seqNr()), std::memory_order_relaxed);
  return nullptr;
}
static void node_ended(const at::RecordFunction&, at::ObserverContext*) {}
static at::CallbackHandle node_callback = 0;

void node_callback_on() {
  node_callback = at::addGlobalCallback(
      at::RecordFunctionCallback(node_started, node_ended)
          .needsInputs(false)
          .scopes({at::RecordScope::BACKWARD_FUNCTION}));
}
void node_callback_off() { at::removeCallback(node_callback); }
long node_callback_starts() { return node_starts.load(); }

static PyObject* peek(PyObject*, PyObject*) {
  return PyLong_FromUnsignedLongLong(at::sequence_number::peek());
}
static PyMethodDef peek_def{"peek", peek, METH_O, nullptr};
py::object peek_function() {
  return py::reinterpret_steal<py::object>(PyCFunction_New(&peek_def, nullptr));
}
"""

NODES = 90


def chain():
    x = torch.ones(8, requires_grad=True)
    y = x
    nodes = []
    for _ in range(NODES):
        y = torch.relu(y * 1.0)
        nodes.append(y.grad_fn)
    return y, nodes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    ext = load_inline("launchwatch_node_hook_probe", cpp_sources=CPP,
                      functions=["cpython_functions", "add_counting_pybind", "hook_calls",
                                 "node_callback_on", "node_callback_off",
                                 "node_callback_starts", "peek_function"])
    touch, add_counting = ext.cpython_functions()
    peek = ext.peek_function()

    def peek_twice(node):  # what a module call's two forward hooks would read
        peek(node)
        peek(node)

    def no_op(*_):
        return None

    configurations = {
        "no hook": None,
        "register_prehook (torch's Python API)": lambda node: node.register_prehook(no_op),
        "C++ add_pre_hook, CPython call": add_counting,
        "C++ add_pre_hook, pybind11 call": ext.add_counting_pybind,
        "the CPython call alone, no hook": touch,
        "global node callback (RecordFunction), two sequence reads": peek_twice,
    }
    callback_configuration = "global node callback (RecordFunction), two sequence reads"
    forward = {name: [] for name in configurations}
    register = {name: [] for name in configurations}
    backward = {name: [] for name in configurations}
    gc.disable()
    for round_ in range(args.rounds):
        order = list(configurations.items())
        if round_ % 2:
            order.reverse()
        for name, add in order:
            if name == callback_configuration:
                ext.node_callback_on()
            forward_began = time.perf_counter_ns()
            y, nodes = chain()
            began = time.perf_counter_ns()
            if add is not None:
                for node in nodes:
                    add(node)
            registered = time.perf_counter_ns()
            y.sum().backward()
            ended = time.perf_counter_ns()
            if name == callback_configuration:
                ext.node_callback_off()
            forward[name].append((began - forward_began) / NODES)
            register[name].append((registered - began) / NODES)
            backward[name].append((ended - registered) / NODES)
            del y, nodes
        if round_ % 50 == 49:
            gc.collect()
    gc.enable()
    base = statistics.median(backward["no hook"])
    print(f"torch {torch.__version__}, {NODES} nodes a chain, {args.rounds} rounds, medians per node")
    print("| hook | forward ns | register ns | backward ns | added to backward ns |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in configurations:
        b = statistics.median(backward[name])
        print(f"| {name} | {statistics.median(forward[name]):.0f} | "
              f"{statistics.median(register[name]):.0f} | {b:.0f} | {b - base:+.0f} |")
    expected = 2 * NODES * args.rounds
    assert ext.hook_calls() == expected, f"the C++ hooks ran {ext.hook_calls()} times, not {expected}"
    starts = ext.node_callback_starts()
    assert starts >= NODES * args.rounds, f"the node callback ran {starts} times, not >= {NODES * args.rounds}"


if __name__ == "__main__":
    main()
