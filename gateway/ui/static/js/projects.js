// The projects page: each project's newest Project State and the anchors of its versions.
import { api, publicGet, failed, boot } from './api.js';
import { $, el, str, obj, arr, num, fmtTime, metaList, renderRows, setText, clearStatus, isObject, canon, short } from './dom.js';
import { resetVerify, renderVerify, verifyPath } from './anchors.js';

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

boot(Object.assign({ name: 'projects' }, projectsPage));
