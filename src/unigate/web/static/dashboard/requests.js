// Recent requests (GET /admin/requests): status, latency, model, route and key, newest first.
import { call, query } from "./api.js";
import { html, Loader, num, Status, Table, when } from "./ui.js";

const STATUSES = [["", "all statuses"], ["error", "errors (400+)"], ["2xx", "2xx"], ["4xx", "4xx"], ["5xx", "5xx"]];

export class RequestsPage extends Loader {
  every = 5000;
  state = { ...this.state, status: "", key_id: "" };

  load = async () => {
    const { status, key_id } = this.state;
    return (await call("GET", "/admin/requests" + query({ limit: 200, status, key_id }))).data;
  };

  set = (name) => (event) => this.setState({ [name]: event.target.value.trim() }, () => this.reload());

  render(_, { data, error, status }) {
    // Fits 1,280 px: long values are cut, their whole text in the tooltip; an error shows its
    // first three lines.
    const clip = (text) => html`<code title=${text}>${text}</code>`;
    const columns = [
      ["Time (UTC)", (r) => when(r.created_at)],
      ["Status", (r) => html`<${Status} code=${r.status} />${r.outcome ? html` <span class="badge bad">ended ${r.outcome}</span>` : ""}`],
      ["Latency (ms)", (r) => num(r.latency_ms, 1)],
      ["Request", (r) => clip(`${r.method} ${r.path}`), "clip"],
      ["Model", (r) => r.model || "-", "clip"],
      ["Route", (r) => (r.route ? clip(r.route) : "-"), "clip"],
      ["Key", (r) => (r.key_id ? html`<code>${r.key_id}</code>` : "-")],
      ["Error", (r) => (r.error ? html`<span class="error" title=${r.error}>${r.error}</span>` : "-"), "why"],
    ];
    return html`<div class="toolbar">
        <select id="requests-status" value=${status} onChange=${this.set("status")}>
          ${STATUSES.map(([v, name]) => html`<option value=${v}>${name}</option>`)}
        </select>
        <input id="requests-key" placeholder="key id" onChange=${this.set("key_id")} />
        <button onClick=${() => this.reload()}>Refresh</button>
      </div>
      ${error && html`<p class="error">${error.message}</p>`}
      ${data && html`<section class="card">
        <${Table} id="requests-table" columns=${columns} rows=${data} empty="No requests yet." />
      </section>`}`;
  }
}
