// api.js: the one request helper. The page speaks the /json/... twins of
// Zulip's /api/v1/... routes with its session cookie and CSRF token; it
// never sees an API key.

let csrfToken = '';

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.msg) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
    this.body = body;
  }
}

async function answer(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    // not JSON: an error page of a proxy, say
  }
  if (!response.ok || !body || body.result !== 'success') throw new ApiError(response.status, body);
  return body;
}

function form(params) {
  const body = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v === undefined) continue;
    body.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  }
  return body;
}

// api calls a route: GET and DELETE with the parameters in the query,
// others in a form body. keepalive lets a request outlive the page.
export async function api(method, path, params, { signal, keepalive } = {}) {
  let url = '/json' + path;
  const init = { method, headers: { 'X-CSRFToken': csrfToken }, credentials: 'same-origin', signal, keepalive };
  if (method === 'GET' || method === 'DELETE') {
    const q = form(params).toString();
    if (q) url += '?' + q;
  } else {
    init.body = form(params);
  }
  return answer(await fetch(url, init));
}

export async function upload(file) {
  const body = new FormData();
  body.append('file', file, file.name || 'pasted-file');
  return answer(await fetch('/json/user_uploads', { method: 'POST', body, headers: { 'X-CSRFToken': csrfToken }, credentials: 'same-origin' }));
}

export async function session() {
  const s = await answer(await fetch('/accounts/session', { credentials: 'same-origin' }));
  csrfToken = s.csrf_token;
  return s;
}

export async function login(username, password) {
  const s = await answer(await fetch('/accounts/login', { method: 'POST', body: form({ username, password }), credentials: 'same-origin' }));
  csrfToken = s.csrf_token;
  return s;
}

export async function logout() {
  await answer(await fetch('/accounts/logout', { method: 'POST', headers: { 'X-CSRFToken': csrfToken }, credentials: 'same-origin' }));
  csrfToken = '';
}

// csrf is the session's CSRF token, for a request api cannot make (a
// file upload other than user_uploads).
export const csrf = () => csrfToken;
