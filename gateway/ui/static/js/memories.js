// The memories page: the newest memories or a search, filtered by project,
// a page at a time; a memory's detail (its numbers, versions, anchor status
// and proof); forgetting one everywhere (SPEC §10).
import { api, failed, boot } from './api.js';
import { $, el, str, obj, arr, num, fmtTime, metaList, renderRows, setText, showStatus, clearStatus, plural, replaceState,
  codeOrDash, PAGE_SIZE } from './dom.js';
import { renderProof, resetProof } from './proof.js';

// ms is the memories page: the rows shown, the list's cursor ('' when
// there is no more or a search is shown), the search shown ('' for the
// newest), the memory the forget dialog is about, and whether a forget is
// in flight.
var ms = { items: [], cursor: '', query: '', project: '', gen: 0, target: null, busy: false, open: '', detailGen: 0 };

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
  if (ms.project) q.set('project', ms.project);
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
    var open = el('button', { type: 'button', class: 'small', data: { open: id } }, 'Open');
    open.addEventListener('click', function () { openMemory(id); });
    var n = numberText(m);
    return el('tr', { data: { id: id }, class: ms.open === id ? 'selected' : null },
      el('td', { data: { field: 'number' }, title: id }, n || el('span', { class: 'absent', title: 'home has not numbered it yet' }, 'not numbered yet')),
      el('td', { data: { field: 'project' } }, str(m.project)),
      el('td', { class: 'memory-content', data: { field: 'content' } }, str(m.content)),
      el('td', { data: { field: 'created_at' }, title: str(m.created_at) }, fmtTime(m.created_at)),
      el('td', { class: 'row-actions' }, open, ' ', forget));
  }));
  var inProject = ms.project ? ' in project ' + ms.project : '';
  setText('memory-empty', ms.query ? 'No memory matches ' + ms.query + inProject + '.' : 'No memories' + inProject + '.');
  $('memory-more').hidden = !ms.cursor;
  var n = ms.items.length;
  setText('memory-summary', ms.query ?
    plural(n, 'best match', 'best matches') + ' for ' + ms.query + inProject + '.' :
    (n === 1 ? 'The newest memory' : 'The ' + plural(n, 'newest memory', 'newest memories')) + inProject + (ms.cursor ? ' (more below)' : '') + '.');
}

function address() {
  var q = new URLSearchParams();
  if (ms.query) q.set('q', ms.query);
  if (ms.project) q.set('project', ms.project);
  if (ms.open) q.set('id', ms.open);
  var s = q.toString();
  replaceState('/ui/memories' + (s ? '?' + s : ''));
}

function showMemories(query) {
  ms.query = query;
  $('memory-query').value = query;
  address();
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
    if (ms.open === id) openMemory(id);
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
    $('memory-project').addEventListener('change', function (ev) {
      ms.project = ev.target.value;
      showMemories($('memory-query').value.trim());
    });
    $('close-memory').addEventListener('click', closeMemory);
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
    var params = new URLSearchParams(location.search);
    var q = (params.get('q') || '').trim();
    ms.query = q;
    ms.project = params.get('project') || '';
    $('memory-query').value = q;
    loadProjects();
    loadMemories(false);
    var id = params.get('id');
    if (id) openMemory(id);
  }
};

// loadProjects fills the project filter from GET /v1/projects.
function loadProjects() {
  return api('GET', '/v1/projects').then(function (d) {
    var sel = $('memory-project');
    var names = arr(d.projects).map(function (p) { return str(obj(p).name); }).filter(Boolean);
    if (ms.project && names.indexOf(ms.project) < 0) names.push(ms.project);
    sel.replaceChildren.apply(sel, [el('option', { value: '' }, 'All projects')].concat(names.map(function (n) {
      return el('option', { value: n }, n);
    })));
    sel.value = ms.project;
  }, failed('Could not load the projects'));
}

// MAX_VERSIONS bounds how many versions of a memory the detail walks.
var MAX_VERSIONS = 50;

