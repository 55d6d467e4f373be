#!/usr/bin/env python3
"""Checks, in the machine code of the launch-path hooks, that an idle launch costs one load and one
branch.

The contract (docs/design.md section 2, behaviour 2) says that with nothing installed a launch costs one
relaxed atomic load: no lock, no call, no allocation. A timing can't show that reliably (a load and
a branch are under a nanosecond, below a shared machine's noise), but the instructions can: this
script disassembles an object file compiled from the hooks (idle_path_probe.cpp), follows every
path through each probe function, and asserts that every path which returns without calling out
(the path taken while the observing flag is clear) holds exactly one memory access, a load of the
flag, and exactly one conditional branch, with no call, no lock prefix, no stack access and no
other jump.

Position-independent code for a shared library cannot reach a variable another module may define
without the global offset table, so with --pic one extra load is allowed: the flag's address from
the GOT (a load the linker turns into a `lea` when the code is linked into an executable), and the
one flag load must then go through the register it filled.

Prints the probe's disassembly and a verdict for each function; exits 1 when any check fails.
Prints a line starting with SKIPPED (ctest's skip pattern) where the object is not x86-64.
"""

import argparse
import re
import subprocess
import sys

PREFIXES = {
    "lock", "rep", "repz", "repe", "repnz", "repne", "data16", "data32", "addr32", "cs", "ds",
    "es", "ss", "fs", "gs", "notrack", "bnd", "rex", "rex.w", "rex.W", "xacquire", "xrelease",
}
RET = {"ret", "retq", "retl", "retn", "retw"}
JMP = {"jmp", "jmpq", "jmpl", "jmpw"}
# Instructions that touch the stack (memory) without naming it in an operand.
IMPLICIT_MEMORY = {"push", "pushq", "pushl", "pushw", "pop", "popq", "popl", "popw", "leave",
                   "leaveq", "enter", "enterq", "pushf", "pushfq", "popf", "popfq"}
TRAPS = {"ud2", "hlt", "int3", "ud1", "ud0"}
# Instructions that only read their memory operand.
READ_ONLY_FAMILIES = ("cmp", "test", "bt")
MOVES = re.compile(r"^(mov[bwlq]?|movz[bw][wlq]?|movs[bw][wlq]?|movslq|movzx|movsx|movabs)$")

FUNCTION_RE = re.compile(r"^([0-9a-f]+) <(.+)>:$")
INSN_RE = re.compile(r"^\s+([0-9a-f]+):\t(.*)$")
RELOC_RE = re.compile(r"^\s+([0-9a-f]+): (R_\S+)\s+(.*)$")
ADDEND_RE = re.compile(r"[+-]0x[0-9a-f]+$")


class Insn:
    def __init__(self, address, text):
        self.address = address
        self.text = text.rstrip()
        self.relocs = []  # (type, symbol)
        body = self.text.split("#", 1)[0].strip()
        tokens = body.split()
        self.prefixes = []
        while tokens and tokens[0] in PREFIXES:
            self.prefixes.append(tokens.pop(0))
        self.mnemonic = tokens[0] if tokens else ""
        self.operand_text = " ".join(tokens[1:])
        # Drop the symbolic annotation objdump puts after a branch target.
        self.operands = split_operands(re.sub(r"<[^>]*>", "", self.operand_text).strip())

    @property
    def is_ret(self):
        return self.mnemonic in RET

    @property
    def is_call(self):
        return self.mnemonic.startswith("call")

    @property
    def is_jmp(self):
        return self.mnemonic in JMP

    @property
    def is_conditional_branch(self):
        m = self.mnemonic
        return (m.startswith("j") and m not in JMP) or m.startswith("loop")

    @property
    def is_nop(self):
        m = self.mnemonic
        if m.startswith("nop") or m in ("endbr64", "endbr32", "pause"):
            return True
        # `xchg %ax,%ax` is the two-byte nop.
        return m == "xchg" and len(self.operands) == 2 and self.operands[0] == self.operands[1] \
            and not self.memory_operands()

    @property
    def has_lock(self):
        # xchg with memory is locked without the prefix.
        return "lock" in self.prefixes or (self.mnemonic.startswith("xchg") and
                                           bool(self.memory_operands()))

    def memory_operands(self):
        if self.mnemonic.startswith("lea") or self.mnemonic.startswith("nop"):
            return []
        found = []
        for op in self.operands:
            if "(" in op or re.search(r"%[cdefgs]s:", op):
                found.append(op)
            elif self.mnemonic == "movabs" and not op.startswith(("$", "%")):
                found.append(op)
        return found

    def touches_memory(self):
        return bool(self.memory_operands()) or self.mnemonic in IMPLICIT_MEMORY or self.is_call

    def reads_memory_only(self):
        """Whether the instruction's one memory operand is only read."""
        mem = self.memory_operands()
        if len(mem) != 1 or self.has_lock:
            return False
        if self.mnemonic.startswith(READ_ONLY_FAMILIES):
            return True
        if MOVES.match(self.mnemonic):
            return len(self.operands) == 2 and self.operands[0] == mem[0]
        return False

    def branch_target(self):
        """The target address of a direct branch, or None for an indirect one."""
        if not self.operands or self.operands[0].startswith("*"):
            return None
        try:
            return int(self.operands[0], 16)
        except ValueError:
            return None


