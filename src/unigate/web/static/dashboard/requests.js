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
    const columns = [
      ["Time (UTC)", (r) => when(r.created_at)],
      ["Status", (r) => html`<${Status} code=${r.status} />${r.outcome ? html` <span class="badge bad">ended ${r.outcome}</span>` : ""}`],
      ["Latency (ms)", (r) => num(r.latency_ms, 1)],
      ["Method", (r) => r.method],
      ["Path", (r) => html`<code>${r.path}</code>`],
      ["Model", (r) => r.model || "-"],
      ["Route", (r) => r.route || "-"],
      ["Key", (r) => (r.key_id ? html`<code>${r.key_id}</code>` : "-")],
      ["Request id", (r) => html`<code>${r.request_id}</code>`],
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
