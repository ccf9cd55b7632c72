// A stacked bar chart over time (Chart.js, loaded by index.html as window.Chart). The chart's
// series totals are also on the element as data-series, so tests and scripts can read them.
import { Component, html } from "./ui.js";

const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

/** A colour per series that no other series of the chart has: the palette, then hues spaced
 * by the golden angle (never the same twice), alternating lightness so neighbours differ. */
export function colour(i) {
  if (i < COLOURS.length) return COLOURS[i];
  const n = i - COLOURS.length;
  return `hsl(${Math.round((n * 137.508 + 20) % 360)}, 62%, ${n % 2 ? 38 : 55}%)`;
}

export class TimeChart extends Component {
  componentDidMount() {
    this.draw();
  }

  componentDidUpdate() {
    this.draw();
  }

  componentWillUnmount() {
    if (this.chart) this.chart.destroy();
  }

  datasets() {
    return this.props.series.map((s, i) => ({
      label: s.label,
      data: s.values,
      backgroundColor: colour(i),
    }));
  }

  draw() {
    if (!window.Chart || !this.canvas) return;
    if (!this.chart) {
      this.chart = new window.Chart(this.canvas, {
        type: "bar",
        data: { labels: this.props.labels, datasets: this.datasets() },
        options: {
          animation: false,
          responsive: true,
          maintainAspectRatio: false,
          scales: {
            x: { stacked: true },
            y: { stacked: true, beginAtZero: true, ticks: { precision: this.props.integer ? 0 : undefined } },
          },
          plugins: { legend: { position: "bottom" } },
        },
      });
      return;
    }
    this.chart.data.labels = this.props.labels;
    this.chart.data.datasets = this.datasets();
    this.chart.options.scales.y.ticks.precision = this.props.integer ? 0 : undefined;
    this.chart.update();
  }

  render({ id, title, series }) {
    const totals = series.map((s) => ({ label: s.label, total: s.values.reduce((a, b) => a + b, 0) }));
    return html`<figure class="chart" id=${id} data-series=${JSON.stringify(totals)}>
      <figcaption>${title}</figcaption>
      <div class="canvas-box"><canvas ref=${(c) => (this.canvas = c)} role="img" aria-label=${title}></canvas></div>
    </figure>`;
  }
}
