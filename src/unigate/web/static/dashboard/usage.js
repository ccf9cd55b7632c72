// Usage and cost over time, per key and per model, from GET /admin/usage?bucket=...
import { call, query } from "./api.js";
import { TimeChart } from "./charts.js";
import { html, Loader, num, Table } from "./ui.js";

const RANGES = {
  hour: { label: "Last hour, per minute", seconds: 3600, bucket: "minute", width: 60 },
  day: { label: "Last 24 hours, per hour", seconds: 86400, bucket: "hour", width: 3600 },
  month: { label: "Last 30 days, per day", seconds: 30 * 86400, bucket: "day", width: 86400 },
};
const METRICS = {
  requests: ["Requests", (r) => r.requests],
  tokens: ["Tokens", (r) => r.prompt_tokens + r.completion_tokens],
  cost: ["Cost", (r) => r.cost],
  errors: ["Errors", (r) => r.errors],
};

/** Every bucket start of the range, so quiet periods show as gaps rather than vanish. */
function bucketStarts(range, now) {
  const last = Math.floor(now / range.width) * range.width;
  const starts = [];
  for (let t = last - range.seconds + range.width; t <= last; t += range.width) starts.push(t);
  return starts;
}

function label(start, bucket) {
  const iso = new Date(start * 1000).toISOString();
  return bucket === "day" ? iso.slice(0, 10) : iso.slice(bucket === "minute" ? 11 : 5, 16).replace("T", " ");
}

/** Key id -> the name shown for it: the key's name, with the id's end when names repeat. */
function keyNames(keys) {
  const count = new Map();
  for (const k of keys) count.set(k.name, (count.get(k.name) || 0) + 1);
  return new Map(keys.map((k) => [k.id, count.get(k.name) > 1 ? `${k.name} (…${k.id.slice(-4)})` : k.name]));
}

/** Rows of one grouping -> one series per group over the bucket starts (`names`: the label
 * shown for a group's value, the value itself when it has none). */
function series(rows, field, starts, metric, names = new Map()) {
  const index = new Map(starts.map((t, i) => [t, i]));
  const groups = new Map();
  for (const row of rows) {
    const value = row[field] || "(none)";
    const name = names.get(value) || value;
    if (!groups.has(name)) groups.set(name, new Array(starts.length).fill(0));
    const i = index.get(row.bucket_start);
    if (i !== undefined) groups.get(name)[i] += metric(row);
  }
  return [...groups].map(([name, values]) => ({ label: name, values }));
}

export class UsagePage extends Loader {
  every = 10000;
  state = { ...this.state, range: "hour", metric: "requests" };

  load = async () => {
    const range = RANGES[this.state.range];
    const now = Math.floor(Date.now() / 1000);
    const since = bucketStarts(range, now)[0]; // aligned, so every answered bucket is drawn
    const ask = (group_by) => call("GET", "/admin/usage" + query({ group_by, bucket: range.bucket, since }));
    const [byKey, byModel, totals, batches, keys] = await Promise.all([
      ask("key"),
      ask("model"),
      call("GET", "/admin/usage" + query({ group_by: "key,model", since })),
      call("GET", "/admin/usage" + query({ group_by: "batch,key", since })),
      call("GET", "/admin/keys"),
    ]);
    // Direct calls have no batch: only batch lines' rows are listed per batch.
    const batchRows = batches.data.filter((x) => x.batch);
    return { now, byKey: byKey.data, byModel: byModel.data, totals: totals.data, batches: batchRows,
             names: keyNames(keys.data) };
  };

  choose = (name) => (event) => this.setState({ [name]: event.target.value }, () => this.reload());

  render(_, { data, error, range, metric }) {
    const r = RANGES[range];
    const [metricName, pick] = METRICS[metric];
    const starts = data ? bucketStarts(r, data.now) : [];
    const labels = starts.map((t) => label(t, r.bucket));
    return html`<div class="toolbar">
        <select id="usage-range" value=${range} onChange=${this.choose("range")}>
          ${Object.entries(RANGES).map(([id, x]) => html`<option value=${id}>${x.label}</option>`)}
        </select>
        <select id="usage-metric" value=${metric} onChange=${this.choose("metric")}>
          ${Object.entries(METRICS).map(([id, [name]]) => html`<option value=${id}>${name}</option>`)}
        </select>
        <button onClick=${() => this.reload()}>Refresh</button>
      </div>
      ${error && html`<p class="error">${error.message}</p>`}
      ${data && html`<div class="charts">
          <${TimeChart} id="chart-by-key" title=${`${metricName} per key`} labels=${labels} integer=${metric !== "cost"}
            series=${series(data.byKey, "key_id", starts, pick, data.names)} />
          <${TimeChart} id="chart-by-model" title=${`${metricName} per model`} labels=${labels} integer=${metric !== "cost"}
            series=${series(data.byModel, "model", starts, pick)} />
        </div>
        <section class="card">
          <h2>Totals in this range</h2>
          <${Table} id="usage-table" rows=${data.totals} empty="No usage in this range." columns=${[
            ["Key", (x) => html`${data.names.get(x.key_id) || ""} <code>${x.key_id}</code>`],
            ["Model", (x) => x.model],
            ["Requests", (x) => num(x.requests)],
            ["Errors", (x) => num(x.errors)],
            ["Prompt tokens", (x) => num(x.prompt_tokens)],
            ["Completion tokens", (x) => num(x.completion_tokens)],
            ["Cost", (x) => num(x.cost, 6)],
            ["Mean latency (ms)", (x) => num(x.mean_latency_ms, 1)],
          ]} />
        </section>
        <section class="card">
          <h2>Batches in this range</h2>
          <${Table} id="usage-batches" rows=${data.batches} empty="No batch ran in this range." columns=${[
            ["Batch", (x) => html`<code>${x.batch}</code>`],
            ["Key", (x) => html`${data.names.get(x.key_id) || ""} <code>${x.key_id}</code>`],
            ["Requests", (x) => num(x.requests)],
            ["Errors", (x) => num(x.errors)],
            ["Prompt tokens", (x) => num(x.prompt_tokens)],
            ["Completion tokens", (x) => num(x.completion_tokens)],
            ["Cost", (x) => num(x.cost, 6)],
          ]} />
        </section>`}`;
  }
}
