// Shared view pieces: the html tag (htm bound to Preact), formatting, a table, messages.
import { h, Component, render } from "./vendor/preact.mjs";
import htm from "./vendor/htm.mjs";

export const html = htm.bind(h);
export { Component, render };

const pad = (n) => String(n).padStart(2, "0");

/** Unix seconds as "YYYY-MM-DD HH:MM:SS" in UTC (the API's buckets are UTC too). */
export function when(seconds) {
  if (seconds === null || seconds === undefined) return "-";
  const d = new Date(seconds * 1000);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}

export function num(value, digits = 0) {
  if (value === null || value === undefined) return "-";
  return Number(value).toLocaleString("en-US", { maximumFractionDigits: digits });
}

export function list(values) {
  return values && values.length ? values.join(", ") : "all";
}

/** columns: [[title, row => cell, optional td class], ...] */
export function Table({ columns, rows, empty, id }) {
  if (!rows.length) return html`<p class="empty">${empty}</p>`;
  return html`<table id=${id}>
    <thead><tr>${columns.map(([title]) => html`<th>${title}</th>`)}</tr></thead>
    <tbody>${rows.map((row) => html`<tr>${columns.map(([, cell, cls]) => html`<td class=${cls}>${cell(row)}</td>`)}</tr>`)}</tbody>
  </table>`;
}

export function ErrorNote({ error }) {
  return error ? html`<p class="error" role="alert">${error.message || String(error)}</p>` : null;
}

export function Status({ code }) {
  const kind = code >= 500 ? "bad" : code >= 400 ? "warn" : "ok";
  return html`<span class=${"badge " + kind}>${code}</span>`;
}

/** A page that loads its data on mount, on demand and (optionally) every few seconds. */
export class Loader extends Component {
  state = { data: null, error: null };

  componentDidMount() {
    this.reload();
    if (this.every) this.timer = setInterval(() => this.reload(), this.every);
  }

  componentWillUnmount() {
    clearInterval(this.timer);
  }

  async reload() {
    try {
      this.setState({ data: await this.load(), error: null });
    } catch (error) {
      this.setState({ error });
    }
  }
}
