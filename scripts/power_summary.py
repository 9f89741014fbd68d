"""Summarises an nvidia-smi CSV sample log (timestamp, clocks.sm [MHz], power.draw [W], temperature): median SM
clock and power over the samples taken while the GPU was busy (power above a third of the maximum seen)."""
import statistics
import sys


def main(path):
    rows = []
    for line in open(path):
        parts = [p.strip() for p in line.split(',')]
        try:
            rows.append((float(parts[1].split()[0]), float(parts[2].split()[0]), float(parts[3])))
        except (IndexError, ValueError):
            continue
    if not rows:
        print('no samples')
        return
    busy = [r for r in rows if r[1] > max(r[1] for r in rows) / 3]
    clk = statistics.median(r[0] for r in busy)
    pw = statistics.median(r[1] for r in busy)
    print(f'{len(busy)} busy samples: SM clock median {clk:.0f} MHz (min {min(r[0] for r in busy):.0f}), '
          f'power median {pw:.0f} W (max {max(r[1] for r in busy):.0f}), temp max {max(r[2] for r in busy):.0f} C')


if __name__ == '__main__':
    main(sys.argv[1])
