// The admin API as the dashboard calls it. The admin key lives in sessionStorage (this tab
// only, gone when it closes) and leaves the page only as the Authorization header of these
// same-origin calls: never in a URL, a cookie or the HTML.
const STORE = "unigate.adminKey";

export const session = {
  key: () => sessionStorage.getItem(STORE),
  save: (key) => sessionStorage.setItem(STORE, key),
  clear: () => sessionStorage.removeItem(STORE),
};

export class ApiError extends Error {
  constructor(status, message, param) {
    super(message);
    this.status = status;
    this.param = param;
  }
}

export async function call(method, path, body) {
  const key = session.key();
  if (!key) throw new ApiError(401, "Not logged in.");
  const init = {
    method,
    headers: { Authorization: `Bearer ${key}` },
    credentials: "omit",
    cache: "no-store",
  };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    // A rejected admin key ends the session: the app shows the login form again.
    if (response.status === 401) window.dispatchEvent(new Event("unigate:logout"));
    throw new ApiError(response.status, error.message || `HTTP ${response.status}`, error.param);
  }
  return data;
}

export function query(params) {
  const pairs = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return pairs.length ? "?" + new URLSearchParams(pairs).toString() : "";
}
