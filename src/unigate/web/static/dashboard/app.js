// The dashboard's shell: login state, navigation by URL fragment (#keys, #usage, ...), pages.
import { session } from "./api.js";
import { KeysPage } from "./keys.js";
import { Login } from "./login.js";
import { ProvidersPage } from "./providers.js";
import { RequestsPage } from "./requests.js";
import { TasksPage } from "./tasks.js";
import { Component, html, render } from "./ui.js";
import { UsagePage } from "./usage.js";

const PAGES = [
  ["keys", "Keys", KeysPage],
  ["usage", "Usage", UsagePage],
  ["requests", "Recent requests", RequestsPage],
  ["tasks", "Tasks", TasksPage],
  ["providers", "Providers and routes", ProvidersPage],
];

function pageFromHash() {
  const name = location.hash.replace(/^#\/?/, "");
  return PAGES.some(([id]) => id === name) ? name : "keys";
}

class App extends Component {
  state = { loggedIn: Boolean(session.key()), page: pageFromHash(), notice: null };

  componentDidMount() {
    window.addEventListener("hashchange", () => this.setState({ page: pageFromHash() }));
    window.addEventListener("unigate:logout", () => this.logout("The admin key was refused; log in again."));
  }

  logout = (notice = null) => {
    session.clear();
    this.setState({ loggedIn: false, notice });
  };

  render(_, { loggedIn, page, notice }) {
    if (!loggedIn) {
      return html`<${Login} notice=${notice} onLogin=${() => this.setState({ loggedIn: true, notice: null })} />`;
    }
    const [, title, Page] = PAGES.find(([id]) => id === page);
    return html`<header>
        <strong>unigate</strong>
        <nav>${PAGES.map(([id, label]) => html`<a href=${"#" + id} id=${"nav-" + id}
          class=${id === page ? "active" : ""}>${label}</a>`)}</nav>
        <button class="link" id="logout" onClick=${() => this.logout()}>Log out</button>
      </header>
      <main data-page=${page}>
        <h1>${title}</h1>
        <${Page} key=${page} />
      </main>`;
  }
}

render(html`<${App} />`, document.getElementById("app"));
