#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Aggregate bench/run.sh's results.csv and draw the plots (gnuplot).

  report.py --csv results.csv --out DIR --cmd "bench/run.sh ..." \
            --capacity GBPS --rate GBITS [--seconds S] [--fails N] ...

Writes DIR/points.csv (min/median/max per point and metric, over the
repetitions that succeeded), DIR/*.png (gnuplot, pngcairo) and
DIR/summary.md. Only the Python standard library and gnuplot are needed.
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
from collections import OrderedDict

KEYS = ["suite", "point", "tool", "op", "conn", "size", "qps", "procs",
        "threads", "mode", "rate_gbps", "drop", "stranded"]


def fnum(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def aggregate(rows):
    groups = OrderedDict()
    for r in rows:
        k = tuple(r[c] for c in KEYS) + (r["metric"], r["unit"])
        groups.setdefault(k, []).append(r)
    pts = []
    for k, rs in groups.items():
        good = [fnum(r["value"]) for r in rs
                if r["ok"] == "1" and fnum(r["value"]) is not None]
        anyv = [fnum(r["value"]) for r in rs if fnum(r["value"]) is not None]
        vals = good if good else anyv
        p = dict(zip(KEYS + ["metric", "unit"], k))
        p["n"] = len(rs)
        p["n_ok"] = sum(1 for r in rs if r["ok"] == "1")
        p["only_failed_runs"] = int(not good and bool(anyv))
        if vals:
            p["min"], p["median"], p["max"] = (min(vals),
                                              statistics.median(vals),
                                              max(vals))
        else:
            p["min"] = p["median"] = p["max"] = None
        for extra in ("machine_cpu_s", "machine_busy_cores", "server_cpu_s",
                      "client_cpu_s", "retransmits", "load1"):
            src = [r for r in rs if r["ok"] == "1"] or rs
            xs = [fnum(r[extra]) for r in src if fnum(r[extra]) is not None]
            p[extra + "_median"] = statistics.median(xs) if xs else None
        pts.append(p)
    return pts


def write_points(pts, path):
    cols = KEYS + ["metric", "unit", "n", "n_ok", "only_failed_runs", "min",
                   "median", "max", "machine_cpu_s_median",
                   "machine_busy_cores_median", "server_cpu_s_median",
                   "client_cpu_s_median", "retransmits_median",
                   "load1_median"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for p in pts:
            w.writerow({c: ("" if p.get(c) is None else
                            (f"{p[c]:.6g}" if isinstance(p[c], float)
                             else p[c])) for c in cols})


def find(pts, suite, point, metric):
    for p in pts:
        if (p["suite"] == suite and p["point"] == point
                and p["metric"] == metric):
            return p
    return None


def median_of(p):
    return p["median"] if p else None


def med(pts, suite, point, metric):
    return median_of(find(pts, suite, point, metric))


def gbps_points(pts, suite):
    """The goodput points of one suite."""
    return [p for p in pts if p["suite"] == suite and p["metric"] == "gbps"]


def ratio(num, den):
    """num / den of two figures; None when either is missing or zero."""
    return num / den if num and den else None


def baseline(pts, suite, point):
    """The clean 1-QP 64 KiB RC WRITE a suite compares with: its own
    measurement if it made one (full mode), else bw_size's (quick)."""
    p = find(pts, suite, point, "gbps")
    if p and p["median"] is not None:
        return p, f"{suite} {point}"
    return find(pts, "bw_size", "write/RC/65536", "gbps"), "bw_size write/RC/65536"


# ------------------------------------------------------------------ plots
class Plotter:
    def __init__(self, out, cap, rate, meta):
        self.out, self.cap, self.rate, self.meta = out, cap, rate, meta
        self.ok = shutil.which("gnuplot") is not None
        self.made = []
        os.makedirs(os.path.join(out, "plotdata"), exist_ok=True)

    def data(self, name, rows):
        path = os.path.join(self.out, "plotdata", name + ".dat")
        with open(path, "w") as f:
            for block in rows:
                for line in block:
                    f.write(" ".join(str(x) for x in line) + "\n")
                f.write("\n\n")
        return path

    def run(self, name, script):
        if not self.ok:
            return
        png = os.path.join(self.out, name + ".png")
        head = (f'set terminal pngcairo noenhanced size 1000,650 '
                f'font "sans,10"\n'
                f'set output "{png}"\n'
                f'set key below\n'
                f'set grid\nset bmargin 6\nset tmargin 4\n'
                f'set label 99 "{self.meta}" at screen 0.01,0.975 '
                f'font "sans,7"\n')
        gp = os.path.join(self.out, "plotdata", name + ".gp")
        with open(gp, "w") as f:
            f.write(head + script)
        r = subprocess.run(["gnuplot", gp], capture_output=True, text=True,
                           timeout=60)
        if r.returncode:
            sys.stderr.write(f"gnuplot {name}: {r.stderr}\n")
        else:
            self.made.append(name + ".png")

    def lines(self, name, blocks, titles, setup, tail=""):
        """One line with min..max bars per block of (x, min, median, max)."""
        if not blocks:
            return
        d = self.data(name, blocks)
        plots = ", ".join(
            f"'{d}' index {i} u 1:3:2:4 w yerrorlines lw 2 t '{t}'"
            for i, t in enumerate(titles))
        self.run(name, setup + "plot " + plots + tail + "\n")

    def cap_axes(self, ymax):
        """Left axis Gb/s, right axis the same scale as efficiency vs the
        wire's payload capacity, and the capacity drawn as a line."""
        if self.cap <= 0:
            return f"set yrange [0:{ymax}]\n"
        return (f"set yrange [0:{ymax}]\n"
                f"set y2range [0:{ymax / self.cap}]\n"
                f"set y2tics 0.1 nomirror\nset ytics nomirror\n"
                f'set y2label "efficiency = goodput / payload capacity"\n')

    def cap_line(self):
        if self.cap <= 0:
            return ""
        return (f", {self.cap} w l lw 2 dt 2 lc rgb 'black' "
                f"t 'payload capacity {self.cap:.2f} Gb/s "
                f"({self.rate:g} Gb/s x 4032/4048)'")


def series(pts, suite, metric, pred, xkey):
    xs = []
    for p in pts:
        if p["suite"] == suite and p["metric"] == metric and pred(p) \
                and p["median"] is not None:
            xs.append((float(p[xkey]), p["min"], p["median"], p["max"]))
    xs.sort()
    return xs


def series_each(pts, suite, metric, xkey, groups):
    """The series of each (title, pred) in groups that has points, as the
    blocks and titles pl.lines takes."""
    blocks, titles = [], []
    for title, pred in groups:
        s = series(pts, suite, metric, pred, xkey)
        if s:
            blocks.append(s)
            titles.append(title)
    return blocks, titles


def plot_bw_size(pts, pl, ymax_bw):
    """Bandwidth vs message size, per opcode and transport."""
    combos = [("write", "RC"), ("write", "UC"), ("send", "RC"),
              ("send", "UC"), ("send", "UD"), ("read", "RC")]
    blocks, titles = series_each(
        pts, "bw_size", "gbps", "size",
        [(f"{op} {conn}",
          lambda p, o=op, c=conn: p["op"] == o and p["conn"] == c)
         for op, conn in combos])
    pl.lines("bw_size", blocks, titles,
             'set title "Bandwidth vs message size (perftest, one QP; '
             'median, bars = min..max)"\n'
             "set logscale x 2\nset format x '%.0s%cB'\n"
             'set xlabel "message size"\nset ylabel "goodput [Gb/s]"\n'
             + pl.cap_axes(ymax_bw), pl.cap_line())


def plot_lat_size(pts, pl):
    """Latency vs message size."""
    blocks, titles = series_each(
        pts, "lat_size", "lat_typical_us", "size",
        [(f"ib_{tool} RC (typical)",
          lambda p, t=tool: p["point"].startswith(t + "/"))
         for tool in ("send_lat", "write_lat")])
    pl.lines("lat_size", blocks, titles,
             'set title "Latency vs message size (one-way, perftest '
             'typical; median of reps, bars = min..max)"\n'
             "set logscale xy\nset format x '%.0s%cB'\n"
             'set xlabel "message size"\nset ylabel "latency [us]"\n')


def plot_qp_scale(pts, pl, ymax_bw):
    """Aggregate bandwidth vs QP count."""
    b1, _ = baseline(pts, "qp_scale", "1proc/1")
    blocks, titles = series_each(
        pts, "qp_scale", "gbps", "qps",
        [(t, lambda p, pre=pre: p["point"].startswith(pre))
         for pre, t in (("1proc/", "one process (perftest -q N)"),
                        ("2proc/",
                         "two perftest pairs at once (N/2 QPs each)"))])
    for s in blocks:
        if b1 and b1["median"] is not None and s[0][0] > 1:
            s.insert(0, (1.0, b1["min"], b1["median"], b1["max"]))
    pl.lines("qp_scale", blocks, titles,
             'set title "Aggregate RC WRITE bandwidth vs QP count '
             '(64 KiB; median, bars = min..max)"\n'
             "set logscale x 2\nset xtics (1,2,4,8,16)\n"
             'set xlabel "QPs (total)"\nset ylabel "aggregate goodput [Gb/s]"\n'
             "set xrange [0.8:20]\n"
             + pl.cap_axes(ymax_bw), pl.cap_line())


def plot_threads(pts, pl, ymax_bw):
    """Aggregate bandwidth vs threads."""
    blocks, titles = series_each(
        pts, "threads", "gbps", "threads",
        [(f"threads_bw WRITE {int(size) // 1024} KiB",
          lambda p, sz=size: p["size"] == sz)
         for size in sorted({p["size"] for p in pts
                             if p["suite"] == "threads"}, key=int)])
    pl.lines("threads", blocks, titles,
             'set title "T threads, each its own RC QP, one context '
             '(libibverbs under usb4v-sim exec)"\n'
             "set xtics (1,2,4)\nset xrange [0.5:4.5]\n"
             'set xlabel "threads"\nset ylabel "aggregate goodput [Gb/s]"\n'
             + pl.cap_axes(ymax_bw), pl.cap_line())


def plot_bars(pts, pl, ymax_bw):
    """Bar charts: poll vs event mode, faulty and lossy cables."""
    for suite, title in (("events", "Poll vs event mode (64 KiB, RC)"),
                         ("faults", "RC WRITE 64 KiB on a faulty cable"),
                         ("read_faults", "RC READ on a lossy cable")):
        rows = [p for p in pts if p["suite"] == suite
                and p["metric"] == "gbps" and p["median"] is not None]
        if not rows:
            continue
        d = pl.data(suite, [[(i, f'"{p["point"]}"', p["min"], p["median"],
                              p["max"],
                              p["machine_busy_cores_median"] or 0)
                             for i, p in enumerate(rows)]])
        pl.run(suite,
               f'set title "{title} (median, bars = min..max; label = '
               f'machine busy cores)"\n'
               "set style fill solid 0.5\nset boxwidth 0.6\n"
               'set ylabel "goodput [Gb/s]"\nset xrange [-0.6:'
               f"{len(rows) - 0.4}]\n"
               + pl.cap_axes(ymax_bw)
               + f"plot '{d}' u 1:4:xtic(2) w boxes t 'median', "
               f"'' u 1:4:3:5 w yerrorbars lc rgb 'black' t 'min..max', "
               f"'' u 1:4:(sprintf('%.2f cores',$6)) w labels offset 0,1 "
               f"notitle" + pl.cap_line() + "\n")


def plot_cpu_cmp(pts, pl):
    """CPU seconds per GiB, TCP loopback vs usb4verbs."""
    rows = [p for p in pts if p["suite"] == "cpu_cmp"
            and p["metric"] in ("machine_cpu_s_per_gib",
                                "proc_cpu_s_per_gib")
            and p["median"] is not None]
    if rows:
        names = list(OrderedDict.fromkeys(p["point"] for p in rows))
        lines = []
        for i, n in enumerate(names):
            m = find(pts, "cpu_cmp", n, "machine_cpu_s_per_gib")
            q = find(pts, "cpu_cmp", n, "proc_cpu_s_per_gib")
            lines.append((i, f'"{n}"',
                          m["median"] if m else 0, m["min"] if m else 0,
                          m["max"] if m else 0,
                          q["median"] if q else 0, q["min"] if q else 0,
                          q["max"] if q else 0))
        d = pl.data("cpu_cmp", [lines])
        pl.run("cpu_cmp",
               'set title "CPU seconds per GiB moved, 64 KiB messages: TCP '
               'loopback vs usb4verbs (perftest, same bytes)"\n'
               "set style data histogram\n"
               "set style histogram errorbars gap 1 lw 1\n"
               "set style fill solid 0.5\nset xtics rotate by -20\n"
               'set ylabel "CPU-s / GiB"\nset yrange [0:*]\n'
               f"plot '{d}' u 3:4:5:xtic(2) t 'whole machine (/proc/stat)', "
               f"'' u 6:7:8 t 'the benchmark processes (both sides)'\n")


def plot_all(pts, pl):
    cap = pl.cap
    ymax_bw = max([cap * 1.15] + [p["max"] * 1.1 for p in pts
                                  if p["unit"] == "Gbps" and p["max"]
                                  and p["suite"] not in ("cpu_cmp", "cost")])
    plot_bw_size(pts, pl, ymax_bw)
    plot_lat_size(pts, pl)
    plot_qp_scale(pts, pl, ymax_bw)
    plot_threads(pts, pl, ymax_bw)
    plot_bars(pts, pl, ymax_bw)
    plot_cpu_cmp(pts, pl)


# ---------------------------------------------------------------- summary
def pct(x):
    return "n/a" if x is None else f"{100 * x:.1f}%"


def fmt(x, nd=2):
    return "n/a" if x is None else f"{x:.{nd}f}"


def verdict(val, target, unit_pct=True):
    if val is None:
        return "not measured"
    if val >= target:
        return "met"
    if unit_pct:
        return (f"MISSED by {100 * (target - val):.1f} points "
                f"({100 * val / target:.1f}% of target)")
    return f"MISSED by {target - val:.3f}"


def verdict_max(val, target):
    """For a figure that must not exceed its target."""
    if val is None:
        return "not measured"
    return "met" if val <= target else f"MISSED by {val - target:.2f}"


def spread(p, nd=2):
    if not p or p["median"] is None:
        return "n/a"
    return (f"{p['median']:.{nd}f} ({p['min']:.{nd}f}..{p['max']:.{nd}f}, "
            f"n={p['n_ok']}/{p['n']})")


def summary_head(rows, a):
    """Where, when and how the figures were measured."""
    cap = a.capacity
    r0 = rows[0] if rows else {}
    L = []
    L.append("# usb4verbs benchmark summary\n")
    L.append(f"- command: `{a.cmd}` ({a.mode} mode, "
             f"{a.seconds} s of measurements)")
    L.append(f"- commit: `{r0.get('commit', '?')}`, build type "
             f"{r0.get('build_type', '?')}, perftest {r0.get('perftest', '?')}")
    L.append(f"- machine: {r0.get('nproc', '?')} CPUs, "
             f"{r0.get('cpu_model', '?')}, kernel {r0.get('kernel', '?')}; "
             f"governor: {a.governor}")
    loads = [fnum(r["load1"]) for r in rows if fnum(r["load1"]) is not None]
    if loads:
        L.append(f"- load average (1 min) seen at the start of runs: "
                 f"median {statistics.median(loads):.2f}, max "
                 f"{max(loads):.2f}. With more runnable threads than CPUs "
                 f"every polling figure here is a lower bound.")
    L.append(f"- cable: software cable, {a.rate:g} Gb/s per direction, "
             f"1 us latency, ring depth 256, E2E flow control on; payload "
             f"capacity {cap:.3f} Gb/s (rate x 4032/4048)")
    L.append(f"- failed runs: {a.fails} (each counted in results.csv, "
             f"column ok=0 and note; medians use only successful runs)")
    L.append("- every point repeated; figures are median (min..max, "
             "n=ok/total)\n")
    return L


def headline_speed(pts, a, cmds):
    """Efficiency, latency and idle cost against their targets."""
    cap = a.capacity
    L = []
    L.append("## Headline figures\n")
    L.append("| figure | measured | target | verdict |")
    L.append("|---|---|---|---|")
    w1 = find(pts, "bw_size", "write/RC/65536", "gbps")
    e1 = ratio(median_of(w1), cap)
    L.append(f"| one RC QP, 64 KiB WRITE, efficiency vs payload capacity "
             f"| {pct(e1)} ({spread(w1)} Gb/s) | >= 97% | "
             f"{verdict(e1, 0.97)} |")
    # issue 14: an RDMA WRITE is placed without the application calling in
    wl = find(pts, "lat_size", "write_lat/RC/8", "lat_typical_us")
    sl = find(pts, "lat_size", "send_lat/RC/8", "lat_typical_us")
    r = ratio(median_of(wl), median_of(sl))
    L.append(f"| ib_write_lat -s 8 typical vs ib_send_lat -s 8 typical, "
             f"{a.rate:g} Gb/s | {fmt(r)}x ({spread(wl)} us vs "
             f"{spread(sl)} us) | <= 2x | {verdict_max(r, 2.0)} |")
    w9 = find(pts, "lat_size", "write_lat/RC/8", "lat_p999_us")
    r = ratio(median_of(w9), median_of(wl))
    L.append(f"| ib_write_lat -s 8 99.9th percentile vs its typical "
             f"| {fmt(r)}x ({spread(w9)} us) | <= 20x | "
             f"{verdict_max(r, 20.0)} |")
    # the same tail with no cable, no verbs: what the host alone imposes
    h9 = find(pts, "lat_size", "host_floor/8", "lat_p999_us")
    if h9 and h9["median"] is not None:
        ht = find(pts, "lat_size", "host_floor/8", "lat_typical_us")
        r = ratio(median_of(h9), median_of(wl))
        L.append(f"| the host's floor: two processes spinning on one shared "
                 f"word, same iterations, one way paced to ib_write_lat's "
                 f"typical{cmd_of(cmds, 'lat_size/host_floor/8')}: its "
                 f"99.9th percentile vs ib_write_lat -s 8's typical | "
                 f"{fmt(r)}x ({spread(h9)} us; its typical {spread(ht)} "
                 f"us) | measured | - |")
    ic = find(pts, "sw_cost", "idle/2ctx", "idle_cpu_pct")
    L.append(f"| an idle context (connected QP, no traffic for 100 ms): "
             f"CPU of its progress thread | {spread(ic, 3)} % of a core | "
             f"measured | - |")
    return L


def headline_scaling(pts):
    """More QPs and more threads against one."""
    L = []
    bp, bname = baseline(pts, "qp_scale", "1proc/1")
    base = median_of(bp)
    for p in gbps_points(pts, "qp_scale"):
        if p["point"] != "1proc/1":
            r = ratio(p["median"], base)
            how = ("one process" if p["point"].startswith("1proc")
                   else "2 processes per side")
            L.append(f"| aggregate, {p['qps']} QPs ({how}) vs 1 QP "
                     f"| {fmt(r, 3)}x ({spread(p)} Gb/s vs "
                     f"{fmt(base)} of {bname}) | >= 0.97x | "
                     f"{verdict(r, 0.97, False)} |")
    for p in gbps_points(pts, "threads"):
        if p["threads"] != "1":
            b = med(pts, "threads", f"write/{p['size']}/1", "gbps")
            r = ratio(p["median"], b)
            L.append(f"| threads_bw {p['threads']} threads vs 1, "
                     f"{int(p['size']) // 1024} KiB | {fmt(r, 3)}x "
                     f"({spread(p)} Gb/s vs {fmt(b)}) | >= 0.97x | "
                     f"{verdict(r, 0.97, False)} |")
    return L


def headline_faults(pts):
    """Faulty and lossy cables against a clean one."""
    L = []
    cp, cname = baseline(pts, "faults", "clean")
    clean = median_of(cp)
    for p in gbps_points(pts, "faults"):
        if p["point"] != "clean":
            r = ratio(p["median"], clean)
            L.append(f"| {p['point']} vs clean cable | {pct(r)} "
                     f"({spread(p)} Gb/s vs {fmt(clean)} of {cname}; "
                     f"retransmits "
                     f"{fmt(p['retransmits_median'], 0)}) | >= 90% | "
                     f"{verdict(r, 0.90)} |")
    for p in gbps_points(pts, "read_faults"):
        if not p["point"].endswith("/clean"):
            size = p["point"].split("/")[1]
            c = med(pts, "read_faults", f"read/{size}/clean", "gbps")
            r = ratio(p["median"], c)
            L.append(f"| ib_read_bw {p['point']} vs clean cable | {pct(r)} "
                     f"({spread(p)} Gb/s vs {fmt(c)}; retransmits "
                     f"{fmt(p['retransmits_median'], 0)}) | >= 90% | "
                     f"{verdict(r, 0.90)} |")
    return L


def per_rep(rows, suite, point, metric):
    """The values of one point and metric, one per repetition, in order."""
    v = [(int(r["rep"]), fnum(r["value"])) for r in rows
         if r["suite"] == suite and r["point"] == point
         and r["metric"] == metric and r["ok"] == "1"]
    return [x for _, x in sorted(v) if x is not None]


def paired_ratios(rows, suite, num, den, metric):
    """num / den of each repetition both succeeded in, in order (for
    results.csv files from before run.sh emitted the ratio itself)."""
    def by_rep(point):
        return {r["rep"]: fnum(r["value"]) for r in rows
                if r["suite"] == suite and r["point"] == point
                and r["metric"] == metric and r["ok"] == "1"}
    a, b = by_rep(num), by_rep(den)
    return [a[k] / b[k] for k in sorted(a, key=int)
            if a[k] and b.get(k)]


def headline_loss(rows):
    """Issue 14's loss targets: each seed's run against a clean one."""
    L = []
    for d, target, ok in (
            ("0.001", "median >= 0.90, none < 0.80",
             lambda m, lo: m >= 0.90 and lo >= 0.80),
            ("0.01", "median >= 0.70", lambda m, lo: m >= 0.70)):
        v = per_rep(rows, "loss", f"drop={d}", "ratio_to_clean")
        if not v:
            continue
        m, lo = statistics.median(v), min(v)
        L.append(f"| ib_write_bw 64 KiB, 1 QP, --drop {d} vs a clean run "
                 f"beside it, per seed (bench/run.sh --suites loss) | "
                 f"median {m:.2f}, min {lo:.2f} (seeds 1-{len(v)}: "
                 f"{', '.join(f'{x:.2f}' for x in v)}) | {target} | "
                 f"{'met' if ok(m, lo) else 'MISSED'} |")
    return L


def headline_stripe(pts, rows):
    """Issue 14: one QP over rings slower than the wire."""
    L = []
    v = per_rep(rows, "stripe", "ring", "ratio_to_wire")
    if not v:
        return L
    m = statistics.median(v)
    ring = find(pts, "stripe", "ring", "gbps")
    wire = find(pts, "stripe", "wire", "gbps")
    L.append(f"| one RC QP, 64 KiB, rings of half the wire's rate "
             f"(--ring-rate, two lanes) vs the wire alone, same run | "
             f"{m:.3f}x ({spread(ring)} vs {spread(wire)} Gb/s) | "
             f">= 0.95x | {verdict(m, 0.95, False)} |")
    v = per_rep(rows, "stripe", "ring/measured", "ratio_to_wire")
    if v:
        p = find(pts, "stripe", "ring/measured", "gbps")
        L.append(f"| the same with lanes measured (`USB4V_LANES=auto`, as "
                 f"on a kernel device) vs the wire alone | "
                 f"{statistics.median(v):.3f}x ({spread(p)} Gb/s) "
                 f"| measured | - |")
    v = per_rep(rows, "stripe", "ring/1chan", "ratio_to_wire")
    if v:
        p = find(pts, "stripe", "ring/1chan", "gbps")
        L.append(f"| the same with one channel (no second lane) vs the wire "
                 f"alone | {statistics.median(v):.3f}x ({spread(p)} Gb/s) "
                 f"| measured | - |")
    for q in (2, 4, 8, 16):
        p = find(pts, "stripe", f"ring/q{q}", "gbps")
        if not p:
            continue
        # each repetition's N QPs against its own 1 QP
        v = (per_rep(rows, "stripe", f"ring/q{q}", "ratio_to_ring")
             or paired_ratios(rows, "stripe", f"ring/q{q}", "ring", "gbps"))
        r = statistics.median(v) if v else None
        L.append(f"| {q} QPs vs 1 QP, both over half-rate rings, each "
                 f"repetition against its own | {fmt(r, 3)}x (per "
                 f"repetition: {', '.join(f'{x:.3f}' for x in v) or 'n/a'}; "
                 f"{spread(p)} vs {spread(ring)} Gb/s) | >= 0.97x | "
                 f"{verdict(r, 0.97, False)} |")
    return L


def load_commands(path):
    """point -> the command bench/run.sh ran for it (commands.tsv)."""
    cmds = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("\t")
                if k and v:
                    cmds[k] = v
    return cmds


def cmd_of(cmds, key):
    c = cmds.get(key)
    return f" (`{c}`)" if c else ""


def headline_sw_cost(pts, a, cmds):
    """Issue 14 item 4: the software cost against TCP over loopback, both
    measured in the same run, repetition by repetition."""
    L = []
    t = find(pts, "cost", "tcp_bw", "gbps")
    w = find(pts, "cost", "write_r0", "gbps")
    r = ratio(median_of(w), median_of(t))
    L.append(f"| ib_write_bw, one RC QP, 64 KiB, unthrottled cable"
             f"{cmd_of(cmds, 'cost/write_r0')} vs TCP over loopback, one "
             f"stream, 64 KiB writes{cmd_of(cmds, 'cost/tcp_bw')} | "
             f"{fmt(r)}x ({spread(w)} Gb/s vs {spread(t)} Gb/s) | >= 1.5x "
             f"| {verdict(r, 1.5, False)} |")
    def cpu(point, metric):
        return find(pts, "cost", point, metric)
    tq = cpu("tcp_cpu", "proc_cpu_s_per_gib_marginal")
    eq = cpu("send_event", "proc_cpu_s_per_gib_marginal")
    tm = cpu("tcp_cpu", "machine_cpu_s_per_gib_marginal")
    em = cpu("send_event", "machine_cpu_s_per_gib_marginal")
    tt = cpu("tcp_cpu", "proc_cpu_s_per_gib")
    et = cpu("send_event", "proc_cpu_s_per_gib")
    eg = cpu("send_event", "gbps")
    r = ratio(median_of(eq), median_of(tq))
    L.append(f"| CPU-s per GiB, ib_send_bw -e (completion events), 64 KiB, "
             f"{a.rate:g} Gb/s cable{cmd_of(cmds, 'cost/send_event')} vs "
             f"TCP over loopback{cmd_of(cmds, 'cost/tcp_cpu')}: both "
             f"processes, all threads, per GiB of the difference between "
             f"the two transfers | {fmt(r)}x ({spread(eq, 3)} vs "
             f"{spread(tq, 3)} CPU-s/GiB; whole machine {spread(em, 3)} vs "
             f"{spread(tm, 3)}; the large transfer alone, start-up "
             f"included: {spread(et, 3)} vs {spread(tt, 3)}; at "
             f"{fmt(median_of(eg))} Gb/s) | <= 1x | "
             f"{verdict_max(r, 1.0)} |")
    ip = find(pts, "cost", "callgrind/write/65536", "instr_per_msg_marginal")
    L.append(f"| instructions per 64 KiB RC WRITE, the engine's work on "
             f"both ends{cmd_of(cmds, 'cost/callgrind')} | {spread(ip, 0)} "
             f"Ir/msg | measured | - |")
    return L


def headline_cost(pts, rows):
    """CPU per GiB and the software cost per message."""
    L = []
    for n, lab in (("tcp/65536", "TCP loopback (tcp_bw)"),):
        m = find(pts, "cpu_cmp", n, "machine_cpu_s_per_gib")
        q = find(pts, "cpu_cmp", n, "proc_cpu_s_per_gib")
        g = find(pts, "cpu_cmp", n, "gbps")
        L.append(f"| CPU-s/GiB, {lab} | machine {spread(m, 3)}; processes "
                 f"{spread(q, 3)}; at {fmt(median_of(g))} "
                 f"Gb/s | - | - |")
    for p in gbps_points(pts, "cpu_cmp"):
        if p["tool"] != "tcp_bw":
            m = find(pts, "cpu_cmp", p["point"], "machine_cpu_s_per_gib")
            q = find(pts, "cpu_cmp", p["point"], "proc_cpu_s_per_gib")
            rr = "unthrottled" if p["rate_gbps"] in ("0", "0.0") \
                else f"{p['rate_gbps']} Gb/s"
            L.append(f"| CPU-s/GiB, usb4verbs {p['tool']} {p['mode']} mode, "
                     f"{rr} cable | machine {spread(m, 3)}; processes "
                     f"{spread(q, 3)}; at {fmt(p['median'])} Gb/s | - | - |")
    p = find(pts, "sw_cost", "engine_lat/8", "rtt_us")
    L.append(f"| 8-byte RC round trip, engine_bw --lat -r 0 (polling) | "
             f"{spread(p)} us | - | - |")
    p = find(pts, "sw_cost", "send_lat/r0/8", "lat_typical_us")
    p2 = find(pts, "sw_cost", "send_lat/r0/8", "lat_avg_us")
    L.append(f"| ib_send_lat 8 B over an unthrottled cable (one-way = RTT/2) "
             f"| typical {spread(p)} us, avg {spread(p2)} us | - | - |")
    p = find(pts, "sw_cost", "callgrind/write/64", "instr_per_msg")
    p2 = find(pts, "sw_cost", "callgrind/write/64", "instr_per_msg_marginal")
    n = ""
    for r in rows:
        if r["metric"] == "instr_per_msg" and r["bytes"]:
            n = f", n={int(r['bytes']) // 64}"
            break
    L.append(f"| instructions per message (callgrind, engine_bw RC WRITE "
             f"64 B, -r 0{n}; both processes, all threads; total Ir / "
             f"messages) | {spread(p, 0)} Ir/msg"
             + (f"; marginal between two counts {spread(p2, 0)}" if p2
                else "") + " | - | - |")
    L.append("")
    L.append("Notes: CPU-s/GiB 'machine' is the whole machine's busy time "
             "(/proc/stat, user+nice+system+irq+softirq) over the transfer, "
             "so it includes the provider's threads and anything else "
             "running; 'processes' is user+sys of both benchmark processes "
             "(all their threads). perftest and threads_bw poll, so in poll "
             "mode usb4verbs burns a core per side however fast the wire "
             "is; event mode shows the cost without busy polling. The "
             "instruction count includes time spent polling an empty CQ "
             "while the peer works, so it is an upper bound on the work per "
             "message. The CPU-s per GiB of issue 14's row (with completion "
             "events) is the difference between a large and a small "
             "transfer, divided by the difference in bytes: what grows with "
             "the bytes. Start-up costs cancel, among them perftest's "
             "calibration of its CPU clock (about a fifth of a second of "
             "busy waiting per process), which tcp_bw does not have.\n")
    return L


def points_table(pts):
    """Every point: median, min..max."""
    L = []
    L.append("## Points (median, min..max)\n")
    L.append("| suite | point | metric | median | min | max | ok/n | "
             "efficiency | machine busy cores |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for p in pts:
        if p["metric"] in ("msg_rate", "lat_min_us"):
            continue
        eff = ""
        if p["unit"] == "Gbps" and p["median"] is not None:
            c = fnum(p["rate_gbps"]) or 0
            if c > 0:
                eff = pct(p["median"] / (c * 4032 / 4048))
        L.append(f"| {p['suite']} | {p['point']} | {p['metric']} | "
                 f"{fmt(p['median'], 3)} | {fmt(p['min'], 3)} | "
                 f"{fmt(p['max'], 3)} | {p['n_ok']}/{p['n']} | {eff} | "
                 f"{fmt(p['machine_busy_cores_median'])} |")
    L.append("")
    return L


def failed_and_files(rows, plots):
    """The failed runs, then what the report wrote."""
    L = []
    failed = [r for r in rows if r["ok"] != "1"]
    if failed:
        L.append("## Failed runs\n")
        seen = set()
        for r in failed:
            k = (r["suite"], r["point"], r["rep"])
            if k in seen:
                continue
            seen.add(k)
            L.append(f"- {r['suite']} {r['point']} rep {r['rep']}: "
                     f"{r['note']}")
        L.append("")
    L.append("## Files\n")
    L.append("- `results.csv`: one row per repetition and metric (commit, "
             "cable settings, machine, load in every row)")
    L.append("- `points.csv`: min/median/max per point")
    for pl in plots:
        L.append(f"- `{pl}`")
    L.append("- `logs/`: every tool's output and each cable's counters")
    return L


def summary(pts, rows, a, plots):
    cmds = load_commands(a.commands)
    L = (summary_head(rows, a) + headline_speed(pts, a, cmds) +
         headline_sw_cost(pts, a, cmds) +
         headline_scaling(pts) + headline_faults(pts) +
         headline_loss(rows) + headline_stripe(pts, rows) +
         headline_cost(pts, rows) + points_table(pts) +
         failed_and_files(rows, plots))
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cmd", default="bench/run.sh")
    ap.add_argument("--capacity", type=float, default=20 * 4032 / 4048)
    ap.add_argument("--rate", type=float, default=20)
    ap.add_argument("--seconds", default="?")
    ap.add_argument("--fails", default="0")
    ap.add_argument("--governor", default="?")
    ap.add_argument("--mode", default="?")
    ap.add_argument("--commands", default=None,
                    help="commands.tsv: point, tab, the command behind it")
    a = ap.parse_args()
    rows = load(a.csv)
    pts = aggregate(rows)
    write_points(pts, os.path.join(a.out, "points.csv"))
    r0 = rows[0] if rows else {}
    meta = (f"usb4verbs {r0.get('commit', '?')} | {a.mode} | "
            f"{r0.get('nproc', '?')} CPUs {r0.get('cpu_model', '?')} | "
            f"kernel {r0.get('kernel', '?')} | cable {a.rate:g} Gb/s")
    pl = Plotter(a.out, a.capacity, a.rate, meta)
    plot_all(pts, pl)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(summary(pts, rows, a, pl.made))
    print(f"report: {len(rows)} rows, {len(pts)} points, plots: "
          f"{' '.join(pl.made)}")


if __name__ == "__main__":
    main()