def split_operands(text):
    operands, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            operands.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        operands.append(current.strip())
    return operands


def symbol_of(reloc_target):
    return ADDEND_RE.sub("", reloc_target.strip())


def parse(disassembly):
    functions, current, listing = {}, None, {}
    for line in disassembly.splitlines():
        m = FUNCTION_RE.match(line)
        if m:
            current = m.group(2)
            functions[current] = []
            listing[current] = [line]
            continue
        if current is None:
            continue
        if not line.strip():
            continue
        r = RELOC_RE.match(line)
        if r:
            offset = int(r.group(1), 16)
            # A relocation patches bytes inside the last instruction that starts at or before it.
            for insn in reversed(functions[current]):
                if insn.address <= offset:
                    insn.relocs.append((r.group(2), symbol_of(r.group(3))))
                    break
            listing[current].append(line)
            continue
        i = INSN_RE.match(line)
        if i:
            functions[current].append(Insn(int(i.group(1), 16), i.group(2)))
            listing[current].append(line)
    return functions, listing


def paths(insns):
    """Every path from the entry: (list of instructions, how it ends).

    Ends: 'ret' (returns from the probe), 'leaves' (jumps out: a tail call or a cold section),
    'traps', 'loops', 'falls-off', 'unknown'.
    """
    index_of = {insn.address: n for n, insn in enumerate(insns)}
    found = []

    def walk(n, path):
        while True:
            if n >= len(insns):
                found.append((path, "falls-off"))
                return
            if n in [index_of[p.address] for p in path]:
                found.append((path, "loops"))
                return
            insn = insns[n]
            path = path + [insn]
            if insn.is_ret:
                found.append((path, "ret"))
                return
            if insn.mnemonic in TRAPS:
                found.append((path, "traps"))
                return
            if insn.mnemonic.startswith("(bad)") or not insn.mnemonic:
                found.append((path, "unknown"))
                return
            if insn.is_jmp or insn.is_conditional_branch:
                target = insn.branch_target()
                inside = not insn.relocs and target is not None and target in index_of
                if insn.is_jmp:
                    if not inside:
                        found.append((path, "leaves"))
                        return
                    n = index_of[target]
                    continue
                if inside:
                    walk(index_of[target], path)
                else:
                    found.append((path, "leaves"))
            n += 1

    walk(0, [])
    return found


def check_idle_path(path, flag, pic):
    """Problems with one path that returns without calling out; empty when it is one load and one
    branch."""
    problems = []
    got_registers, flag_loads, got_loads, other_memory, branches, jumps = set(), [], [], [], [], []
    for insn in path:
        if insn.is_ret or insn.is_nop:
            continue
        if insn.has_lock:
            problems.append(f"a locked instruction: `{insn.text}`")
        if insn.is_conditional_branch:
            branches.append(insn)
            continue
        if insn.is_jmp:
            jumps.append(insn)
            continue
        if not insn.touches_memory():
            continue
        mem = insn.memory_operands()
        reloc_symbols = {(kind, sym) for kind, sym in insn.relocs}
        names_flag = any(sym == flag for _, sym in reloc_symbols)
        via_got = any("GOT" in kind for kind, sym in reloc_symbols if sym == flag)
        if names_flag and via_got and insn.reads_memory_only():
            got_loads.append(insn)
            got_registers.add(insn.operands[-1])
        elif names_flag and insn.reads_memory_only():
            flag_loads.append(insn)
        elif (mem and insn.reads_memory_only() and
              re.fullmatch(r"(-?0x[0-9a-f]+)?\((%\w+)\)", mem[0]) and
              re.fullmatch(r"(-?0x[0-9a-f]+)?\((%\w+)\)", mem[0]).group(2) in got_registers):
            flag_loads.append(insn)
        else:
            other_memory.append(insn)

    if len(flag_loads) != 1:
        problems.append(f"{len(flag_loads)} loads of `{flag}` (expected exactly 1)")
    if got_loads and not pic:
        problems.append("the flag's address is loaded from the GOT, which only --pic code may do: "
                        + "; ".join(f"`{i.text}`" for i in got_loads))
    if len(got_loads) > 1:
        problems.append(f"{len(got_loads)} GOT loads (expected at most 1)")
    for insn in other_memory:
        problems.append(f"a memory access other than the flag load: `{insn.text}`")
    if len(branches) != 1:
        problems.append(f"{len(branches)} conditional branches (expected exactly 1)")
    for insn in jumps:
        problems.append(f"an extra jump: `{insn.text}`")
    if flag_loads and branches and path.index(flag_loads[0]) > path.index(branches[0]):
        problems.append("the branch comes before the flag is loaded")
    return problems


