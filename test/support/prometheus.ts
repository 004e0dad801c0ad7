/**
 * The real Prometheus text parser (parse-prometheus-text-format, prom2json's shape), typed for the tests. Its one
 * limit: a histogram with labels comes back as one set of buckets without labels, count or sum (it folds the series);
 * an unlabelled histogram has all three.
 */
import { createRequire } from 'node:module';

export interface MetricSample {
  value?: string;
  labels?: Record<string, string>;
  /** Histograms: cumulative counts by upper bound. */
  buckets?: Record<string, string>;
  count?: string;
  sum?: string;
}

export interface MetricFamily {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  metrics: MetricSample[];
}

const parse = createRequire(import.meta.url)('parse-prometheus-text-format') as (text: string) => MetricFamily[];

export function parseMetrics(text: string): Map<string, MetricFamily> {
  return new Map(parse(text).map((f) => [f.name, f]));
}

/** The sample of `name` whose labels include `labels`; undefined when there is none. */
export function sample(
  families: Map<string, MetricFamily>,
  name: string,
  labels: Record<string, string> = {},
): MetricSample | undefined {
  return families.get(name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

/** A counter's or gauge's value (0 when the series is absent). */
export function value(families: Map<string, MetricFamily>, name: string, labels: Record<string, string> = {}): number {
  const s = sample(families, name, labels);
  return s?.value === undefined ? 0 : Number(s.value);
}
