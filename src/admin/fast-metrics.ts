/**
 * The two metrics updated on every hook request, kept as plain numbers and handed to prom-client's registry only
 * when it is scraped. prom-client hashes the label set on every labelled `inc`/`observe` (a child from `labels()`
 * does too), a cost paid on every request; adding to plain numbers is next to free.
 */
import client, { type Registry } from 'prom-client';

interface Series {
  labels: Record<string, string>;
  n: number;
}

/** A counter whose series are looked up by a caller-made key (the caller keeps the labels bounded). */
export class KeyedCounter {
  private readonly series = new Map<string, Series>();

  constructor(opts: { name: string; help: string; labelNames: string[]; registry: Registry }) {
    const series = this.series;
    new client.Counter({
      name: opts.name,
      help: opts.help,
      labelNames: opts.labelNames,
      registers: [opts.registry],
      collect() {
        this.reset();
        for (const s of series.values()) this.inc(s.labels, s.n);
      },
    });
  }

  inc(key: string, labels: () => Record<string, string>): void {
    const s = this.series.get(key);
    if (s) s.n++;
    else this.series.set(key, { labels: labels(), n: 1 });
  }
}

interface HistogramSeries {
  labels: Record<string, string>;
  /** Per bucket (not cumulative); made cumulative at scrape. */
  counts: number[];
  sum: number;
  count: number;
}

/** A histogram in the registry's own exposition shape (`_bucket{le}`, `_sum`, `_count`). */
export class KeyedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as client.Metric);
  }

  observe(key: string, labels: () => Record<string, string>, value: number): void {
    let s = this.series.get(key);
    if (!s)
      this.series.set(
        key,
        (s = { labels: labels(), counts: new Array(this.buckets.length).fill(0), sum: 0, count: 0 }),
      );
    s.sum += value;
    s.count++;
    const b = this.buckets;
    for (let i = 0; i < b.length; i++) {
      if (value <= b[i]!) {
        s.counts[i]!++;
        return;
      }
    }
  }

  get(): {
    name: string;
    help: string;
    type: string;
    aggregator: string;
    values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }>;
  } {
    const values = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += s.counts[i]!;
        values.push({ labels: { ...s.labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { ...s.labels, le: '+Inf' }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.series.clear();
  }
}