// openMemory shows memory id: its fields, every numbered version (walked
// from the newest number by supersedes) and the proof of one version.
function openMemory(id) {
  var gen = ++ms.detailGen;
  ms.open = id;
  address();
  renderMemories();
  clearStatus();
  $('memory-detail').hidden = false;
  setText('memory-detail-title', 'Memory ' + id);
  $('memory-detail-meta').replaceChildren();
  renderRows('memory-versions', 'memory-versions-empty', []);
  setText('memory-versions-empty', 'Reading the versions…');
  resetProof('');
  api('GET', memoryPath(id)).then(function (m) {
    if (gen !== ms.detailGen) return;
    m = obj(m);
    var n = numberText(m);
    setText('memory-detail-title', 'Memory ' + (n || id));
    var tags = arr(m.tags);
    metaList($('memory-detail-meta'), [
      ['Id', str(m.id), { class: 'mono', data: { field: 'id' } }],
      ['Number', n ? n + ' (its newest version)' : 'not numbered yet: home numbers every version as it arrives', { data: { field: 'number' } }],
      ['Project', str(m.project), { data: { field: 'project' } }],
      ['Content', str(m.content), { class: 'memory-content', data: { field: 'content' } }],
      ['Category', str(m.category), { data: { field: 'category' } }],
      ['Importance', String(num(m.importance)), { data: { field: 'importance' } }],
      ['Tags', tags.length ? el('span', null, tags.map(function (t) { return el('span', { class: 'chip kept' }, str(t)); })) : el('span', { class: 'absent' }, 'none'), { data: { field: 'tags' } }],
      ['Source', str(m.source) || '—'],
      ['Created', fmtTime(m.created_at), { title: str(m.created_at) }],
      ['Updated', fmtTime(m.updated_at), { title: str(m.updated_at) }],
      ['Event hash', codeOrDash(m.event_hash), { data: { field: 'event_hash' } }]
    ]);
    $('memory-verify-link').setAttribute('href', '/ui/verify?project=' + encodeURIComponent(str(m.project)));
    setText('memory-verify-link', 'Verify project ' + str(m.project) + '’s state on chain');
    if (m.number === null || m.number === undefined) {
      setText('memory-versions-empty', 'No numbered version yet: home numbers a version when it receives it.');
      resetProof('No proof yet: only a numbered version can be anchored.');
      return;
    }
    return loadVersions(gen, num(m.number));
  }, function (err) {
    if (gen !== ms.detailGen || err.auth) return;
    setText('memory-versions-empty', '');
    $('memory-detail-meta').replaceChildren(el('dt', null, 'Not found'), el('dd', { data: { field: 'error' } }, err.message));
    resetProof('');
  });
}

// loadVersions walks the versions of a memory from its newest number down
// by supersedes, then shows the proof of the newest.
function loadVersions(gen, newest) {
  var versions = [];
  function step(n) {
    return api('GET', memoryPath(String(n))).then(function (v) {
      if (gen !== ms.detailGen) return;
      v = obj(v);
      versions.push(v);
      if (v.supersedes && versions.length < MAX_VERSIONS) return step(num(v.supersedes));
    });
  }
  return step(newest).then(function () {
    if (gen !== ms.detailGen) return;
    renderVersions(versions, newest);
    showProof(gen, newest);
  }, function (err) {
    if (gen !== ms.detailGen || err.auth) return;
    renderVersions(versions, newest);
    setText('memory-versions-empty', 'Could not read every version: ' + err.message);
    $('memory-versions-empty').hidden = false;
  });
}

function renderVersions(versions, shown) {
  renderRows('memory-versions', 'memory-versions-empty', versions.map(function (v) {
    var n = num(v.number);
    var prove = el('button', { type: 'button', class: 'small secondary', data: { prove: String(n) } }, 'Proof');
    prove.addEventListener('click', function () {
      renderVersions(versions, n);
      showProof(ms.detailGen, n);
    });
    return el('tr', { data: { number: String(n) }, class: n === shown ? 'selected' : null },
      el('td', { data: { field: 'number' } }, '#' + n),
      el('td', { class: 'memory-content', data: { field: 'content' } }, v.forgotten_at ? el('span', { class: 'absent' }, 'forgotten at ' + str(v.forgotten_at)) : str(v.content)),
      el('td', { data: { field: 'updated_at' }, title: str(v.updated_at) }, fmtTime(v.updated_at)),
      el('td', { data: { field: 'superseded_by' } }, v.superseded_by ? 'by #' + num(v.superseded_by) : 'the newest'),
      el('td', null, prove));
  }));
  setText('memory-versions-summary', plural(versions.length, 'numbered version') + ', newest first.');
}

function showProof(gen, n) {
  resetProof('Proving #' + n + '…');
  api('GET', memoryPath(String(n)) + '/proof').then(function (p) {
    if (gen === ms.detailGen) renderProof(obj(p));
  }, function (err) {
    if (gen === ms.detailGen && !err.auth) resetProof('Could not prove #' + n + ': ' + err.message);
  });
}

function closeMemory() {
  ms.detailGen++;
  ms.open = '';
  $('memory-detail').hidden = true;
  address();
  renderMemories();
}

boot(Object.assign({ name: 'memories' }, memoriesPage));
