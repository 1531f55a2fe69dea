#!/usr/bin/env python3
"""memcached under mutrace and under the klocks profile (before and after the fix of waits
that end during the stack walk), rounds interleaved: per round mutrace's top 5 (its default
order, by contention count) and where each klocks build ranks those locks by total wait (#)
and by number of waits (w); then how often each tool's top 5 repeats across its own runs,
the waits shorter than 1 µs, and mutrace's and klocks' holds and contention rates.

usage: combined.py DIR PREFIX ROUNDS [PREFIX ROUNDS ...]   (files written by the run script:
mc-PREFIXi-mutrace.err, klocks-PREFIXi-{old,new}.json, slap-PREFIXi-{none,mutrace,old,new}.out)

A lock is named by its offset in memcached's image (S+0x...) when it lies there (statics),
else by its site and its address's page offset (H<site>@<addr & 0xfff>)."""
import itertools, json, re, statistics, sys

KINDS = ["old", "new"]


def ident(addr, base, site):
    off = addr - base
    return "S+%#x" % off if 0 <= off < 0x200000 else "H%s@%03x" % (site, addr & 0xFFF)


def mutrace(path):
    txt = open(path).read()
    base, sites, addrs, rows = None, {}, {}, []
    for m in re.finditer(r"Mutex #(\d+) \(0x(0x[0-9a-f]+)\) first referenced by:\n((?:\t.*\n)+)", txt):
        fm = re.search(r"memcached\(\+(0x[0-9a-f]+)\) \[(0x[0-9a-f]+)\]", m.group(3))
        sites[int(m.group(1))] = fm.group(1) if fm else None
        addrs[int(m.group(1))] = int(m.group(2), 16)
        if fm:
            base = int(fm.group(2), 16) - int(fm.group(1), 16)
    for line in txt.split("Mutex #   Locked")[1].split("...")[0].splitlines()[1:]:
        f = line.split()
        if len(f) >= 7 and f[0].isdigit():
            mid = int(f[0])
            rows.append(dict(id=ident(addrs[mid], base, sites[mid]), locked=int(f[1]), cont=int(f[3]),
                             cont_ms=float(f[4]), tot_ms=float(f[5])))
    return rows


def klocks(path):
    head, rows = None, []
    for line in open(path):
        o = json.loads(line)
        if o["type"] == "profile":
            head = o
        if o["type"] == "lock" and o["rank"] is not None:
            s = o["site"]
            base = int(s["address"], 16) - (s["offset"] or 0)
            th = sum(h["timed_holds"] for h in o["holds"])
            rows.append(dict(id=ident(int(o["address"], 16), base, hex(s["offset"] or 0)),
                             locked=sum(h["acquisitions"] for h in o["holds"]),
                             cont=sum(h["contended"] for h in o["holds"]), wait_us=o["wait_ns"] / 1e3,
                             hold_ns=sum(h["hold_ns"] for h in o["holds"]) / th if th else 0))
    return head, rows


def top(rows, key, n=5):
    return [r["id"] for r in sorted(rows, key=lambda r: -r[key])[:n]]


