#!/usr/bin/env python3
"""Compare the CPU time of two commands, run alternately.

usage: tools/ab_cpu.py [-n ROUNDS] [--setup CMD] 'COMMAND A' 'COMMAND B'

Each round runs SETUP (if given, not timed) then A, SETUP then B (each through sh -c; every
other round B first, as the second run of a pair can differ from the first by a few
percent, the page cache and writeback of the first's files, say), and takes each
command's CPU time (user + system of it and its children, from rusage). It
prints each side's minimum, lower quartile and median, and the paired ratio A/B of each
round: its median and quartiles, and the rounds A took less CPU in. On a shared or
virtual machine, where single runs move by ±30%, the paired ratio over 20 or more rounds
is the figure to quote; a median within 0.97-1.03 with A winning about half the rounds is
no difference that this machine can show.

Example (huge-page tables on against off, docs/tokenizer-performance.md):
  tools/ab_cpu.py -n 20 --setup 'rm -rf /tmp/out' \\
    'bin/tokenize run --input docs.jsonl --name b --tokenizer gpt2 --output /tmp/out --progress off' \\
    'GPTKIT_HUGEPAGES=0 bin/tokenize run --input docs.jsonl --name b --tokenizer gpt2 --output /tmp/out --progress off'
"""
import argparse
import resource
import statistics
import subprocess
import sys


def cpu_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(["sh", "-c", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"ab_cpu: {cmd!r} exited with {done.returncode}:\n{done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def quartiles(v):
    v = sorted(v)
    return v[0], v[len(v) // 4], statistics.median(v), v[(3 * len(v)) // 4]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=20, help="rounds (default 20)")
    ap.add_argument("--setup", default="", help="command run before each timed one, untimed")
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    a, b = [], []
    for r in range(args.n):
        pair = ((args.a, a), (args.b, b))
        for cmd, out in pair if r % 2 == 0 else pair[::-1]:
            if args.setup and subprocess.run(["sh", "-c", args.setup]).returncode != 0:
                sys.exit(f"ab_cpu: the setup {args.setup!r} failed")
            out.append(cpu_of(cmd))
        print(f"round {r + 1}: A {a[-1]:.3f} s, B {b[-1]:.3f} s", file=sys.stderr)
    for name, v in (("A", a), ("B", b)):
        lo, q1, med, q3 = quartiles(v)
        print(f"{name}: CPU s min {lo:.3f}  q1 {q1:.3f}  median {med:.3f}  q3 {q3:.3f}")
    ratios = [x / y for x, y in zip(a, b) if y > 0]
    if not ratios:
        sys.exit("ab_cpu: B took no measurable CPU")
    _, q1, med, q3 = quartiles(ratios)
    wins = sum(r < 1 for r in ratios)
    print(f"A/B paired: median {med:.3f}  quartiles {q1:.3f}-{q3:.3f}  A took less CPU in {wins} of {len(ratios)} rounds")


if __name__ == "__main__":
    main()
