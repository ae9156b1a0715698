import { useEffect, useRef } from 'preact/hooks';
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip } from 'chart.js';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Legend, Tooltip);

export interface CallBucket {
  start: string;
  completed: number;
  failed: number;
  denied: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

/** A bucket's label: the time of day, with the date when the window spans days. */
function labelOf(iso: string, withDate: boolean): string {
  const d = new Date(iso);
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return withDate ? `${d.toLocaleDateString([], { month: '2-digit', day: '2-digit' })} ${time}` : time;
}

function useChart(series: CallBucket[], withDate: boolean, build: (labels: string[]) => ConstructorParameters<typeof Chart>[1]) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (!canvas.current) return;
    const chart = new Chart(canvas.current, build(series.map((b) => labelOf(b.start, withDate))));
    return () => chart.destroy();
  }, [series, withDate]);
  return canvas;
}

/** Calls per bucket, stacked by status: failures and denials stand out against the completed. */
export function CallsByStatusChart({ series, withDate }: { series: CallBucket[]; withDate: boolean }) {
  const canvas = useChart(series, withDate, (labels) => ({
    type: 'bar',
    data: {
      labels,
      datasets: [
        { label: 'Completed', data: series.map((b) => b.completed), backgroundColor: '#2563eb', stack: 'calls' },
        { label: 'Failed', data: series.map((b) => b.failed), backgroundColor: '#b91c1c', stack: 'calls' },
        { label: 'Denied', data: series.map((b) => b.denied), backgroundColor: '#d97706', stack: 'calls' },
      ],
    },
    options: { responsive: true, maintainAspectRatio: false, animation: false, scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } } },
  }));
  return (
    <div class="chart">
      <canvas ref={canvas} role="img" aria-label="Calls per interval by status" />
    </div>
  );
}

/**
 * Median and 95th-percentile latency per bucket; empty buckets leave a gap rather than a zero, and
 * points are drawn so a bucket between two empty ones still shows.
 */
export function LatencyChart({ series, withDate }: { series: CallBucket[]; withDate: boolean }) {
  const canvas = useChart(series, withDate, (labels) => ({
    type: 'line',
    data: {
      labels,
      datasets: [
        { label: 'p50 (ms)', data: series.map((b) => b.p50_ms), borderColor: '#2563eb', backgroundColor: '#2563eb', pointRadius: 2, spanGaps: false },
        { label: 'p95 (ms)', data: series.map((b) => b.p95_ms), borderColor: '#7c3aed', backgroundColor: '#7c3aed', pointRadius: 2, spanGaps: false },
      ],
    },
    options: { responsive: true, maintainAspectRatio: false, animation: false, scales: { y: { beginAtZero: true } } },
  }));
  return (
    <div class="chart">
      <canvas ref={canvas} role="img" aria-label="Latency p50 and p95 per interval" />
    </div>
  );
}
