// Keys: the list, the create form (the new key is shown once), revocation.
import { call } from "./api.js";
import { Component, ErrorNote, html, list, Loader, num, Table, when } from "./ui.js";

const FAMILIES = ["text", "image", "audio", "music", "video", "visual"];
const PERIODS = ["total", "daily", "monthly"];

function status(key) {
  if (key.revoked_at) return "revoked";
  if (key.expires_at && key.expires_at * 1000 <= Date.now()) return "expired";
  return "active";
}

function budget(key) {
  return key.budget === null || key.budget === undefined ? "-" : `${num(key.budget, 4)} (${key.budget_period || "total"})`;
}

/** The form's values as the body of POST /admin/keys (empty fields left out). */
function keyBody(form) {
  const data = new FormData(form);
  const text = (name) => String(data.get(name) || "").trim();
  const number = (name) => (text(name) === "" ? undefined : Number(text(name)));
  const body = {
    name: text("name"),
    models: text("models").split(",").map((s) => s.trim()).filter(Boolean),
    families: data.getAll("families"),
    rpm: number("rpm"),
    tpm: number("tpm"),
    budget: number("budget"),
    budget_period: text("budget_period") || undefined,
    expires_at: text("expires_at") || undefined,
  };
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}

class CreateKey extends Component {
  state = { error: null, created: null, busy: false };

  submit = async (event) => {
    event.preventDefault();
    this.setState({ busy: true, error: null });
    try {
      const created = await call("POST", "/admin/keys", keyBody(event.target));
      event.target.reset();
      this.setState({ created, busy: false });
      this.props.onCreated();
    } catch (error) {
      this.setState({ error, busy: false });
    }
  };

  render(_, { error, created, busy }) {
    return html`<section class="card">
      <h2>Create a key</h2>
      ${created && html`<div class="new-key" id="new-key-box">
        <p>Key <b>${created.name}</b> (${created.id}) created. Copy it now: it is not shown again.</p>
        <code id="new-key">${created.key}</code>
        <button class="link" onClick=${() => this.setState({ created: null })}>Done</button>
      </div>`}
      <form id="create-key" class="grid" onSubmit=${this.submit}>
        <label>Name <input name="name" required maxlength="200" /></label>
        <label>Models <input name="models" placeholder="all; or globs: gpt-4o*, sandbox-*" /></label>
        <fieldset><legend>Families (none ticked: all)</legend>
          ${FAMILIES.map((f) => html`<label class="inline"><input type="checkbox" name="families" value=${f} /> ${f}</label>`)}
        </fieldset>
        <label>Requests per minute <input name="rpm" type="number" min="1" step="1" /></label>
        <label>Tokens per minute <input name="tpm" type="number" min="1" step="1" /></label>
        <label>Budget <input name="budget" type="number" min="0" step="any" /></label>
        <label>Budget period
          <select name="budget_period">${PERIODS.map((p) => html`<option value=${p}>${p}</option>`)}</select>
        </label>
        <label>Expires (UTC) <input name="expires_at" type="date" /></label>
        <div><button type="submit" disabled=${busy}>Create key</button></div>
      </form>
      <${ErrorNote} error=${error} />
    </section>`;
  }
}

class RevokeButton extends Component {
  state = { asking: false, error: null };

  revoke = async () => {
    try {
      await call("DELETE", `/admin/keys/${encodeURIComponent(this.props.id)}`);
      this.props.onDone();
    } catch (error) {
      this.setState({ error, asking: false });
    }
  };

  render({ id }, { asking, error }) {
    if (error) return html`<span class="error">${error.message}</span>`;
    if (!asking) return html`<button class="small" data-revoke=${id} onClick=${() => this.setState({ asking: true })}>Revoke</button>`;
    return html`<button class="small danger" data-confirm-revoke=${id} onClick=${this.revoke}>Confirm revoke</button>
      <button class="small link" onClick=${() => this.setState({ asking: false })}>Cancel</button>`;
  }
}

export class KeysPage extends Loader {
  load = async () => (await call("GET", "/admin/keys")).data;

  render(_, { data, error }) {
    const reload = () => this.reload();
    const columns = [
      ["Id", (k) => html`<code>${k.id}</code>`],
      ["Name", (k) => k.name],
      ["Prefix", (k) => html`<code>${k.prefix}</code>`],
      ["Models", (k) => list(k.models)],
      ["Families", (k) => list(k.families)],
      ["RPM", (k) => num(k.rpm)],
      ["TPM", (k) => num(k.tpm)],
      ["Budget", budget],
      ["Expires", (k) => (k.expires_at ? when(k.expires_at) : "never")],
      ["Created", (k) => when(k.created_at)],
      ["Status", (k) => html`<span class=${"badge " + (status(k) === "active" ? "ok" : "bad")} data-key-status=${k.id}>${status(k)}</span>`],
      ["", (k) => (status(k) === "revoked" ? "" : html`<${RevokeButton} id=${k.id} onDone=${reload} />`)],
    ];
    return html`<${CreateKey} onCreated=${reload} />
      <section class="card">
        <h2>Keys</h2>
        <${ErrorNote} error=${error} />
        ${data && html`<${Table} id="keys-table" columns=${columns} rows=${[...data].sort((a, b) => b.created_at - a.created_at)} empty="No keys yet." />`}
      </section>`;
  }
}
