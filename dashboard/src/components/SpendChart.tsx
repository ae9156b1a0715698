import { useEffect, useRef } from 'preact/hooks';
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip } from 'chart.js';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Legend, Tooltip);

export interface DailySpend {
  day: string;
  settled_usd_micros: number;
  reserved_usd_micros: number;
}

/** Spend per day this month (settled and reserved, stacked) against the daily cap. */
export function SpendChart({ daily, dailyCap }: { daily: DailySpend[]; dailyCap: number | null }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (!canvas.current) return;
    const usd = (m: number) => m / 1_000_000;
    const chart = new Chart(canvas.current, {
      type: 'bar',
      data: {
        labels: daily.map((d) => d.day.slice(5)),
        datasets: [
          { type: 'bar', label: 'Settled (USD)', data: daily.map((d) => usd(d.settled_usd_micros)), backgroundColor: '#2563eb', stack: 'spend' },
          { type: 'bar', label: 'Reserved (USD)', data: daily.map((d) => usd(d.reserved_usd_micros)), backgroundColor: '#93c5fd', stack: 'spend' },
          ...(dailyCap !== null
            ? [{ type: 'line' as const, label: 'Daily cap (USD)', data: daily.map(() => usd(dailyCap)), borderColor: '#b91c1c', pointRadius: 0, borderDash: [6, 4] }]
            : []),
        ],
      },
      options: { responsive: true, maintainAspectRatio: false, animation: false, scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } },
    });
    return () => chart.destroy();
  }, [daily, dailyCap]);
  return (
    <div class="chart">
      <canvas ref={canvas} role="img" aria-label="Spend per day this month against the daily cap" />
    </div>
  );
}
