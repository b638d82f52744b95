#!/usr/bin/env python3
"""The GPU kit's table (bench/gpu/run.sh): measured against planned and simulated.

Usage: table.py RESULTS_DIR MODE PLANNED_N DEPTH > table.md

Reads from RESULTS_DIR: plan.json (moetune plan --json --predict), measured-strict.json and,
in GPU mode, measured-unified.json (moetune bench --json with the real llama-bench),
simulated-strict.json and simulated-silent.json (moetune bench --engine sim --json). Every
figure is tokens per second (mean of the repetitions); "failed (kind)" is a configuration the
engine could not run; the ratio columns are measured / simulated for the same spill mode.
"""
import json
import os
import sys


def load(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def cells(doc):
    """(n_cpu_moe, depth, kind) -> (tokens/s or None, failure kind or None)."""
    out = {}
    if doc is None:
        return out
    for r in doc.get("results", []):
        kind = "pp" if r.get("n_prompt", 0) > 0 else "tg"
        key = (r.get("n_cpu_moe"), r.get("n_depth", 0), kind)
        if r.get("ok"):
            out[key] = (r["tokens_per_second"]["mean"], None)
        else:
            out[key] = (None, (r.get("failure") or {}).get("kind", "failed"))
    return out


def show(cell):
    if cell is None:
        return "-"
    tps, failure = cell
    return f"failed ({failure})" if tps is None else f"{tps:.1f}"


def ratio(measured, simulated):
    if not measured or not simulated or measured[0] is None or simulated[0] is None:
        return "-"
    return f"{measured[0] / simulated[0]:.2f}"


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    folder, mode, planned, depth = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    plan = load(os.path.join(folder, "plan.json")) or {}
    strict = cells(load(os.path.join(folder, "measured-strict.json")))
    unified = cells(load(os.path.join(folder, "measured-unified.json")))
    sim_strict = cells(load(os.path.join(folder, "simulated-strict.json")))
    sim_silent = cells(load(os.path.join(folder, "simulated-silent.json")))
    headroom = {o["n_cpu_moe"]: o for o in plan.get("options", [])}

    print(f"# GPU kit results ({mode} mode)\n")
    if mode == "cpu":
        print("CPU backend, no ballast: the runs and the simulation are of this machine's CPU")
        print("(the plan's headroom is for the emulated card); this run checks the kit and the")
        print("CPU side of the speed model, not the GPU figures.\n")
    print(f"Planned: --n-cpu-moe {planned} for a {plan.get('budget_bytes', 0) / 2**30:.2f} GiB "
          f"budget at context {depth}; tokens/s, mean of the repetitions.\n")
    cols = ["N", "depth", "test", "plan headroom MiB", "measured strict", "simulated strict",
            "ratio"]
    if mode == "gpu":
        cols += ["measured unified", "simulated silent", "ratio"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    keys = sorted(set(strict) | set(sim_strict) | set(unified))
    for n, d, kind in keys:
        option = headroom.get(n)
        room = "-" if option is None else f"{option['headroom_bytes'] / 2**20:.0f}"
        mark = " (plan)" if n == planned else ""
        row = [f"{n}{mark}", str(d), kind, room, show(strict.get((n, d, kind))),
               show(sim_strict.get((n, d, kind))),
               ratio(strict.get((n, d, kind)), sim_strict.get((n, d, kind)))]
        if mode == "gpu":
            row += [show(unified.get((n, d, kind))), show(sim_silent.get((n, d, kind))),
                    ratio(unified.get((n, d, kind)), sim_silent.get((n, d, kind)))]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