def main():
    d, args = sys.argv[1], sys.argv[2:]
    rounds = [(p, i) for p, n in zip(args[::2], args[1::2]) for i in range(1, int(n) + 1)]
    runs, cpus, hits = [], [], {k: [0, 0] for k in KINDS}
    for number, (p, i) in enumerate(rounds, 1):
        mt = mutrace(f"{d}/mc-{p}{i}-mutrace.err")
        kl = {k: klocks(f"{d}/klocks-{p}{i}-{k}.json") for k in KINDS}
        runs.append((mt, {k: v[1] for k, v in kl.items()}))
        slap = {m: open(f"{d}/slap-{p}{i}-{m}.out").read() for m in ["none", "mutrace"] + KINDS}
        cpu = {m: next((l.split()[-1] for l in s.splitlines() if "cpu ms" in l), None) for m, s in slap.items()}
        if all(cpu.values()):
            cpus.append(cpu)
        print(f"### Round {number} ({slap['mutrace'].split()[3]} UTC, load {slap['mutrace'].split()[1]}"
              + ("; memcached CPU ms: " + ", ".join(f"{m} {v}" for m, v in cpu.items()) if all(cpu.values()) else "")
              + ")\n")
        print("```")
        print("untracked acquisitions: " + ", ".join(f"{k} {kl[k][0]['untracked_acquisitions']}" for k in KINDS))
        print(("mt#  lock          cont  cont ms |" + "|".join(f" {k}: wait# waits#  waits   wait µs " for k in KINDS)).rstrip())
        mtop = top(mt, "cont")
        for j, lid in enumerate(mtop):
            r = next(x for x in mt if x["id"] == lid)
            cells = []
            for k in KINDS:
                rows = kl[k][1]
                km = {x["id"]: x for x in rows}
                kw, kc = top(rows, "wait_us", 100), top(rows, "cont", 100)
                cells.append(f" #{kw.index(lid) + 1:<4} w{kc.index(lid) + 1:<4} {km[lid]['cont']:>5} {km[lid]['wait_us']:>9.1f} "
                             if lid in km else " not listed                      ")
            print((f"{j + 1:<4} {lid:<12} {r['cont']:>5} {r['cont_ms']:>8.3f} |" + "|".join(cells)).rstrip())
        for k in KINDS:
            rows = kl[k][1]
            km = {x["id"]: x for x in rows}
            kw, kc = top(rows, "wait_us"), top(rows, "cont")
            a, b = sum(l in kw for l in mtop), sum(l in kc for l in mtop)
            hits[k][0] += a == 5
            hits[k][1] += b == 5
            print(f"{k} top 5 by wait: " + ", ".join(f"{l} ({km[l]['cont']}, {km[l]['wait_us']:.0f} µs)" for l in kw))
            print(f"{k}: of mutrace's top 5, {a} in its top 5 by wait, {b} in its top 5 by number of waits")
        print("```\n")
    n = len(rounds)
    print("## Summary\n\n```")
    for k in KINDS:
        print(f"klocks {k}: mutrace's top 5 inside its top 5 by wait in {hits[k][0]} of {n} rounds, "
              f"by number of waits in {hits[k][1]} of {n}")
    print("\none run's top 5 (as a set) inside another run's of the same tool and ranking:")
    for name, tops in [("mutrace by contention count", [top(m, "cont") for m, _ in runs]),
                       ("mutrace by contended time", [top(m, "cont_ms") for m, _ in runs])] + \
                      [(f"klocks {k} by wait", [top(kk[k], "wait_us") for _, kk in runs]) for k in KINDS] + \
                      [(f"klocks {k} by number of waits", [top(kk[k], "cont") for _, kk in runs]) for k in KINDS]:
        pairs = list(itertools.permutations(range(len(tops)), 2))
        full = sum(set(tops[a]) <= set(tops[b]) for a, b in pairs)
        shared = sum(len(set(tops[a]) & set(tops[b])) for a, b in pairs) / len(pairs)
        print(f"  {name:<32} {full:>3} of {len(pairs)} ordered pairs of runs; {shared:.2f} of 5 locks shared on average")
    print("\nlisted locks waited for, whose mean wait is under 1 µs:")
    for k in KINDS:
        locks = short = waits = short_waits = 0
        for _, kk in runs:
            for r in kk[k]:
                if r["cont"]:
                    locks, waits = locks + 1, waits + r["cont"]
                    if r["wait_us"] < r["cont"]:
                        short, short_waits = short + 1, short_waits + r["cont"]
        print(f"  klocks {k}: {short} of {locks} locks ({short_waits} of {waits} waits)")
    print("\nmedian over the rounds: mutrace's mean hold (tot.Time / Locked) and contended share of")
    print("acquisitions, against klocks new's mean timed hold and contended share:")
    for lid in ["S+0x3fde0", "S+0x4ff80", "S+0x410e0", "S+0x4d970", "S+0x4d948"]:
        mh, mc, kh, kc = [], [], [], []
        for mt, kk in runs:
            m = {r["id"]: r for r in mt}
            kn = {r["id"]: r for r in kk["new"]}
            if lid in m:
                mh.append(m[lid]["tot_ms"] * 1e6 / m[lid]["locked"])
                mc.append(m[lid]["cont"] / m[lid]["locked"])
            if lid in kn:
                kh.append(kn[lid]["hold_ns"])
                kc.append(kn[lid]["cont"] / kn[lid]["locked"])
        print(f"  {lid:<10} mutrace hold {statistics.median(mh):4.0f} ns, contended {statistics.median(mc) * 100:4.2f}% | "
              f"klocks hold {statistics.median(kh):4.0f} ns, contended {statistics.median(kc) * 100:4.2f}%")
    print("\nsummed over the rounds (each tool's counts of a lock added up over its 22 runs), the top 5:")
    sums = {name: {} for name in ["mutrace contended", "mutrace contended ms", "klocks new wait µs", "klocks new waits"]}
    for mt, kk in runs:
        for r in mt:
            for name, key in [("mutrace contended", "cont"), ("mutrace contended ms", "cont_ms")]:
                sums[name][r["id"]] = sums[name].get(r["id"], 0) + r[key]
        for r in kk["new"]:
            for name, key in [("klocks new wait µs", "wait_us"), ("klocks new waits", "cont")]:
                sums[name][r["id"]] = sums[name].get(r["id"], 0) + r[key]
    tops = {name: sorted(c, key=lambda l: -c[l])[:7] for name, c in sums.items()}
    for name, c in sums.items():
        print(f"  {name:<22} " + ", ".join(f"{l} {c[l]:.0f}" for l in tops[name]))
    for name in ["klocks new wait µs", "klocks new waits"]:
        inside = [l for l in tops["mutrace contended"][:5] if l in tops[name][:5]]
        print(f"  of mutrace's summed top 5, {len(inside)} in the summed top 5 of {name}")
    if cpus:
        print(f"\nmemcached CPU time (utime + stime at the end of the load), {len(cpus)} rounds:")
        for m in cpus[0]:
            med = statistics.median(int(c[m]) for c in cpus)
            if m == "none":
                print(f"  none     median {med:.0f} ms")
            else:
                r = sorted(int(c[m]) / int(c["none"]) for c in cpus)
                print(f"  {m:<8} median {med:.0f} ms; against none in its round: median {statistics.median(r):.2f}x "
                      f"(range {r[0]:.2f}-{r[-1]:.2f})")
    print("```")


main()
