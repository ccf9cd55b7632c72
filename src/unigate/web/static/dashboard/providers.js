// Providers (GET /admin/providers) and each model's routes with their health (GET /admin/models).
import { call } from "./api.js";
import { html, Loader, num, Table } from "./ui.js";

function health(h) {
  if (h.cooldown_remaining > 0) {
    return html`<span class="badge bad">cooling down, ${num(h.cooldown_remaining, 1)} s left</span>`;
  }
  if (h.consecutive_failures > 0) return html`<span class="badge warn">failing</span>`;
  return html`<span class="badge ok">healthy</span>`;
}

export class ProvidersPage extends Loader {
  every = 5000;

  load = async () => {
    const [providers, models] = await Promise.all([call("GET", "/admin/providers"), call("GET", "/admin/models")]);
    const routes = models.data.flatMap((m) => m.routes.map((r) => ({ ...r, name: m.name, upstream: r.model || m.name })));
    return { providers: providers.data, routes };
  };

  render(_, { data, error }) {
    if (error) return html`<p class="error">${error.message}</p>`;
    if (!data) return null;
    return html`<section class="card">
        <h2>Providers</h2>
        <${Table} id="providers-table" rows=${data.providers} empty="No providers." columns=${[
          ["Name", (p) => p.name],
          ["Protocol", (p) => p.protocol],
          ["Base URL", (p) => html`<code>${p.base_url || "-"}</code>`],
          ["Capabilities", (p) => p.capabilities.join(", "), "wrap"],
        ]} />
      </section>
      <section class="card">
        <h2>Routes</h2>
        <${Table} id="routes-table" rows=${data.routes} empty="No models." columns=${[
          ["Model", (r) => r.name],
          ["Provider", (r) => r.provider],
          ["Upstream model", (r) => r.upstream],
          ["Priority", (r) => r.priority],
          ["Weight", (r) => r.weight],
          ["Health", (r) => health(r.health)],
          ["Consecutive failures", (r) => r.health.consecutive_failures],
          ["Cooldown left (s)", (r) => num(r.health.cooldown_remaining, 1)],
        ]} />
      </section>`;
  }
}
