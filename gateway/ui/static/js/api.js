// The shared API layer of the crow web UI: the owner key (kept in
// sessionStorage only), the REST calls with it (JSON in, JSON out, the
// server's {"error": ...} text shown to the user), the key form, and the
// start of a page. The public verify page calls only publicGet: it never
// shows the key form and never sends the key.
import { $, el, clearStatus, showStatus } from './dom.js';
import { renderHeader } from './nav.js';

const KEY_NAME = 'crow-api-key';

let memoryKey = '';
let page = null; // the page started by boot

function getKey() {
  try { return sessionStorage.getItem(KEY_NAME) || ''; } catch (e) { return ''; }
}
function setKey(k) {
  try { sessionStorage.setItem(KEY_NAME, k); } catch (e) { /* storage disabled: the key lives until reload */ }
  memoryKey = k;
}
function clearKey() {
  try { sessionStorage.removeItem(KEY_NAME); } catch (e) { /* ignore */ }
  memoryKey = '';
}
function currentKey() { return getKey() || memoryKey; }

export class ApiError extends Error {
  constructor(status, message, auth) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.auth = !!auth;
  }
}

// api calls the REST API with the owner key. It resolves to the decoded
// JSON answer; it rejects with an ApiError carrying the server's
// {"error": ...} text. A 401 forgets the key and shows the key form again
// (err.auth is then true).
export function api(method, path, body) {
  const key = currentKey();
  if (!key) {
    const box = $('login');
    if (!box || box.hidden) showLogin('');
    return Promise.reject(new ApiError(401, 'no API key', true));
  }
  return request(method, path, body, key);
}

// publicGet reads a public endpoint (GET /v1/verify/{name}, /health):
// never with the key, nor with any credential, whether or not the tab
// holds one. A 401 there is an ordinary error: it neither forgets the key
// nor asks for one.
export function publicGet(path) {
  return request('GET', path, undefined, '');
}

// request sends one call; key is the owner key, or '' for a public call.
async function request(method, path, body, key) {
  const headers = { 'Accept': 'application/json' };
  if (key) headers['Authorization'] = 'Bearer ' + key;
  const init = {
    method,
    headers,
    cache: 'no-store',
    credentials: key ? 'same-origin' : 'omit',
    referrerPolicy: 'no-referrer'
  };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res, text;
  try {
    res = await fetch(path, init);
    text = await res.text();
  } catch (err) {
    throw new ApiError(0, 'cannot reach the crow daemon: ' + (err && err.message ? err.message : String(err)));
  }
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch (e) { data = null; }
  }
  const msg = data && typeof data.error === 'string' ? data.error : '';
  if (res.status === 401 && key) {
    clearKey();
    showLogin('The API key was refused' + (msg ? ' (' + msg + ')' : '') + '. Enter the owner API key again.');
    throw new ApiError(401, msg || 'unauthorized', true);
  }
  if (!res.ok) {
    throw new ApiError(res.status, msg || ('HTTP ' + res.status + (res.statusText ? ' ' + res.statusText : '')));
  }
  if (data === null || typeof data !== 'object') {
    throw new ApiError(res.status, 'the daemon answered ' + method + ' ' + path + ' without a JSON object');
  }
  return data;
}

// failed reports an API error in the status area (auth errors already
// show the key form).
export function failed(what) {
  return err => {
    if (err && err.auth) return;
    showStatus('error', what + ': ' + (err && err.message ? err.message : String(err)));
  };
}

// ---- key form -----------------------------------------------------------------

function buildLogin() {
  const input = el('input', { id: 'login-key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: 'required' });
  const form = el('form', { id: 'login-form' },
    el('p', { id: 'login-msg', role: 'alert', hidden: true }),
    el('label', { 'for': 'login-key' }, 'Owner API key (the content of $CROW_HOME/api-key)'),
    input,
    el('button', { type: 'submit', id: 'login-submit' }, 'Use this key'),
    el('p', { class: 'muted' }, 'The key stays in this browser tab (sessionStorage) and is sent only to this daemon.'));
  const box = el('section', { id: 'login', hidden: true, 'aria-label': 'API key' }, form);
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    const k = input.value.trim();
    if (!k) return;
    setKey(k);
    input.value = '';
    start();
  });
  const status = $('status');
  status.parentNode.insertBefore(box, status.nextSibling);
  return box;
}

function showLogin(message) {
  if (page && page.public) return; // never ask for the key where none is needed
  const box = $('login') || buildLogin();
  $('content').hidden = true;
  $('forget-key').hidden = true;
  const msg = $('login-msg');
  msg.textContent = message;
  msg.hidden = !message;
  if (message) clearStatus();
  box.hidden = false;
  $('login-key').focus();
}

// ---- start --------------------------------------------------------------------

let started = false;

function start() {
  if (page.public) {
    // No key form, no "Forget API key": the key, if this tab holds one,
    // is left alone for the other pages and not used here.
    $('content').hidden = false;
    run();
    return;
  }
  if (!currentKey()) {
    showLogin('');
    return;
  }
  const box = $('login');
  if (box) box.hidden = true;
  $('content').hidden = false;
  $('forget-key').hidden = false;
  run();
}

function run() {
  if (!started) {
    started = true;
    if (page.init) page.init();
  }
  page.load();
}

// boot starts a page: p is { name (the nav entry), public (needs no key),
// init() (once), load() (each time the page is shown, after a key is
// entered) }. It renders the shared header first.
export function boot(p) {
  page = p;
  renderHeader(p.name);
  $('forget-key').addEventListener('click', () => {
    clearKey();
    showLogin('The key is forgotten in this tab.');
  });
  start();
}
