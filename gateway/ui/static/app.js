// crow web UI. The pages are static; every piece of data comes from the
// authenticated REST API (/v1/...) with the owner API key, which is kept in
// sessionStorage only. The public verify page is the exception: it calls only
// the public verify endpoint, never shows the key form and never sends the
// key. Data is rendered with DOM text nodes, never parsed as HTML: rows
// contain arbitrary user text.
(function () {
  'use strict';

  var KEY_NAME = 'crow-api-key';
  var PAGE_SIZE = 50;

  // ---- DOM helpers -------------------------------------------------------

  function $(id) { return document.getElementById(id); }

  // el builds an element. attrs: class, id, type, href, title, text, hidden,
  // disabled, data (an object of data-* values). children: nodes or strings
  // (strings become text nodes); null and undefined are skipped.
  function el(tag, attrs) {
    var n = document.createElement(tag);
    attrs = attrs || {};
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === undefined || v === null) return;
      if (k === 'class') n.className = v;
      else if (k === 'text') n.textContent = v;
      else if (k === 'data') Object.keys(v).forEach(function (d) { n.dataset[d] = v[d]; });
      else if (k === 'hidden' || k === 'disabled') n[k] = !!v;
      else n.setAttribute(k, String(v));
    });
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      n.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
    }
    return n;
  }

  function setText(id, text) { var n = $(id); if (n) n.textContent = text; }

  function pad(n) { return n < 10 ? '0' + n : String(n); }

  // fmtTime formats an RFC 3339 string or Unix seconds (0: never) as local
  // time with an "ago" hint.
  function fmtTime(v) {
    if (v === null || v === undefined || v === '') return '—';
    var d;
    if (typeof v === 'number') {
      if (v <= 0) return 'never';
      d = new Date(v * 1000);
    } else {
      d = new Date(String(v));
    }
    if (isNaN(d.getTime())) return String(v);
    var s = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' +
      pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds());
    var ago = Math.round((Date.now() - d.getTime()) / 1000);
    if (ago >= 0) {
      var rel = ago < 60 ? ago + ' s' : ago < 3600 ? Math.floor(ago / 60) + ' min' :
        ago < 86400 ? Math.floor(ago / 3600) + ' h' : Math.floor(ago / 86400) + ' d';
      s += ' (' + rel + ' ago)';
    }
    return s;
  }

  function str(v) { return v === null || v === undefined ? '' : String(v); }
  function arr(v) { return Array.isArray(v) ? v : []; }
  function obj(v) { return v !== null && typeof v === 'object' && !Array.isArray(v) ? v : {}; }
  function num(v) { return typeof v === 'number' && isFinite(v) ? v : 0; }

  function pretty(v) {
    if (v === undefined) return '(absent)';
    try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); }
  }

  // canon is JSON with object keys sorted, to compare values.
  function canon(v) {
    if (Array.isArray(v)) return '[' + v.map(canon).join(',') + ']';
    if (v !== null && typeof v === 'object') {
      return '{' + Object.keys(v).sort().map(function (k) { return JSON.stringify(k) + ':' + canon(v[k]); }).join(',') + '}';
    }
    return JSON.stringify(v === undefined ? null : v);
  }

  // ---- status area -------------------------------------------------------

  function showStatus(kind, text) {
    var s = $('status');
    s.className = kind;
    s.textContent = text;
    s.hidden = false;
  }

  function clearStatus() {
    var s = $('status');
    s.hidden = true;
    s.textContent = '';
  }

  // ---- API key and REST calls --------------------------------------------

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
  var memoryKey = '';
  function currentKey() { return getKey() || memoryKey; }

  function ApiError(status, message, auth) {
    this.status = status;
    this.message = message;
    this.auth = !!auth;
  }
  ApiError.prototype = Object.create(Error.prototype);
  ApiError.prototype.name = 'ApiError';

  // api calls the REST API with the owner key. It resolves to the decoded
  // JSON answer; it rejects with an ApiError carrying the server's
  // {"error": ...} text. A 401 forgets the key and shows the key form again
  // (err.auth is then true).
  function api(method, path, body) {
    var key = currentKey();
    if (!key) {
      var box = $('login');
      if (!box || box.hidden) showLogin('');
      return Promise.reject(new ApiError(401, 'no API key', true));
    }
    return request(method, path, body, key);
  }

  // publicGet reads a public endpoint (GET /v1/verify/{name}): never with
  // the key, nor with any credential, whether or not the tab holds one. A
  // 401 there is an ordinary error: it neither forgets the key nor asks
  // for one.
  function publicGet(path) {
    return request('GET', path, undefined, '');
  }

  // request sends one call; key is the owner key, or '' for a public call.
  function request(method, path, body, key) {
    var headers = { 'Accept': 'application/json' };
    if (key) headers['Authorization'] = 'Bearer ' + key;
    var init = {
      method: method,
      headers: headers,
      cache: 'no-store',
      credentials: key ? 'same-origin' : 'omit',
      referrerPolicy: 'no-referrer'
    };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        if (text) {
          try { data = JSON.parse(text); } catch (e) { data = null; }
        }
        var msg = data && typeof data.error === 'string' ? data.error : '';
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
      });
    }, function (err) {
      throw new ApiError(0, 'cannot reach the crow daemon: ' + (err && err.message ? err.message : String(err)));
    });
  }

  // failed reports an API error in the status area (auth errors already
  // show the key form).
  function failed(what) {
    return function (err) {
      if (err && err.auth) return;
      showStatus('error', what + ': ' + (err && err.message ? err.message : String(err)));
    };
  }

  // ---- key form ----------------------------------------------------------

  function buildLogin() {
    var input = el('input', { id: 'login-key', type: 'password', autocomplete: 'off', spellcheck: 'false', required: 'required' });
    var form = el('form', { id: 'login-form' },
      el('p', { id: 'login-msg', role: 'alert', hidden: true }),
      el('label', { 'for': 'login-key' }, 'Owner API key (the content of $CROW_HOME/api-key)'),
      input,
      el('button', { type: 'submit', id: 'login-submit' }, 'Use this key'),
      el('p', { class: 'muted' }, 'The key stays in this browser tab (sessionStorage) and is sent only to this daemon.'));
    var box = el('section', { id: 'login', hidden: true, 'aria-label': 'API key' }, form);
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      var k = input.value.trim();
      if (!k) return;
      setKey(k);
      input.value = '';
      start();
    });
    var status = $('status');
    status.parentNode.insertBefore(box, status.nextSibling);
    return box;
  }

  // isPublicPage: this page needs no key (the verify page).
  function isPublicPage() {
    var page = pages[document.body.dataset.page];
    return !!(page && page.public);
  }

  function showLogin(message) {
    if (isPublicPage()) return; // never ask for the key where none is needed
    var box = $('login') || buildLogin();
    $('content').hidden = true;
    $('forget-key').hidden = true;
    var msg = $('login-msg');
    msg.textContent = message;
    msg.hidden = !message;
    if (message) clearStatus();
    box.hidden = false;
    $('login-key').focus();
  }

  var started = {};

  function start() {
    var name = document.body.dataset.page;
    var page = pages[name];
    if (page && page.public) {
      // No key form, no "Forget API key": the key, if this tab holds one,
      // is left alone for the other pages and not used here.
      $('content').hidden = false;
      run(name, page);
      return;
    }
    if (!currentKey()) {
      showLogin('');
      return;
    }
    var box = $('login');
    if (box) box.hidden = true;
    $('content').hidden = false;
    $('forget-key').hidden = false;
    if (page) run(name, page);
  }

  function run(name, page) {
    if (!started[name]) {
      started[name] = true;
      if (page.init) page.init();
    }
    page.load();
  }

  // ---- overview ----------------------------------------------------------

  var overview = {
    load: function () {
      setText('ov-conflicts', '…');
      setText('ov-instances', '…');
      setText('ov-unread', '…');
      setText('ov-projects', '…');
      api('GET', '/v1/projects').then(function (d) {
        var list = arr(d.projects).map(obj);
        var withState = list.filter(function (p) { return num(p.state_version) > 0; }).length;
        setText('ov-projects', list.length + ' project' + (list.length === 1 ? '' : 's') + ', ' + withState + ' with a state');
      }, function (err) { if (!err.auth) setText('ov-projects', 'unavailable: ' + err.message); });
      api('GET', '/v1/sync/conflicts?unresolved=true&limit=100').then(function (d) {
        var n = arr(d.conflicts).length;
        var more = d.next_cursor ? '+' : '';
        setText('ov-conflicts', n === 0 ? 'No unresolved conflicts' : n + more + ' unresolved conflict' + (n === 1 && !more ? '' : 's'));
      }, function (err) { if (!err.auth) setText('ov-conflicts', 'unavailable: ' + err.message); });
      api('GET', '/v1/instances').then(function (d) {
        var list = arr(d.instances);
        var online = list.filter(function (i) { return obj(i).status === 'online'; }).length;
        setText('ov-instances', list.length + ' instance' + (list.length === 1 ? '' : 's') + ', ' + online + ' online');
      }, function (err) { if (!err.auth) setText('ov-instances', 'unavailable: ' + err.message); });
      api('GET', '/v1/notifications?limit=1').then(function (d) {
        var n = num(d.unread);
        setText('ov-unread', n + ' unread notification' + (n === 1 ? '' : 's'));
      }, function (err) { if (!err.auth) setText('ov-unread', 'unavailable: ' + err.message); });
    }
  };

  // ---- conflicts (the recovery view) --------------------------------------

  var OP_TEXT = {
    update: 'update: both instances edited the row',
    'delete': 'delete: one instance deleted the row while the other edited it',
    insert: 'insert collision: both instances created a row with this id independently'
  };

  var RESOLUTION_TEXT = { keep: 'kept current', restore: 'restored' };

  var cs = {
    unresolvedOnly: true,
    table: '',
    cursor: '',
    items: [],
    gen: 0,
    open: null, // the conflict shown in the detail
    busy: false,
    names: {} // instance id -> name
  };

  function short(id) {
    id = str(id);
    return id.length > 14 ? id.slice(0, 12) + '…' : id;
  }

  function instanceLabel(id) {
    id = str(id);
    var name = cs.names[id];
    return name ? name + ' (' + id + ')' : (id || '—');
  }

  function stateText(c) {
    if (!c.resolved) return 'unresolved';
    var r = RESOLUTION_TEXT[str(c.resolution)];
    return 'resolved' + (r ? ' · ' + r : '');
  }

  // restoreBlock says why restore is not offered for c ('' when it is).
  function restoreBlock(c) {
    if (c.op === 'insert') {
      return 'Restore is not available for an insert collision: both instances created this row independently, so there is no earlier version to go back to. Both versions are shown below as JSON; copy what you need into the row by hand, then choose "Keep current".';
    }
    if (c.table_name === 'crow_context') {
      return 'Restore is not available for crow_context rows: they use last-write-wins. Edit the row by hand if the overwritten version was the right one.';
    }
    if (c.table_name === 'crow_instances') {
      return 'Restore is not available for the instance registry: instances are changed through their own commands (crow instance add / revoke). Choose "Keep current".';
    }
    return '';
  }

  function conflictPath(id, action) {
    return '/v1/sync/conflicts/' + encodeURIComponent(id) + (action ? '/' + action : '');
  }

  function listQuery(cursor) {
    var q = new URLSearchParams();
    q.set('unresolved', cs.unresolvedOnly ? 'true' : 'false');
    if (cs.table) q.set('table', cs.table);
    q.set('limit', String(PAGE_SIZE));
    if (cursor) q.set('cursor', cursor);
    return '/v1/sync/conflicts?' + q.toString();
  }

  function loadConflicts(append) {
    var gen = ++cs.gen;
    return api('GET', listQuery(append ? cs.cursor : '')).then(function (d) {
      if (gen !== cs.gen) return; // a newer load (filter change) won
      var list = arr(d.conflicts).map(obj);
      cs.items = append ? cs.items.concat(list) : list;
      cs.cursor = typeof d.next_cursor === 'string' ? d.next_cursor : '';
      renderConflictList();
    }, failed('Could not load the conflicts'));
  }

  function renderConflictList() {
    var tbody = $('conflict-list').querySelector('tbody');
    var rows = cs.items.map(function (c) {
      var open = el('button', { type: 'button', class: 'small', data: { open: str(c.id) } }, 'Open');
      open.addEventListener('click', function () { openConflict(str(c.id)); });
      var tr = el('tr', { data: { id: str(c.id) }, class: cs.open && cs.open.id === c.id ? 'selected' : null },
        el('td', { title: str(c.created_at) }, fmtTime(c.created_at)),
        el('td', null, str(c.table_name)),
        el('td', null, el('code', null, str(c.row_id))),
        el('td', null, str(c.op)),
        el('td', null,
          el('span', { class: 'mono', title: str(c.winning_instance_id) }, short(c.winning_instance_id)),
          ' @' + num(c.winning_lamport_ts) + ' vs ',
          el('span', { class: 'mono', title: str(c.losing_instance_id) }, short(c.losing_instance_id)),
          ' @' + num(c.losing_lamport_ts)),
        el('td', null, el('span', { class: 'badge ' + (c.resolved ? 'resolved' : 'unresolved') }, stateText(c))),
        el('td', null, open));
      return tr;
    });
    tbody.replaceChildren.apply(tbody, rows);
    var empty = $('conflict-empty');
    empty.textContent = (cs.unresolvedOnly ? 'No unresolved conflicts' : 'No conflicts') +
      (cs.table ? ' in table ' + cs.table : '') + '.';
    empty.hidden = rows.length > 0;
    $('conflict-list').hidden = rows.length === 0;
    $('conflict-more').hidden = !cs.cursor;
  }

  function openConflict(id) {
    return api('GET', conflictPath(id)).then(function (c) {
      renderDetail(obj(c));
      try { history.replaceState(null, '', '/ui/conflicts?id=' + encodeURIComponent(id)); } catch (e) { /* ignore */ }
      $('detail').scrollIntoView({ block: 'start' });
    }, failed('Could not open the conflict'));
  }

  function closeDetail() {
    cs.open = null;
    $('detail').hidden = true;
    try { history.replaceState(null, '', '/ui/conflicts'); } catch (e) { /* ignore */ }
    renderConflictList();
  }

  function metaList(dl, pairs) {
    var nodes = [];
    pairs.forEach(function (p) {
      nodes.push(el('dt', null, p[0]));
      nodes.push(el('dd', p[2] || null, p[1]));
    });
    dl.replaceChildren.apply(dl, nodes);
  }

  function renderVersion(id, c, side) {
    var art = $(id);
    var deleted = !!c[side + '_deleted'];
    art.classList.toggle('deleted', deleted);
    metaList(art.querySelector('dl'), [
      ['Instance', instanceLabel(c[side + '_instance_id']), { class: 'mono', data: { field: 'instance' } }],
      ['Lamport', String(num(c[side + '_lamport_ts'])), { data: { field: 'lamport' } }],
      ['Deleted', deleted ? 'yes (a tombstone)' : 'no', { data: { field: 'deleted' } }],
      ['Version vector', canon(obj(c[side + '_vv'])), { class: 'mono' }]
    ]);
    art.querySelector('pre').textContent = pretty(c[side + '_data']);
  }

  function isObject(v) { return v !== null && typeof v === 'object' && !Array.isArray(v); }

  // diffFields compares the top-level fields of the current and overwritten
  // data. change is 'changed', 'added' (only in current), 'removed' (only in
  // overwritten) or 'same'.
  function diffFields(cur, over) {
    if (!isObject(cur) || !isObject(over)) {
      return [{ field: '(whole value)', cur: cur, over: over, change: canon(cur) === canon(over) ? 'same' : 'changed' }];
    }
    var keys = {};
    Object.keys(cur).forEach(function (k) { keys[k] = true; });
    Object.keys(over).forEach(function (k) { keys[k] = true; });
    return Object.keys(keys).sort().map(function (k) {
      var inC = Object.prototype.hasOwnProperty.call(cur, k);
      var inO = Object.prototype.hasOwnProperty.call(over, k);
      var change = inC && inO ? (canon(cur[k]) === canon(over[k]) ? 'same' : 'changed') : inC ? 'added' : 'removed';
      return { field: k, cur: inC ? cur[k] : undefined, over: inO ? over[k] : undefined, change: change };
    });
  }

  var CHANGE_TEXT = {
    changed: 'changed',
    added: 'added (only in current)',
    removed: 'removed (only in overwritten)',
    same: 'same'
  };

  function valueCell(v) {
    return el('td', null, v === undefined ? el('span', { class: 'absent' }, '(absent)') : el('pre', null, pretty(v)));
  }

  function renderDiff(c) {
    var rows = diffFields(c.winning_data, c.losing_data);
    var counts = { changed: 0, added: 0, removed: 0, same: 0 };
    var trs = rows.map(function (r) {
      counts[r.change]++;
      return el('tr', { class: 'diff-' + r.change, data: { field: r.field, change: r.change } },
        el('td', null, r.field),
        valueCell(r.cur),
        valueCell(r.over),
        el('td', null, CHANGE_TEXT[r.change]));
    });
    var tbody = $('diff').querySelector('tbody');
    tbody.replaceChildren.apply(tbody, trs);
    var differ = counts.changed + counts.added + counts.removed;
    setText('diff-summary', (differ === 0 ? 'The data of the two versions is the same' :
      differ + ' field' + (differ === 1 ? ' differs' : 's differ') + ': ' + counts.changed + ' changed, ' +
      counts.added + ' added (only in current), ' + counts.removed + ' removed (only in overwritten)') +
      '; ' + counts.same + ' unchanged.');
  }

  function updateButtons() {
    var c = cs.open;
    if (!c) return;
    var block = restoreBlock(c);
    var keep = $('keep');
    var restore = $('restore');
    keep.disabled = cs.busy || !!c.resolved;
    restore.disabled = cs.busy || !!c.resolved || !!block;
    keep.title = c.resolved ? 'Already resolved' : 'Keep the live version and mark the conflict resolved';
    restore.title = block || (c.resolved ? 'Already resolved' : 'Write the overwritten version back as a new edit');
    $('resolve-all').disabled = cs.busy;
    var note = $('restore-note');
    note.textContent = block;
    note.hidden = !block;
  }

  function renderDetail(c) {
    cs.open = c;
    setText('detail-title', 'Conflict on ' + str(c.table_name) + ' / ' + str(c.row_id));
    var pairs = [
      ['Conflict id', str(c.id), { class: 'mono' }],
      ['Table', str(c.table_name)],
      ['Row id', str(c.row_id), { class: 'mono' }],
      ['Kind', OP_TEXT[str(c.op)] || str(c.op), { data: { field: 'op' } }],
      ['Recorded', fmtTime(c.created_at)],
      ['State', stateText(c) + (c.resolved && c.resolved_at ? ' at ' + fmtTime(c.resolved_at) : ''), { data: { field: 'state' } }]
    ];
    metaList($('detail-meta'), pairs);
    renderVersion('version-current', c, 'winning');
    renderVersion('version-overwritten', c, 'losing');
    renderDiff(c);
    updateButtons();
    $('detail').hidden = false;
    renderConflictList();
  }

  function setBusy(b) {
    cs.busy = b;
    updateButtons();
    $('resolve-all').disabled = b;
  }

  function act(action) {
    var c = cs.open;
    if (!c || cs.busy) return;
    var what = str(c.table_name) + ' / ' + str(c.row_id);
    setBusy(true);
    api('POST', conflictPath(str(c.id), action)).then(function (d) {
      if (action === 'keep') {
        showStatus('ok', 'Kept the current version of ' + what + '; the conflict is resolved.');
        renderDetail(isObject(d) && d.id ? d : c);
      } else {
        showStatus('ok', 'Restored the overwritten version of ' + what + '. It is a new edit and syncs to every instance; the conflict is resolved.');
        renderDetail(isObject(d.conflict) ? d.conflict : c);
      }
    }, function (err) {
      if (err.auth) return;
      showStatus('error', (action === 'keep' ? 'Keep current' : 'Restore') + ' refused for ' + what + ': ' + err.message);
      // Re-read the record: it may have been resolved elsewhere meanwhile.
      return api('GET', conflictPath(str(c.id))).then(function (fresh) {
        if (cs.open && cs.open.id === c.id) renderDetail(obj(fresh));
      }, function () { /* the status already says what failed */ });
    }).catch(failed('Could not show the result')).then(function () {
      setBusy(false);
      return loadConflicts(false);
    });
  }

  function resolveAll() {
    if (cs.busy) return;
    var scope = cs.table ? 'of table ' + cs.table : 'of all tables';
    if (!window.confirm('Resolve all unresolved conflicts ' + scope + ' by keeping their current versions?\n\nThe overwritten versions stay listed under "Show: All".')) {
      return;
    }
    setBusy(true);
    api('POST', '/v1/sync/conflicts/resolve-all', cs.table ? { table: cs.table } : {}).then(function (d) {
      var n = num(d.resolved);
      showStatus('ok', 'Resolved ' + n + ' conflict' + (n === 1 ? '' : 's') + ' by keeping the current versions.');
      if (cs.open) {
        return api('GET', conflictPath(str(cs.open.id))).then(function (fresh) { renderDetail(obj(fresh)); }, function () { /* ignore */ });
      }
    }, failed('Resolve all failed')).catch(failed('Could not show the result')).then(function () {
      setBusy(false);
      return loadConflicts(false);
    });
  }

  function loadInstanceNames() {
    return api('GET', '/v1/instances').then(function (d) {
      arr(d.instances).forEach(function (i) {
        i = obj(i);
        if (i.id && i.name) cs.names[str(i.id)] = str(i.name);
      });
      if (cs.open) renderDetail(cs.open);
    }, function () { /* names are a nicety: ids are shown without them */ });
  }

  var conflictsPage = {
    init: function () {
      $('filter-resolved').addEventListener('change', function (ev) {
        cs.unresolvedOnly = ev.target.value !== 'all';
        loadConflicts(false);
      });
      $('filter-table').addEventListener('change', function (ev) {
        cs.table = ev.target.value;
        loadConflicts(false);
      });
      $('conflict-filter').addEventListener('submit', function (ev) { ev.preventDefault(); });
      $('refresh').addEventListener('click', function () {
        clearStatus();
        loadConflicts(false);
        if (cs.open) openConflict(str(cs.open.id));
      });
      $('conflict-more').addEventListener('click', function () { loadConflicts(true); });
      $('resolve-all').addEventListener('click', resolveAll);
      $('keep').addEventListener('click', function () { act('keep'); });
      $('restore').addEventListener('click', function () { act('restore'); });
      $('close-detail').addEventListener('click', closeDetail);
    },
    load: function () {
      cs.unresolvedOnly = $('filter-resolved').value !== 'all';
      cs.table = $('filter-table').value;
      loadInstanceNames();
      loadConflicts(false);
      var id = new URLSearchParams(location.search).get('id');
      if (id) openConflict(id);
    }
  };

  // ---- instances -----------------------------------------------------------

  var STATUS_CLASSES = { online: 'online', syncing: 'syncing', offline: 'offline', unknown: '', revoked: 'revoked' };

  function renderRows(tableId, emptyId, rows) {
    var tbody = $(tableId).querySelector('tbody');
    tbody.replaceChildren.apply(tbody, rows);
    $(emptyId).hidden = rows.length > 0;
    $(tableId).hidden = rows.length === 0;
  }

  // ---- invitations (the instances page; SPEC §7) ----------------------------

  // shellWord quotes s for a POSIX shell when it is not a plain word.
  function shellWord(s) {
    return /^[A-Za-z0-9_.,:\/=+@%-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
  }

  // fmtExpiry formats an expiry time (RFC 3339) with an "in" hint.
  function fmtExpiry(v) {
    var s = fmtTime(v);
    var d = new Date(str(v));
    if (isNaN(d.getTime())) return s;
    var left = Math.round((d.getTime() - Date.now()) / 1000);
    if (left <= 0) return s + ' (already past)';
    // Hours up to two days, so that a lifetime of 24 h reads "in 24 h".
    var rel = left < 60 ? left + ' s' : left < 3570 ? Math.round(left / 60) + ' min' :
      left < 172800 ? Math.round(left / 3600) + ' h' : Math.round(left / 86400) + ' d';
    return s + ' (in ' + rel + ')';
  }

  function copyMsg(text) {
    var m = $('invite-copy-msg');
    m.textContent = text;
    m.hidden = false;
  }

  // selectNode selects the text of a field or an element for the owner to
  // copy by hand.
  function selectNode(node) {
    if (typeof node.select === 'function') {
      node.focus();
      node.select();
      return;
    }
    var sel = window.getSelection();
    sel.removeAllRanges();
    var r = document.createRange();
    r.selectNodeContents(node);
    sel.addRange(r);
  }

  // copyFrom copies the text of node (a field's value, else its text) with
  // the clipboard API; where there is none (a page not on localhost nor
  // HTTPS) or it refuses, the text is selected and copied the old way, or
  // left selected for Ctrl+C.
  function copyFrom(node, what) {
    var text = typeof node.value === 'string' ? node.value : node.textContent;
    function byHand() {
      selectNode(node);
      var ok = false;
      try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
      copyMsg(ok ? 'Copied ' + what + '.' : 'The clipboard is not available here: ' + what + ' is selected, press Ctrl+C (⌘C on a Mac) to copy it.');
    }
    if (navigator.clipboard && typeof navigator.clipboard.writeText === 'function') {
      navigator.clipboard.writeText(text).then(function () { copyMsg('Copied ' + what + '.'); }, byHand);
    } else {
      byHand();
    }
  }

  var inv = { busy: false };

  // showInviteRole shows the invite form on home, and on a satellite (or
  // when the role is unknown) a line saying invites are made on home.
  // homeURL is home's gateway URL when the registry knows it.
  function showInviteRole(role, homeURL, why) {
    $('invite-checking').hidden = true;
    var home = role === 'home';
    $('invite-form').hidden = !home;
    if (!home) $('invite-result').hidden = true;
    var note = $('invite-elsewhere');
    note.hidden = home;
    if (home) return;
    var text = role === 'satellite' ?
      'Invites are made on home: this instance is a satellite. Run crow instance invite --name NAME on home, or use the instances page of home\'s web UI' :
      'Invites are made on home, and this page could not tell whether this instance is home (' + why + '). Run crow instance invite --name NAME on home';
    note.textContent = text + (homeURL ? ' (home\'s gateway: ' + homeURL + ').' : '.');
  }

  function renderInvite(d, asked) {
    var name = str(d.name) || asked;
    var line = str(d.invite);
    $('invite-line').value = line;
    setText('invite-for', name);
    setText('invite-expires', fmtExpiry(d.expires_at));
    $('invite-expires').title = str(d.expires_at);
    setText('invite-id', str(d.invite_id));
    setText('invite-command', 'crow init --name ' + shellWord(name) + ' --join ' + shellWord(line));
    $('invite-copy-msg').hidden = true;
    $('invite-result').hidden = false;
  }

  function makeInvite() {
    if (inv.busy) return;
    var name = $('invite-name').value.trim();
    if (!name) {
      $('invite-name').focus();
      return;
    }
    var ttl = $('invite-ttl').value;
    inv.busy = true;
    $('invite-submit').disabled = true;
    $('invite-result').hidden = true;
    clearStatus();
    api('POST', '/v1/instances/invite', { name: name, ttl: ttl }).then(function (d) {
      renderInvite(obj(d), name);
      showStatus('ok', 'Made a single-use invite for ' + (str(d.name) || name) + '. Run the command below on the new machine.');
    }, failed('Could not make the invite')).then(function () {
      inv.busy = false;
      $('invite-submit').disabled = false;
    });
  }

  var instancesPage = {
    init: function () {
      $('invite-form').addEventListener('submit', function (ev) {
        ev.preventDefault();
        makeInvite();
      });
      $('invite-copy').addEventListener('click', function () { copyFrom($('invite-line'), 'the invite'); });
      $('invite-copy-command').addEventListener('click', function () { copyFrom($('invite-command'), 'the command'); });
    },
    load: function () {
      // The role comes from the public /health; if that cannot be read,
      // from this instance's own row in the registry.
      var instances = api('GET', '/v1/instances');
      Promise.all([
        publicGet('/health').then(function (h) { return { role: str(obj(h).role) }; }, function (err) {
          return { error: err.message };
        }),
        instances.catch(function (err) {
          if (err.auth) throw err;
          return {};
        })
      ]).then(function (res) {
        var h = res[0];
        var inst = obj(res[1]);
        var list = arr(inst.instances).map(obj);
        var selfRow = list.filter(function (i) { return str(i.id) === str(inst.self); })[0];
        var homeRow = list.filter(function (i) { return i.role === 'home'; })[0];
        var role = h.error ? (selfRow ? str(selfRow.role) : '') : h.role;
        var why = h.error ? 'GET /health: ' + h.error : 'its role is ' + (role ? '"' + role + '"' : 'not given');
        showInviteRole(role, homeRow && role !== 'home' ? str(homeRow.gateway_url) : '', why);
      }, function () { /* the key form is shown */ });
      Promise.all([
        instances,
        api('GET', '/v1/sync/status').catch(function (err) {
          if (err.auth) throw err;
          return { error: err.message };
        })
      ]).then(function (res) {
        var inst = obj(res[0]);
        var st = obj(res[1]);
        var self = str(inst.self);
        var peers = arr(st.peers).map(obj);
        var byInstance = {};
        peers.forEach(function (p) { if (p.instance_id) byInstance[str(p.instance_id)] = p; });

        renderRows('instance-list', 'instance-empty', arr(inst.instances).map(obj).map(function (i) {
          var id = str(i.id);
          var status = str(i.status) || 'unknown';
          var repl;
          if (id === self) repl = 'this instance';
          else if (byInstance[id]) {
            var p = byInstance[id];
            repl = (p.connected ? 'connected' : 'not connected') + ', lag ' + num(p.lag);
          } else repl = 'no peer session';
          return el('tr', { data: { id: id } },
            el('td', null, str(i.name) || '—', id === self ? el('span', { class: 'muted' }, ' (this instance)') : null),
            el('td', null, el('code', null, id)),
            el('td', null, str(i.role)),
            el('td', null, el('span', { class: 'badge ' + (STATUS_CLASSES[status] || '') }, status)),
            el('td', null, fmtTime(typeof i.last_seen === 'number' ? i.last_seen : str(i.last_seen))),
            el('td', null, el('code', null, str(i.gateway_url))),
            el('td', { data: { field: 'replication' } }, repl));
        }));

        if (st.error) {
          setText('sync-summary', 'Replication status unavailable: ' + st.error);
        } else {
          setText('sync-summary', (st.paused ? 'Replication is paused.' : 'Replication is running.') +
            (st.instance_id ? ' This instance: ' + str(st.instance_id) + '.' : ''));
        }
        renderRows('peer-list', 'peer-empty', peers.map(function (p) {
          var label = str(p.name) || str(p.instance_id) || str(p.peer_id) || '—';
          return el('tr', { data: { id: str(p.instance_id) || str(p.peer_id) } },
            el('td', { title: str(p.peer_id) }, label),
            el('td', null, p.connected ? 'yes' : 'no'),
            el('td', { data: { field: 'lag' } }, String(num(p.lag))),
            el('td', null, fmtTime(p.last_seen)),
            el('td', null, String(num(p.entries_received))),
            el('td', null, String(num(p.entries_sent))));
        }));
        renderRows('feed-list', 'feed-empty', arr(st.feeds).map(obj).map(function (f) {
          var key = str(f.feed || f.key);
          return el('tr', null,
            el('td', null, str(f.name) || str(f.instance_id) || 'unknown instance'),
            el('td', { title: key }, el('code', null, short(key))),
            el('td', null, String(num(f.length))));
        }));
      }, failed('Could not load the instances'));
    }
  };

  // ---- notifications -------------------------------------------------------

  var ns = { items: [], cursor: '', unread: 0 };

  // linkLabel returns the text of a notification link, or '' when the link
  // is not a page of this UI (only /ui/ pages are linked).
  function linkLabel(link) {
    link = str(link);
    if (!/^\/ui\/[A-Za-z0-9_\-\/?=&.]*$/.test(link) || link.indexOf('//') >= 0) return '';
    if (link.indexOf('/ui/conflicts') === 0) return 'Open the recovery view';
    if (link.indexOf('/ui/instances') === 0) return 'Open instances';
    return 'Open';
  }

  function renderNotifications() {
    var list = $('notification-list');
    list.replaceChildren.apply(list, ns.items.map(function (n) {
      var id = str(n.id);
      var label = linkLabel(n.link);
      var action;
      if (n.read) {
        action = el('span', { class: 'badge', data: { state: 'read' } }, 'read');
      } else {
        action = el('button', { type: 'button', class: 'small', data: { read: id } }, 'Mark read');
        action.addEventListener('click', function () { markRead(id, action); });
      }
      return el('li', { class: n.read ? 'read' : 'unread', data: { id: id } },
        el('div', { class: 'head' },
          el('strong', null, str(n.title) || '(no title)'),
          n.priority ? el('span', { class: 'badge ' + (n.priority === 'high' ? 'high' : '') }, str(n.priority)) : null,
          el('span', { class: 'muted' }, str(n.kind)),
          el('span', { class: 'muted', title: str(n.created_at) }, fmtTime(n.created_at)),
          action),
        n.body ? el('p', { class: 'body' }, str(n.body)) : null,
        label ? el('a', { href: str(n.link) }, label) : null);
    }));
    $('notification-empty').hidden = ns.items.length > 0;
    $('notification-more').hidden = !ns.cursor;
    setText('unread-summary', ns.unread + ' unread.');
  }

  function loadNotifications(append) {
    var q = new URLSearchParams();
    q.set('limit', String(PAGE_SIZE));
    if (append && ns.cursor) q.set('cursor', ns.cursor);
    return api('GET', '/v1/notifications?' + q.toString()).then(function (d) {
      var list = arr(d.notifications).map(obj);
      ns.items = append ? ns.items.concat(list) : list;
      ns.cursor = typeof d.next_cursor === 'string' ? d.next_cursor : '';
      ns.unread = num(d.unread);
      renderNotifications();
    }, failed('Could not load the notifications'));
  }

  function markRead(id, button) {
    button.disabled = true;
    api('POST', '/v1/notifications/' + encodeURIComponent(id) + '/read').then(function () {
      showStatus('ok', 'Marked the notification read.');
      return loadNotifications(false);
    }, function (err) {
      button.disabled = false;
      failed('Could not mark the notification read')(err);
    });
  }

  var notificationsPage = {
    init: function () {
      $('notification-more').addEventListener('click', function () { loadNotifications(true); });
    },
    load: function () { loadNotifications(false); }
  };

  // ---- anchors (the projects page and the public verify page) -------------

  // VERIFY_STATUS explains each status of GET /v1/verify/{name} (SPEC §11:
  // a version is a leaf of a Merkle root anchored on chain).
  var VERIFY_STATUS = {
    final: 'its root is on chain with enough confirmations; the proof checks out',
    included: 'in a block, waiting for confirmations',
    pending: 'not in an anchored root yet',
    mismatch: 'home\'s record or its proof does not match the hash held here',
    missing: 'home recorded its root anchored, but the chain has no such root',
    conflict: 'home found another hash on chain when anchoring',
    unverified: 'this daemon reads no chain; home\'s record and proof check out'
  };

  // VERIFY_BADGE is the badge class of each status: ok, included (ok, not
  // final yet), waiting, error or neutral (any status not listed).
  var VERIFY_BADGE = { final: 'ok', included: 'included', pending: 'waiting', mismatch: 'error', missing: 'error', conflict: 'error', unverified: 'neutral' };

  // anchorError: the records or the chain contradict the version's hash.
  function anchorError(v) {
    var s = str(v.status);
    return s === 'mismatch' || s === 'missing' || s === 'conflict';
  }

  // codeOrDash shows a hash (or any identifier) as code, '—' when absent.
  function codeOrDash(v) {
    return v === null || v === undefined || v === '' ? el('span', { class: 'absent' }, '—') : el('code', null, str(v));
  }

  // packetURLs are the object URLs of the packets on show, revoked when the
  // anchors are shown again.
  var packetURLs = [];

  function revokePackets() {
    packetURLs.forEach(function (u) { try { URL.revokeObjectURL(u); } catch (e) { /* ignore */ } });
    packetURLs = [];
  }

  // packetCell shows a version's verification packet: a download of its
  // JSON (what docs/VERIFY.md's script and `crow verify --packet` take) and
  // the JSON itself, folded.
  function packetCell(project, x) {
    if (x.packet === null || typeof x.packet !== 'object') return el('td', { data: { field: 'packet' } }, el('span', { class: 'absent' }, '—'));
    var json = JSON.stringify(x.packet, null, 2) + '\n';
    var file = 'crow-' + project.replace(/[^A-Za-z0-9_.-]+/g, '-') + '-v' + num(x.version) + '-packet.json';
    var link = el('a', { download: file, data: { field: 'packet_download' } }, 'Download ' + file);
    try {
      var u = URL.createObjectURL(new Blob([json], { type: 'application/json' }));
      packetURLs.push(u);
      link.setAttribute('href', u);
    } catch (e) { link = null; }
    return el('td', { data: { field: 'packet' } },
      el('details', { class: 'packet' },
        el('summary', null, 'packet'),
        link,
        el('pre', { class: 'packet', data: { field: 'packet_json' } }, json)));
  }

  // stateHashCell shows the version's hash as held here and, when home's
  // record (the packet) commits another one, that one too.
  function stateHashCell(x) {
    var rec = x.packet !== null && typeof x.packet === 'object' ? str(x.packet.state_hash) : '';
    var td = el('td', { data: { field: 'state_hash' } }, el('span', { data: { field: 'local_state_hash' } }, codeOrDash(x.state_hash)));
    if (rec && rec !== str(x.state_hash)) {
      td.appendChild(el('br'));
      td.appendChild(el('span', { class: 'muted' }, 'home\'s record commits '));
      td.appendChild(el('code', { data: { field: 'record_state_hash' } }, rec));
    }
    return td;
  }

  // resetVerify empties the anchors view and shows message instead.
  function resetVerify(message) {
    revokePackets();
    ['verify-verdict', 'verify-meta', 'verify-list', 'verify-howto'].forEach(function (id) { $(id).hidden = true; });
    var empty = $('verify-empty');
    empty.textContent = message;
    empty.hidden = !message;
  }

  // verdict sums up a verify answer: { kind: ok | error | info, text }.
  function verdict(d, versions) {
    var project = str(d.project);
    if (versions.length === 0) {
      return { kind: 'info', text: 'Nothing to verify: no state version of ' + project + ' is held here yet.' };
    }
    var counts = {};
    var order = [];
    var bad = 0;
    versions.forEach(function (v) {
      var s = str(v.status) || 'unknown';
      if (!counts[s]) { counts[s] = 0; order.push(s); }
      counts[s]++;
      if (anchorError(v)) bad++;
    });
    var parts = order.map(function (s) { return counts[s] + ' ' + s; }).join(', ');
    var n = versions.length + ' version' + (versions.length === 1 ? '' : 's');
    if (d.verified === true && bad === 0) {
      var text = 'Verified: all ' + n + ' of ' + project + ' are in roots anchored on chain, with matching hashes and proofs.';
      if (counts.included) text += ' ' + counts.included + ' in a block, waiting for confirmations.';
      return { kind: 'ok', text: text };
    }
    if (bad > 0) {
      var which = versions.filter(anchorError).map(function (v) { return num(v.version) + ' (' + str(v.status) + ')'; }).join(', ');
      return { kind: 'error', text: 'NOT verified: the records or the chain contradict version ' + which + ' of ' + project + '. ' + n + ': ' + parts + '.' };
    }
    if (d.chain === null || d.chain === undefined) {
      return { kind: 'info', text: 'Not verified here: this instance reads no chain, so it shows home\'s records (' + n + ' of ' +
        project + ': ' + parts + '). Verify each packet against the chain yourself, or on home.' };
    }
    return { kind: 'info', text: 'Not verified yet: ' + n + ' of ' + project + ': ' + parts + '.' };
  }

  // renderVerify shows an answer of GET /v1/verify/{name}: the verdict, the
  // chain and project id, each version's status, hash, root, transaction and
  // packet, and how to check it independently.
  function renderVerify(d) {
    revokePackets();
    var project = str(d.project);
    var versions = arr(d.versions).map(obj);
    var chain = d.chain === null || d.chain === undefined ? null : obj(d.chain);
    var v = verdict(d, versions);
    var p = $('verify-verdict');
    p.className = 'verdict ' + v.kind;
    p.dataset.verified = d.verified === true ? 'true' : 'false';
    p.textContent = v.text;
    p.hidden = false;

    var dl = $('verify-meta');
    var pairs = [
      ['Project', project, { data: { field: 'project' } }],
      ['Project id (keyed hash, as the chain knows it)', str(d.project_id), { class: 'mono', data: { field: 'project_id' } }]
    ];
    if (chain) {
      pairs.push(['Chain', str(chain.kind) + ' (chain id ' + num(chain.chain_id) + ')', { data: { field: 'chain' } }]);
      pairs.push(['Contract', str(chain.contract), { class: 'mono', data: { field: 'contract' } }]);
    } else {
      pairs.push(['Chain', 'none: this daemon reads no chain, so the statuses come from the home instance\'s replicated records', { data: { field: 'chain' } }]);
    }
    metaList(dl, pairs);
    dl.hidden = false;

    renderRows('verify-list', 'verify-empty', versions.map(function (x) {
      var status = str(x.status) || 'unknown';
      var error = anchorError(x);
      var note = VERIFY_STATUS[status] || '';
      var badge = error ? 'error' : VERIFY_BADGE[status] || 'neutral';
      var root = x.root ? [el('code', { data: { field: 'root_hash' } }, str(x.root))] : [el('span', { class: 'absent' }, '—')];
      if (x.root_id) root.push(' ', el('span', { class: 'muted', data: { field: 'root_id' } }, '#' + num(x.root_id)));
      var anchored = x.anchored_at ? [fmtTime(x.anchored_at)] : [el('span', { class: 'absent' }, '—')];
      if (x.anchored_by) anchored.push(el('br'), el('span', { class: 'muted' }, 'by '), el('code', { data: { field: 'anchored_by' } }, str(x.anchored_by)));
      var tx = x.tx_hash ? [el('code', { data: { field: 'tx_hash' } }, str(x.tx_hash))] : [el('span', { class: 'absent' }, '—')];
      if (x.block_number) tx.push(el('br'), el('span', { class: 'muted', data: { field: 'block_number' } }, 'block ' + num(x.block_number)));
      return el('tr', { class: error ? 'anchor-error' : null, data: { version: String(num(x.version)), status: status } },
        el('td', { data: { field: 'version' } }, String(num(x.version))),
        el('td', { data: { field: 'status' } },
          el('span', { class: 'badge anchor ' + badge }, status),
          note ? el('span', { class: 'muted' }, ' ' + note) : null),
        stateHashCell(x),
        el.apply(null, ['td', { data: { field: 'root' } }].concat(root)),
        el.apply(null, ['td', { data: { field: 'anchored' } }].concat(anchored)),
        el.apply(null, ['td', { data: { field: 'tx' } }].concat(tx)),
        packetCell(project, x));
    }));
    if (versions.length === 0) setText('verify-empty', 'No state version is held here yet.');

    var how = $('verify-howto');
    how.replaceChildren(
      el('strong', null, 'How to check it yourself: '), document.createTextNode(str(d.how_to_verify)),
      el('br'),
      el('span', { data: { field: 'packet_howto' } }, 'Each version\'s packet (the last column) holds all of it: save it and run docs/VERIFY.md\'s script, ' +
        'or `crow verify --packet FILE` (add --rpc URL when the packet has no rpc_url), against any JSON-RPC endpoint of the chain.'));
    how.hidden = !d.how_to_verify;
  }

  // ---- projects -------------------------------------------------------------

  // STATE_LISTS are the lists of a Project State, in the order shown; a list
  // a newer schema adds is shown after them.
  var STATE_LISTS = ['decisions', 'milestones', 'risks', 'assumptions', 'open_questions', 'priorities',
    'constraints', 'vision', 'vocabulary', 'metrics'];

  // Columns of a state table: these first and last, in this order, whatever
  // order the fields arrive in; any other field in between.
  var LEAD_COLS = ['id', 'title', 'term', 'name', 'statement', 'definition', 'value', 'unit', 'target', 'rank',
    'severity', 'status', 'answer', 'superseded_by'];
  var TAIL_COLS = ['evidence_memory_ids', 'evidence_root', 'created_version', 'updated_version'];

  function colRank(c, i) {
    var lead = LEAD_COLS.indexOf(c);
    if (lead >= 0) return lead;
    var tail = TAIL_COLS.indexOf(c);
    return tail >= 0 ? 10000 + tail : 100 + i;
  }

  function humanize(k) {
    k = str(k).replace(/_/g, ' ');
    return k.charAt(0).toUpperCase() + k.slice(1);
  }

  function isHashField(k) {
    return k === 'evidence_root' || /(^|_)hash$/.test(k);
  }

  // cellText is the text of one field of a state item.
  function cellText(k, v) {
    if (v === null || v === undefined || v === '') return '';
    if (k === 'evidence_memory_ids' && Array.isArray(v)) return v.map(function (n) { return '#' + str(n); }).join(', ');
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (Array.isArray(v) && v.every(function (x) { return x === null || typeof x !== 'object'; })) return v.map(str).join(', ');
    if (typeof v === 'object') return canon(v);
    return String(v);
  }

  function cellNode(k, v) {
    var text = cellText(k, v);
    var content;
    if (text === '') content = el('span', { class: 'absent' }, '—');
    else if ((k === 'status' || k === 'severity') && typeof v === 'string') content = el('span', { class: 'badge', data: { value: v } }, text);
    else if (isHashField(k) || k === 'id' || k === 'superseded_by') content = el('code', null, text);
    else content = text;
    return el('td', { data: { field: k } }, content);
  }

  // staleNote is the flag of an item whose evidence was superseded: the
  // state read's stale_evidence entries of the item, [{number,
  // superseded_by}], as "stale evidence: #12 → #57"; null when none.
  function staleNote(refs) {
    refs = arr(refs).filter(isObject);
    if (refs.length === 0) return null;
    return el('div', { class: 'stale', data: { field: 'stale_evidence' } }, 'stale evidence: ' + refs.map(function (r) {
      return '#' + str(r.number) + ' \u2192 #' + str(r.superseded_by);
    }).join(', '));
  }

  // stateTable renders one list of the state as a table of its items'
  // fields (the union of the fields of every item); stale maps an item id to
  // its stale evidence (the state read's stale_evidence, outside the state).
  function stateTable(key, items, stale) {
    var cols = [];
    items.forEach(function (it) {
      if (isObject(it)) Object.keys(it).forEach(function (c) { if (cols.indexOf(c) < 0) cols.push(c); });
    });
    var seen = cols.slice();
    cols.sort(function (a, b) { return colRank(a, seen.indexOf(a)) - colRank(b, seen.indexOf(b)); });
    var head = el('tr');
    (cols.length ? cols : ['value']).forEach(function (c) { head.appendChild(el('th', null, humanize(c))); });
    var body = el('tbody');
    items.forEach(function (it) {
      if (!isObject(it)) {
        body.appendChild(el('tr', null, el('td', { colspan: Math.max(cols.length, 1) }, cellText('', it) || '—')));
        return;
      }
      var note = staleNote(stale[str(it.id)]);
      var tr = el('tr', { data: note ? { id: str(it.id), stale: 'true' } : { id: str(it.id) } });
      cols.forEach(function (c) {
        var td = cellNode(c, it[c]);
        if (note && c === 'evidence_memory_ids') td.appendChild(note);
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    return el('section', { class: 'state-list', data: { list: key } },
      el('h3', null, humanize(key) + ' ', el('span', { class: 'sub' }, '(' + items.length + ')')),
      el('table', { id: 'state-' + key, class: 'list state' }, el('thead', null, head), body));
  }

  function renderState(v) {
    var st = obj(v.state);
    var meta = obj(st.state_meta);
    var until = num(meta.consolidated_until_event);
    var pairs = [
      ['Version', String(num(v.version)), { data: { field: 'version' } }],
      ['State hash', str(v.state_hash), { class: 'mono', data: { field: 'state_hash' } }],
      ['Generated', fmtTime(v.generated_at)],
      ['Schema version', String(num(v.schema_version))],
      ['Phase', str(st.phase) || '(not set)', { data: { field: 'phase' } }],
      ['Current focus', str(st.current_focus) || '(not set)', { data: { field: 'current_focus' } }],
      ['Consolidated until memory', until ? '#' + until : 'none'],
      ['Previous state hash', meta.previous_state_hash ? str(meta.previous_state_hash) : 'none (the first version)', { class: 'mono' }]
    ];
    // Any other field a newer schema adds.
    Object.keys(st).sort().forEach(function (k) {
      if (k === 'phase' || k === 'current_focus' || k === 'state_meta' || Array.isArray(st[k])) return;
      pairs.push([humanize(k), cellText(k, st[k]) || '—', { data: { field: k } }]);
    });
    metaList($('state-meta'), pairs);

    var keys = STATE_LISTS.concat(Object.keys(st).filter(function (k) {
      return Array.isArray(st[k]) && STATE_LISTS.indexOf(k) < 0;
    }).sort());
    var sections = [];
    keys.forEach(function (k) {
      var items = arr(st[k]);
      if (items.length > 0) sections.push(stateTable(k, items, obj(v.stale_evidence)));
    });
    var box = $('state-lists');
    box.replaceChildren.apply(box, sections);
    $('state-lists-empty').hidden = sections.length > 0;
    $('state-missing').hidden = true;
    $('state-view').hidden = false;
  }

  var ps = { items: [], open: '', gen: 0 };

  function projectPath(name) { return '/v1/project/' + encodeURIComponent(name); }
  function verifyPath(name) { return '/v1/verify/' + encodeURIComponent(name); }

  function loadProjects() {
    return api('GET', '/v1/projects').then(function (d) {
      ps.items = arr(d.projects).map(obj);
      renderProjectList();
    }, failed('Could not load the projects'));
  }

  function renderProjectList() {
    renderRows('project-list', 'project-empty', ps.items.map(function (p) {
      var name = str(p.name);
      var open = el('button', { type: 'button', class: 'small', data: { open: name } }, 'Open');
      open.addEventListener('click', function () { openProject(name); });
      var v = num(p.state_version);
      return el('tr', { data: { name: name }, class: ps.open === name ? 'selected' : null },
        el('td', null, name),
        el('td', null, str(p.description) || el('span', { class: 'absent' }, '—')),
        el('td', null, String(num(p.memories))),
        el('td', { data: { field: 'state_version' } }, v ? String(v) : 'none yet'),
        el('td', { title: str(p.state_hash) }, p.state_hash ? el('code', null, short(p.state_hash)) : el('span', { class: 'absent' }, '—')),
        el('td', null, open));
    }));
  }

  function openProject(name) {
    var gen = ++ps.gen;
    ps.open = name;
    renderProjectList();
    clearStatus();
    setText('project-title', 'Project ' + name);
    $('project-verify-link').setAttribute('href', '/ui/verify?project=' + encodeURIComponent(name));
    $('state-view').hidden = true;
    var missing = $('state-missing');
    missing.hidden = false;
    missing.className = 'muted';
    missing.textContent = 'Loading the state…';
    resetVerify('Reading the anchors…');
    $('project-detail').hidden = false;
    try { history.replaceState(null, '', '/ui/projects?name=' + encodeURIComponent(name)); } catch (e) { /* ignore */ }

    api('GET', projectPath(name) + '/state').then(function (v) {
      if (gen === ps.gen) renderState(obj(v));
    }, function (err) {
      if (gen !== ps.gen || err.auth) return;
      // 404: the project has no state version yet; the server says so.
      missing.className = err.status === 404 ? 'note' : 'note error';
      missing.textContent = err.status === 404 ? err.message : 'Could not load the state: ' + err.message;
    });
    // The anchors come from the public endpoint, without the key.
    publicGet(verifyPath(name)).then(function (d) {
      if (gen === ps.gen) renderVerify(obj(d));
    }, function (err) {
      if (gen === ps.gen) resetVerify((err.status === 404 ? '' : 'Could not read the anchors: ') + err.message);
    });
  }

  function closeProject() {
    ps.gen++;
    ps.open = '';
    $('project-detail').hidden = true;
    try { history.replaceState(null, '', '/ui/projects'); } catch (e) { /* ignore */ }
    renderProjectList();
  }

  var projectsPage = {
    init: function () {
      $('projects-refresh').addEventListener('click', function () {
        clearStatus();
        loadProjects();
        if (ps.open) openProject(ps.open);
      });
      $('close-project').addEventListener('click', closeProject);
    },
    load: function () {
      loadProjects();
      var name = new URLSearchParams(location.search).get('name');
      if (name) openProject(name);
    }
  };

  // ---- memories (and forgetting one, SPEC §10) ------------------------------

  // ms is the memories page: the rows shown, the list's cursor ('' when
  // there is no more or a search is shown), the search shown ('' for the
  // newest), the memory the forget dialog is about, and whether a forget is
  // in flight.
  var ms = { items: [], cursor: '', query: '', gen: 0, target: null, busy: false };

  function memoryPath(id) { return '/v1/memory/' + encodeURIComponent(id); }

  function numberText(m) {
    return m.number === null || m.number === undefined ? '' : '#' + str(m.number);
  }

  // loadMemories reads the newest memories (append: the next page) or, with
  // a query, the best matches of a search.
  function loadMemories(append) {
    var gen = ++ms.gen;
    var q = new URLSearchParams();
    var path;
    if (ms.query) {
      q.set('q', ms.query);
      q.set('limit', String(PAGE_SIZE));
      path = '/v1/memories/search?' + q.toString();
    } else {
      q.set('limit', String(PAGE_SIZE));
      if (append && ms.cursor) q.set('cursor', ms.cursor);
      path = '/v1/memories/list?' + q.toString();
    }
    return api('GET', path).then(function (d) {
      if (gen !== ms.gen) return; // a newer load won
      var list = arr(ms.query ? d.results : d.memories).map(obj);
      ms.items = append ? ms.items.concat(list) : list;
      ms.cursor = !ms.query && typeof d.next_cursor === 'string' ? d.next_cursor : '';
      renderMemories();
    }, failed(ms.query ? 'Could not search the memories' : 'Could not load the memories'));
  }

  function renderMemories() {
    renderRows('memory-list', 'memory-empty', ms.items.map(function (m) {
      var id = str(m.id);
      var forget = el('button', { type: 'button', class: 'small danger', data: { forget: id } }, 'Forget…');
      forget.addEventListener('click', function () { openForget(m); });
      var n = numberText(m);
      return el('tr', { data: { id: id } },
        el('td', { data: { field: 'number' }, title: id }, n || el('span', { class: 'absent', title: 'home has not numbered it yet' }, 'not numbered yet')),
        el('td', { data: { field: 'project' } }, str(m.project)),
        el('td', { class: 'memory-content', data: { field: 'content' } }, str(m.content)),
        el('td', { data: { field: 'created_at' }, title: str(m.created_at) }, fmtTime(m.created_at)),
        el('td', null, forget));
    }));
    setText('memory-empty', ms.query ? 'No memory matches ' + ms.query + '.' : 'No memories.');
    $('memory-more').hidden = !ms.cursor;
    var n = ms.items.length;
    setText('memory-summary', ms.query ?
      n + ' best match' + (n === 1 ? '' : 'es') + ' for ' + ms.query + '.' :
      n + ' newest memor' + (n === 1 ? 'y' : 'ies') + (ms.cursor ? ' (more below)' : '') + '.');
  }

  function showMemories(query) {
    ms.query = query;
    $('memory-query').value = query;
    try { history.replaceState(null, '', '/ui/memories' + (query ? '?q=' + encodeURIComponent(query) : '')); } catch (e) { /* ignore */ }
    clearStatus();
    loadMemories(false);
  }

  // openForget asks, in a modal dialog, whether to forget memory m.
  function openForget(m) {
    ms.target = m;
    var n = numberText(m);
    setText('memory-forget-target', (n ? 'Memory ' + n + ' ' : 'Memory ') + '(id ' + str(m.id) + ', project ' + str(m.project) + ')');
    var e = $('memory-forget-error');
    e.textContent = '';
    e.hidden = true;
    $('memory-forget-confirm').disabled = false;
    $('memory-forget-cancel').disabled = false;
    var dlg = $('memory-forget-dialog');
    if (typeof dlg.showModal === 'function') dlg.showModal();
    else dlg.setAttribute('open', '');
    $('memory-forget-cancel').focus(); // the safe choice has the focus
  }

  function closeForget() {
    if (ms.busy) return;
    ms.target = null;
    var dlg = $('memory-forget-dialog');
    if (typeof dlg.close === 'function') dlg.close();
    else dlg.removeAttribute('open');
  }

  // confirmForget sends the forget of the dialog's memory: on success the
  // answer is shown and the memory leaves the list; on an error the
  // server's text is shown in the dialog.
  function confirmForget() {
    var m = ms.target;
    if (!m || ms.busy) return;
    var id = str(m.id);
    ms.busy = true;
    $('memory-forget-confirm').disabled = true;
    $('memory-forget-cancel').disabled = true;
    api('POST', memoryPath(id) + '/forget').then(function (d) {
      ms.busy = false;
      closeForget();
      var numbers = arr(d.numbers).map(function (x) { return '#' + str(x); }).join(', ');
      metaList($('memory-forgotten-meta'), [
        ['Memory id', str(d.id) || id, { class: 'mono', data: { field: 'id' } }],
        ['Numbers', numbers || 'none (home had not numbered it)', { data: { field: 'numbers' } }],
        ['Forgotten at', str(d.forgotten_at), { data: { field: 'forgotten_at' } }]
      ]);
      $('memory-forgotten').hidden = false;
      ms.items = ms.items.filter(function (x) { return str(x.id) !== id; });
      renderMemories();
      showStatus('ok', 'Forgot memory ' + id + (numbers ? ' (' + numbers + ')' : '') + ' at ' + str(d.forgotten_at) +
        '. Every instance erases its content as the forget replicates.');
    }, function (err) {
      ms.busy = false;
      if (err.auth) {
        closeForget();
        return;
      }
      $('memory-forget-confirm').disabled = false;
      $('memory-forget-cancel').disabled = false;
      var e = $('memory-forget-error');
      e.textContent = 'Could not forget the memory: ' + err.message;
      e.hidden = false;
      failed('Could not forget memory ' + id)(err);
    });
  }

  var memoriesPage = {
    init: function () {
      $('memory-search').addEventListener('submit', function (ev) {
        ev.preventDefault();
        showMemories($('memory-query').value.trim());
      });
      $('memory-recent').addEventListener('click', function () { showMemories(''); });
      $('memory-more').addEventListener('click', function () { loadMemories(true); });
      $('memory-forget-cancel').addEventListener('click', closeForget);
      $('memory-forget-confirm').addEventListener('click', confirmForget);
      // Escape closes the dialog as Cancel does (not while a forget is sent).
      $('memory-forget-dialog').addEventListener('cancel', function (ev) {
        if (ms.busy) ev.preventDefault();
        else ms.target = null;
      });
    },
    load: function () {
      var q = (new URLSearchParams(location.search).get('q') || '').trim();
      ms.query = q;
      $('memory-query').value = q;
      loadMemories(false);
    }
  };

  // ---- verify (public) ------------------------------------------------------

  var vs = { gen: 0 };

  function runVerify(name) {
    var gen = ++vs.gen;
    clearStatus();
    setText('verify-title', 'Project ' + name);
    resetVerify('Reading the chain…');
    $('verify-result').hidden = false;
    $('verify-submit').disabled = true;
    publicGet(verifyPath(name)).then(function (d) {
      if (gen === vs.gen) renderVerify(obj(d));
    }, function (err) {
      if (gen !== vs.gen) return;
      $('verify-result').hidden = true;
      showStatus('error', 'Could not verify ' + name + ': ' + err.message);
    }).then(function () {
      if (gen === vs.gen) $('verify-submit').disabled = false;
    });
  }

  var verifyPage = {
    public: true,
    init: function () {
      $('verify-form').addEventListener('submit', function (ev) {
        ev.preventDefault();
        var name = $('verify-name').value.trim();
        if (!name) return;
        try { history.replaceState(null, '', '/ui/verify?project=' + encodeURIComponent(name)); } catch (e) { /* ignore */ }
        runVerify(name);
      });
    },
    load: function () {
      var name = (new URLSearchParams(location.search).get('project') || '').trim();
      $('verify-name').value = name;
      if (name) runVerify(name);
      else $('verify-name').focus();
    }
  };

  var pages = {
    overview: overview,
    projects: projectsPage,
    memories: memoriesPage,
    conflicts: conflictsPage,
    instances: instancesPage,
    notifications: notificationsPage,
    verify: verifyPage
  };

  function boot() {
    $('forget-key').addEventListener('click', function () {
      clearKey();
      showLogin('The key is forgotten in this tab.');
    });
    start();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})();
