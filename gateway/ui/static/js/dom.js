// The shared DOM layer of the crow web UI: element building (data is
// always rendered as text nodes, never parsed as HTML: rows contain
// arbitrary user text), formatting, the status area and the confirmation
// dialog.

export const PAGE_SIZE = 50;

export function $(id) { return document.getElementById(id); }

// el builds an element. attrs: class, id, type, href, title, text, hidden,
// disabled, data (an object of data-* values); any other is an attribute.
// children: nodes or strings (strings become text nodes); null and
// undefined are skipped.
export function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  attrs = attrs || {};
  Object.keys(attrs).forEach(k => {
    const v = attrs[k];
    if (v === undefined || v === null) return;
    if (k === 'class') n.className = v;
    else if (k === 'text') n.textContent = v;
    else if (k === 'data') Object.keys(v).forEach(d => { n.dataset[d] = v[d]; });
    else if (k === 'hidden' || k === 'disabled') n[k] = !!v;
    else n.setAttribute(k, String(v));
  });
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    n.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return n;
}

export function setText(id, text) { const n = $(id); if (n) n.textContent = text; }

export function str(v) { return v === null || v === undefined ? '' : String(v); }
export function arr(v) { return Array.isArray(v) ? v : []; }
export function obj(v) { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : {}; }
export function num(v) { return typeof v === 'number' && isFinite(v) ? v : 0; }
export function isObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }

// plural is "1 version", "2 versions"; many is the plural form when it is
// not one+"s".
export function plural(n, one, many) {
  return n + ' ' + (n === 1 ? one : (many || one + 's'));
}

function pad(n) { return n < 10 ? '0' + n : String(n); }

// fmtTime formats an RFC 3339 string or Unix seconds (0: never) as local
// time with an "ago" hint.
export function fmtTime(v) {
  if (v === null || v === undefined || v === '') return '—';
  let d;
  if (typeof v === 'number') {
    if (v <= 0) return 'never';
    d = new Date(v * 1000);
  } else {
    d = new Date(String(v));
  }
  if (isNaN(d.getTime())) return String(v);
  let s = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
    pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
  const ago = Math.round((Date.now() - d.getTime()) / 1000);
  if (ago >= 0) {
    const rel = ago < 60 ? ago + ' s' : ago < 3600 ? Math.floor(ago / 60) + ' min' :
      ago < 86400 ? Math.floor(ago / 3600) + ' h' : Math.floor(ago / 86400) + ' d';
    s += ' (' + rel + ' ago)';
  }
  return s;
}

export function pretty(v) {
  if (v === undefined) return '(absent)';
  try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); }
}

// canon is JSON with object keys sorted, to compare values.
export function canon(v) {
  if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
  if (v !== null && typeof v === 'object') {
    return '{' + Object.keys(v).sort().map(k => JSON.stringify(k) + ':' + canon(v[k])).join(',') + '}';
  }
  return JSON.stringify(v === undefined ? null : v);
}

export function short(id) {
  id = str(id);
  return id.length > 14 ? id.slice(0, 12) + '…' : id;
}

// codeOrDash shows a hash (or any identifier) as code, '—' when absent.
export function codeOrDash(v) {
  return v === null || v === undefined || v === '' ? el('span', { class: 'absent' }, '—') : el('code', null, str(v));
}

export function metaList(dl, pairs) {
  const nodes = [];
  pairs.forEach(p => {
    nodes.push(el('dt', null, p[0]));
    nodes.push(el('dd', p[2] || null, p[1]));
  });
  dl.replaceChildren(...nodes);
}

export function renderRows(tableId, emptyId, rows) {
  const tbody = $(tableId).querySelector('tbody');
  tbody.replaceChildren(...rows);
  $(emptyId).hidden = rows.length > 0;
  $(tableId).hidden = rows.length === 0;
}

export function replaceState(url) {
  try { history.replaceState(null, '', url); } catch (e) { /* ignore */ }
}

// ---- status area ----------------------------------------------------------

export function showStatus(kind, text) {
  const s = $('status');
  s.className = kind;
  s.textContent = text;
  s.hidden = false;
}

export function clearStatus() {
  const s = $('status');
  s.hidden = true;
  s.textContent = '';
}

// ---- confirmation dialog ----------------------------------------------------

let confirmBox = null;

function buildConfirm() {
  const dlg = el('dialog', { id: 'confirm-dialog', 'aria-labelledby': 'confirm-title', 'aria-describedby': 'confirm-text' },
    el('h2', { id: 'confirm-title' }),
    el('div', { id: 'confirm-text' }),
    el('div', { class: 'actions' },
      el('button', { type: 'button', id: 'confirm-cancel', class: 'secondary' }, 'Cancel'),
      el('button', { type: 'button', id: 'confirm-ok' }, 'OK')));
  document.body.appendChild(dlg);
  return dlg;
}

// confirmAction asks, in a modal dialog, whether to go on: title is the
// question, lines the paragraphs saying what the action will do, ok the
// button's label (danger: shown as a destructive action). It resolves to
// true (confirmed) or false (Cancel, Escape).
export function confirmAction(title, lines, ok, danger) {
  const dlg = confirmBox || (confirmBox = buildConfirm());
  $('confirm-title').textContent = title;
  $('confirm-text').replaceChildren(...lines.map(l => el('p', null, l)));
  const okButton = $('confirm-ok');
  const cancel = $('confirm-cancel');
  okButton.textContent = ok;
  okButton.className = danger ? 'danger' : '';
  return new Promise(resolve => {
    const done = v => {
      okButton.onclick = null;
      cancel.onclick = null;
      dlg.oncancel = null;
      if (dlg.open) dlg.close();
      resolve(v);
    };
    okButton.onclick = () => done(true);
    cancel.onclick = () => done(false);
    dlg.oncancel = ev => { ev.preventDefault(); done(false); };
    dlg.showModal();
    cancel.focus(); // the safe choice has the focus
  });
}

// ---- copying ------------------------------------------------------------------

// selectNode selects the text of a field or an element for the owner to
// copy by hand.
function selectNode(node) {
  if (typeof node.select === 'function') {
    node.focus();
    node.select();
    return;
  }
  const sel = window.getSelection();
  sel.removeAllRanges();
  const r = document.createRange();
  r.selectNodeContents(node);
  sel.addRange(r);
}

// copyFrom copies the text of node (a field's value, else its text) with
// the clipboard API; where there is none (a page not on localhost nor
// HTTPS) or it refuses, the text is selected and copied the old way, or
// left selected for Ctrl+C. say(text) reports the outcome.
export function copyFrom(node, what, say) {
  const text = typeof node.value === 'string' ? node.value : node.textContent;
  const byHand = () => {
    selectNode(node);
    let ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    say(ok ? 'Copied ' + what + '.' : 'The clipboard is not available here: ' + what + ' is selected, press Ctrl+C (⌘C on a Mac) to copy it.');
  };
  if (navigator.clipboard && typeof navigator.clipboard.writeText === 'function') {
    navigator.clipboard.writeText(text).then(() => say('Copied ' + what + '.'), byHand);
  } else {
    byHand();
  }
}
