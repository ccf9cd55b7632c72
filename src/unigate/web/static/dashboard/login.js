// The login form: the admin key is checked with one admin call before the session keeps it.
import { call, session } from "./api.js";
import { Component, ErrorNote, html } from "./ui.js";

export class Login extends Component {
  state = { busy: false, error: null };

  submit = async (event) => {
    event.preventDefault();
    const key = new FormData(event.target).get("admin_key").trim();
    if (!key) return;
    this.setState({ busy: true, error: null });
    session.save(key);
    try {
      await call("GET", "/admin/keys");
      this.props.onLogin();
    } catch (error) {
      session.clear();
      const message = error.status === 401 ? "That is not the admin key." : error.message;
      this.setState({ busy: false, error: { message } });
    }
  };

  render(_, { busy, error }) {
    return html`<form id="login" class="login" onSubmit=${this.submit}>
      <h1>unigate</h1>
      <p>Log in with the gateway's admin key: <code>UNIGATE_ADMIN_KEY</code>, or the file
        ${" "}<code>admin_key</code> in the data directory.</p>
      ${this.props.notice && html`<p class="notice">${this.props.notice}</p>`}
      <label>Admin key
        <input name="admin_key" type="password" autocomplete="off" required autofocus />
      </label>
      <button type="submit" disabled=${busy}>Log in</button>
      <${ErrorNote} error=${error} />
    </form>`;
  }
}
