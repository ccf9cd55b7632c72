// Asynchronous tasks (GET /admin/tasks): status, progress and webhook delivery, newest first.
import { call, query } from "./api.js";
import { html, Loader, num, Table, when } from "./ui.js";

const STATUSES = ["", "NOT_START", "SUBMITTED", "QUEUED", "IN_PROGRESS", "SUCCESS", "FAILURE"];
const TONE = { SUCCESS: "ok", FAILURE: "bad", delivered: "ok", failed: "bad", gone: "bad", pending: "warn" };

function events(counts) {
  const parts = Object.entries(counts || {}).map(([state, n]) => `${n} ${state}`);
  return parts.length ? parts.join(", ") : "-";
}

export class TasksPage extends Loader {
  every = 5000;
  state = { ...this.state, status: "", key_id: "" };

  load = async () => {
    const { status, key_id } = this.state;
    return (await call("GET", "/admin/tasks" + query({ limit: 200, status, key_id }))).data;
  };

  set = (name) => (event) => this.setState({ [name]: event.target.value.trim() }, () => this.reload());

  render(_, { data, error, status }) {
    const columns = [
      ["Created (UTC)", (t) => when(t.created_at)],
      ["Id", (t) => html`<code>${t.id}</code>`],
      ["Key", (t) => html`<code>${t.key_id}</code>`],
      ["Kind", (t) => `${t.family} ${t.action}`],
      ["Model", (t) => t.model],
      ["Provider", (t) => t.provider],
      ["Status", (t) => html`<span class=${"badge " + (TONE[t.status] || "")}>${t.status}</span>`],
      ["Progress", (t) => `${t.progress}%`],
      ["Price", (t) => num(t.price, 4)],
      ["Webhook", (t) => t.webhook],
      ["Delivery", (t) => (t.webhook_delivery ? html`<span class=${"badge " + (TONE[t.webhook_delivery] || "")}>${t.webhook_delivery}</span>` : "-")],
      ["Events", (t) => events(t.webhook_events)],
      ["Failure", (t) => t.fail_reason || "", "wrap"],
    ];
    return html`<div class="toolbar">
        <select id="tasks-status" value=${status} onChange=${this.set("status")}>
          ${STATUSES.map((s) => html`<option value=${s}>${s || "all statuses"}</option>`)}
        </select>
        <input id="tasks-key" placeholder="key id" onChange=${this.set("key_id")} />
        <button onClick=${() => this.reload()}>Refresh</button>
      </div>
      ${error && html`<p class="error">${error.message}</p>`}
      ${data && html`<section class="card">
        <${Table} id="tasks-table" columns=${columns} rows=${data} empty="No tasks yet." />
      </section>`}`;
  }
}