def check_function(name, insns, flag, pic):
    problems = []
    all_paths = paths(insns)
    idle = [p for p, end in all_paths if end == "ret" and not any(i.is_call for i in p)]
    observed = [p for p, end in all_paths
                if end == "leaves" or (end == "ret" and any(i.is_call for i in p))]
    if not idle:
        problems.append("no path returns without calling out: nothing skips the observed path "
                        "when the flag is clear (was the flag check removed?)")
    if not observed:
        problems.append("no path calls out to the observed hook: the probe does not exercise the "
                        "hook it names")
    for p, end in all_paths:
        if end in ("traps", "loops", "falls-off", "unknown"):
            problems.append(f"a path that {end} after `{p[-1].text if p else ''}`")
    for p in idle:
        problems.extend(check_idle_path(p, flag, pic))
    return problems, idle


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objdump", default="objdump")
    parser.add_argument("--object", required=True, help="the probe's object file")
    parser.add_argument("--flag", default="launchwatch::detail::launch_watch::word_",
                        help="the demangled name of the observing flag")
    parser.add_argument("--pic", action="store_true",
                        help="the object is position-independent: allow one GOT load")
    parser.add_argument("functions", nargs="+", help="probe functions to check")
    args = parser.parse_args()

    header = subprocess.run([args.objdump, "-f", args.object], capture_output=True, text=True)
    if header.returncode != 0:
        print(f"FAILED: `{args.objdump} -f {args.object}` failed: {header.stderr.strip()}\n"
              "Build the probe target first (it is built with the benchmarks).")
        return 1
    if "x86-64" not in header.stdout:
        arch = re.search(r"architecture: (\S+)", header.stdout)
        print(f"SKIPPED: the idle-path check reads x86-64 machine code; this object is "
              f"{arch.group(1).rstrip(',') if arch else 'another architecture'}.")
        return 0

    result = subprocess.run([args.objdump, "-d", "-r", "-C", "--no-show-raw-insn", args.object],
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"FAILED: objdump could not disassemble {args.object}: {result.stderr.strip()}")
        return 1
    functions, listing = parse(result.stdout)

    failed = False
    mode = "position-independent (-fPIC)" if args.pic else "position-dependent or PIE"
    print(f"Idle-path check of {args.object} ({mode}), flag `{args.flag}`\n")
    for name in args.functions:
        if name not in functions:
            print(f"FAILED: {name}: not found in {args.object} (found: "
                  f"{', '.join(sorted(functions)) or 'no functions'})")
            failed = True
            continue
        print("\n".join(listing[name]))
        problems, idle = check_function(name, functions[name], args.flag, args.pic)
        if problems:
            failed = True
            print(f"FAILED: {name}: the idle path is not one load and one branch:")
            for problem in problems:
                print(f"  - {problem}")
        else:
            for p in idle:
                shown = "; ".join(i.text.split("#")[0].strip() for i in p if not i.is_nop)
                print(f"ok: {name}: idle path = {shown}")
        print()
    if failed:
        print("The idle path of a launch must be one relaxed load of the observing flag and one "
              "branch (docs/design.md section 2, behaviour 2). See the listing above for what the "
              "compiler made of the hooks in include/launchwatch/launch_path.hpp.")
        return 1
    print("All probes: one load of the flag and one branch before returning.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
