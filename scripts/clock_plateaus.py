"""Plateaus of board power in an nvidia-smi sample log (timestamp, SM clock
MHz, power W, temperature C; scripts/device_clock_trace.sh): runs of samples
above a power threshold halfway between idle and the peak, each reported
with its length and median clock and power, in time order."""
import statistics
import sys


def main(path):
    rows = []
    for line in open(path):
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4:
            continue
        try:
            rows.append((float(parts[1]), float(parts[2]), float(parts[3])))
        except ValueError:
            continue
    if not rows:
        print("no samples")
        return
    powers = [p for _, p, _ in rows]
    idle, peak = min(powers), max(powers)
    threshold = idle + 0.5 * (peak - idle)
    print(f"{len(rows)} samples, idle {idle:.0f} W, peak {peak:.0f} W, plateau above {threshold:.0f} W")
    print("| plateau | samples | SM clock MHz (median, min) | power W (median) | temperature C |")
    print("|---:|---:|---:|---:|---:|")
    run, n = [], 0
    for r in rows + [(0.0, 0.0, 0.0)]:
        if r[1] > threshold:
            run.append(r)
            continue
        if len(run) >= 5:  # at least 0.1 s
            n += 1
            run = run[2:-2]  # drop the ramps
            clocks = [c for c, _, _ in run]
            print(f"| {n} | {len(run)} | {statistics.median(clocks):.0f}, {min(clocks):.0f} | "
                  f"{statistics.median(p for _, p, _ in run):.0f} | {statistics.median(t for _, _, t in run):.0f} |")
        run = []


if __name__ == "__main__":
    main(sys.argv[1])
