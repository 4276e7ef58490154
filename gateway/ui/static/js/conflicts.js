// The sync conflict recovery view (SPEC §6): the conflicts, newest first,
// with the instances named; a conflict's two versions side by side with a
// human diff (text as words, lists as sets, the raw JSON behind a toggle)
// and the live row as it is now; keep, restore and resolve all, each
// confirmed with what it will do, and the conflict and the live row read
// again after each.
import { api, failed, boot } from './api.js';
import { $, el, str, obj, arr, num, fmtTime, metaList, setText, showStatus, clearStatus, isObject, canon, pretty,
  plural, confirmAction, replaceState, PAGE_SIZE } from './dom.js';
import { fields, words, sets, sameData } from './diff.js';

const OP_TEXT = {
  update: 'update: both instances edited the row',
  'delete': 'delete: one instance deleted the row while the other edited it',
  insert: 'insert collision: both instances created a row with this id independently'
};

const RESOLUTION_TEXT = { keep: 'kept current', restore: 'restored' };

const cs = {
  unresolvedOnly: true,
  table: '',
  cursor: '',
  items: [],
  gen: 0,
  open: null, // the conflict shown in the detail
  want: '', // the id of the conflict to show (the last opened)
  live: null, // its row as it is now: {state: 'loading'|'row'|'gone'|'error', row, error}
  busy: false,
  names: {} // instance id -> name
};

// name is the instance's name, or its id when the registry has no name.
function name(id) {
  id = str(id);
  return cs.names[id] || id || '—';
}

// instanceNode shows an instance by name, its id on hover.
function instanceNode(id, field) {
  return el('span', { class: cs.names[str(id)] ? 'instance' : 'instance mono', title: str(id), data: field ? { field } : null }, name(id));
}

function stateText(c) {
  if (!c.resolved) return 'unresolved';
  const r = RESOLUTION_TEXT[str(c.resolution)];
  return 'resolved' + (r ? ' · ' + r : '');
}

// restoreBlock says why restore is not offered for c ('' when it is).
function restoreBlock(c) {
  if (c.op === 'insert') {
    return 'Restore is not available for an insert collision: both instances created this row independently, so there is no earlier version to go back to. Both versions are shown below; copy what you need into the row by hand, then choose "Keep current".';
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

function rowPath(c) {
  return '/v1/tables/' + encodeURIComponent(str(c.table_name)) + '/rows/' + encodeURIComponent(str(c.row_id)) + '?deleted=true';
}

function listQuery(cursor) {
  const q = new URLSearchParams();
  q.set('unresolved', cs.unresolvedOnly ? 'true' : 'false');
  if (cs.table) q.set('table', cs.table);
  q.set('limit', String(PAGE_SIZE));
  if (cursor) q.set('cursor', cursor);
  return '/v1/sync/conflicts?' + q.toString();
}

async function loadConflicts(append) {
  const gen = ++cs.gen;
  try {
    const d = await api('GET', listQuery(append ? cs.cursor : ''));
    if (gen !== cs.gen) return; // a newer load (filter change) won
    const list = arr(d.conflicts).map(obj);
    cs.items = append ? cs.items.concat(list) : list;
    cs.cursor = typeof d.next_cursor === 'string' ? d.next_cursor : '';
    renderConflictList();
  } catch (err) {
    failed('Could not load the conflicts')(err);
  }
}

function renderConflictList() {
  const tbody = $('conflict-list').querySelector('tbody');
  const rows = cs.items.map(c => {
    const open = el('button', { type: 'button', class: 'small', data: { open: str(c.id) } }, 'Open');
    open.addEventListener('click', () => openConflict(str(c.id)));
    return el('tr', { data: { id: str(c.id) }, class: cs.open && cs.open.id === c.id ? 'selected' : null },
      el('td', { title: str(c.created_at) }, fmtTime(c.created_at)),
      el('td', null, str(c.table_name)),
      el('td', null, el('code', null, str(c.row_id))),
      el('td', null, str(c.op)),
      el('td', { data: { field: 'instances' } },
        instanceNode(c.winning_instance_id, 'winning'), ' @' + num(c.winning_lamport_ts) + ' vs ',
        instanceNode(c.losing_instance_id, 'losing'), ' @' + num(c.losing_lamport_ts)),
      el('td', null, el('span', { class: 'badge ' + (c.resolved ? 'resolved' : 'unresolved') }, stateText(c))),
      el('td', null, open));
  });
  tbody.replaceChildren(...rows);
  const empty = $('conflict-empty');
  empty.textContent = (cs.unresolvedOnly ? 'No unresolved conflicts' : 'No conflicts') +
    (cs.table ? ' in table ' + cs.table : '') + '.';
  empty.hidden = rows.length > 0;
  $('conflict-list').hidden = rows.length === 0;
  $('conflict-more').hidden = !cs.cursor;
  const unresolved = cs.items.filter(c => !c.resolved).length;
  $('resolve-all').disabled = cs.busy || unresolved === 0;
}

// reread reads the conflict id and its live row again and shows both.
async function reread(id) {
  const c = obj(await api('GET', conflictPath(id)));
  let live;
  try {
    live = { state: 'row', row: obj(await api('GET', rowPath(c))) };
  } catch (err) {
    if (err.auth) throw err;
    live = err.status === 404 ? { state: 'gone' } : { state: 'error', error: err.message };
  }
  if (cs.want === id) { // not another conflict opened meanwhile
    cs.live = live;
    renderDetail(c);
  }
  return c;
}

async function openConflict(id) {
  cs.want = id;
  try {
    cs.live = { state: 'loading' };
    await reread(id);
    replaceState('/ui/conflicts?id=' + encodeURIComponent(id));
    $('detail').scrollIntoView({ block: 'start' });
  } catch (err) {
    failed('Could not open the conflict')(err);
  }
}

function closeDetail() {
  cs.open = null;
  cs.want = '';
  cs.live = null;
  $('detail').hidden = true;
  replaceState('/ui/conflicts');
  renderConflictList();
}

// liveSide says which version the live row holds now: 'winning',
// 'losing', 'deleted' (a tombstone neither version is), 'other' (edited
// since), 'gone' (no row) or '' (not known).
function liveSide(c, live) {
  if (!live || live.state !== 'row') return live && live.state === 'gone' ? 'gone' : '';
  const row = live.row;
  let data = row.data;
  if (row.deleted) {
    if (c.winning_deleted) return 'winning';
    if (c.losing_deleted) return 'losing';
    return 'deleted';
  }
  if (!c.winning_deleted && sameData(data, c.winning_data)) return 'winning';
  if (!c.losing_deleted && sameData(data, c.losing_data)) return 'losing';
  return 'other';
}

const LIVE_TEXT = {
  winning: 'the current version (as below)',
  losing: 'the overwritten version (it was restored)',
  deleted: 'deleted since',
  gone: 'no such row here',
  other: 'changed since the conflict: neither version below'
};

function liveText(c, side, live) {
  if (!live || live.state === 'loading') return 'reading…';
  if (live.state === 'error') return 'could not be read: ' + live.error;
  let t = LIVE_TEXT[side] || '—';
  if (live.state === 'row') {
    const r = live.row;
    t += ' · written by ' + name(r.instance_id) + ' at Lamport ' + num(r.lamport_ts) + (r.deleted ? ' (a tombstone)' : '');
  }
  return t;
}

function renderVersion(id, c, side, live) {
  const art = $(id);
  const deleted = !!c[side + '_deleted'];
  art.classList.toggle('deleted', deleted);
  art.classList.toggle('live', live === side);
  const inst = str(c[side + '_instance_id']);
  metaList(art.querySelector('dl'), [
    ['Instance', instanceNode(inst, 'instance')],
    ['Instance id', inst, { class: 'mono', data: { field: 'instance_id' } }],
    ['Lamport', String(num(c[side + '_lamport_ts'])), { data: { field: 'lamport' } }],
    ['Deleted', deleted ? 'yes (a tombstone)' : 'no', { data: { field: 'deleted' } }],
    ['Version vector', canon(obj(c[side + '_vv'])), { class: 'mono' }]
  ]);
  const sub = art.querySelector('h3 .sub');
  let role = side === 'winning' ? 'winning' : 'losing';
  if (live === side) role += side === 'winning' ? ', live now' : ', restored: live now';
  else if (side === 'winning' && live) role += ', no longer live';
  sub.textContent = '(' + role + ')';
  sub.dataset.live = live === side ? 'true' : 'false';
  art.querySelector('pre').textContent = pretty(c[side + '_data']);
}

const CHANGE_TEXT = {
  changed: 'changed',
  added: 'only in overwritten',
  removed: 'only in current',
  same: 'same'
};

function absent() { return el('span', { class: 'absent' }, '(absent)'); }

function valueText(v) {
  if (v === undefined) return null;
  if (typeof v === 'string') return v === '' ? '""' : v;
  return canon(v);
}

// humanCell shows a field's change from current to overwritten.
function humanCell(r) {
  if (r.change === 'same') {
    const t = valueText(r.from);
    return el('td', { class: 'human' }, el('span', { class: 'same-value' }, t === null ? '' : t));
  }
  if (r.kind === 'text' && r.change === 'changed') {
    return el('td', { class: 'human text-diff' }, words(r.from, r.to).map(p =>
      p.op === 'same' ? document.createTextNode(p.text) : el(p.op, { class: 'w-' + p.op }, p.text)));
  }
  if (r.kind === 'set') {
    const s = sets(Array.isArray(r.from) ? r.from : [], Array.isArray(r.to) ? r.to : []);
    const chip = (cls, v, sign) => el('span', { class: 'chip ' + cls, data: { tag: v } }, sign + v.replace(/^"(.*)"$/, '$1'));
    return el('td', { class: 'human set-diff' },
      s.removed.map(v => chip('removed', v, '− ')), s.added.map(v => chip('added', v, '+ ')), s.kept.map(v => chip('kept', v, '')),
      s.removed.length + s.added.length === 0 ? el('span', { class: 'muted' }, ' (same set, other order)') : null);
  }
  const from = valueText(r.from), to = valueText(r.to);
  return el('td', { class: 'human' },
    from === null ? absent() : el('del', { class: 'w-del' }, from), ' → ', to === null ? absent() : el('ins', { class: 'w-ins' }, to));
}

function renderDiff(c) {
  const rows = fields(c.winning_data, c.losing_data);
  const counts = { changed: 0, added: 0, removed: 0, same: 0 };
  const trs = rows.map(r => {
    counts[r.change]++;
    return el('tr', { class: 'diff-' + r.change, data: { field: r.field, change: r.change, kind: r.kind } },
      el('th', { scope: 'row' }, r.field),
      humanCell(r),
      el('td', null, CHANGE_TEXT[r.change]));
  });
  $('diff').querySelector('tbody').replaceChildren(...trs);
  const differ = counts.changed + counts.added + counts.removed;
  setText('diff-summary', (differ === 0 ? 'The data of the two versions is the same' :
    plural(differ, 'field differs', 'fields differ') + ': ' + counts.changed + ' changed, ' +
    counts.added + ' only in overwritten, ' + counts.removed + ' only in current') +
    '; ' + counts.same + ' unchanged. Removed text is struck through, added text underlined: what a restore would change.');
}

function updateButtons() {
  const c = cs.open;
  if (!c) return;
  const block = restoreBlock(c);
  const keep = $('keep');
  const restore = $('restore');
  keep.disabled = cs.busy || !!c.resolved;
  restore.disabled = cs.busy || !!c.resolved || !!block;
  keep.title = c.resolved ? 'Already resolved' : 'Keep the live version and mark the conflict resolved';
  restore.title = block || (c.resolved ? 'Already resolved' : 'Write the overwritten version back as a new edit');
  const note = $('restore-note');
  note.textContent = block;
  note.hidden = !block;
}

function renderDetail(c) {
  cs.open = c;
  const side = liveSide(c, cs.live);
  setText('detail-title', 'Conflict on ' + str(c.table_name) + ' / ' + str(c.row_id));
  metaList($('detail-meta'), [
    ['Conflict id', str(c.id), { class: 'mono' }],
    ['Table', str(c.table_name)],
    ['Row id', str(c.row_id), { class: 'mono' }],
    ['Kind', OP_TEXT[str(c.op)] || str(c.op), { data: { field: 'op' } }],
    ['Between', el('span', null, instanceNode(c.winning_instance_id), ' (current) and ', instanceNode(c.losing_instance_id), ' (overwritten)'), { data: { field: 'between' } }],
    ['Recorded', fmtTime(c.created_at)],
    ['State', stateText(c) + (c.resolved && c.resolved_at ? ' at ' + fmtTime(c.resolved_at) : ''), { data: { field: 'state' } }],
    ['Live row now', liveText(c, side, cs.live), { data: { field: 'live', side } }]
  ]);
  renderVersion('version-current', c, 'winning', side);
  renderVersion('version-overwritten', c, 'losing', side);
  renderDiff(c);
  updateButtons();
  $('detail').hidden = false;
  renderConflictList();
}

function setBusy(b) {
  cs.busy = b;
  updateButtons();
  renderConflictList();
}

// changedFields names the fields a restore would change.
function changedFields(c) {
  return fields(c.winning_data, c.losing_data).filter(r => r.change !== 'same').map(r => r.field);
}

// effect is what the confirmation says keep or restore will do.
function effect(action, c) {
  const what = str(c.table_name) + ' / ' + str(c.row_id);
  const cur = name(c.winning_instance_id), over = name(c.losing_instance_id);
  if (action === 'keep') {
    return {
      title: 'Keep the current version of ' + what + '?',
      lines: [
        (c.winning_deleted ? 'The row stays deleted (the deletion from ' + cur + ' stays live).' :
          'The current version from ' + cur + ' (Lamport ' + num(c.winning_lamport_ts) + ') stays live; nothing is written to the row.'),
        'The overwritten version from ' + over + ' is not brought back. The conflict is marked resolved on every instance; it stays listed under "Show: All".'
      ],
      ok: 'Keep current'
    };
  }
  const changed = changedFields(c);
  let lines;
  if (c.losing_deleted) {
    lines = ['Restoring DELETES the row ' + what + ' on every instance: the overwritten version is the deletion made on ' + over + '.',
      'The current version from ' + cur + ' is replaced by a tombstone (a new delete that syncs everywhere).'];
  } else if (c.winning_deleted) {
    lines = ['Restoring brings the deleted row ' + what + ' back: the version edited on ' + over + ' (Lamport ' + num(c.losing_lamport_ts) + ') becomes live on every instance.'];
  } else {
    lines = ['The overwritten version from ' + over + ' (Lamport ' + num(c.losing_lamport_ts) + ') becomes the live version of ' + what + ' on every instance, as a new edit; the current version from ' + cur + ' is replaced.',
      changed.length ? 'Fields that change: ' + changed.join(', ') + '.' : 'The data of the two versions is the same.'];
  }
  lines.push('The conflict is marked resolved on every instance.');
  return { title: c.losing_deleted ? 'Delete ' + what + ' by restoring?' : 'Restore the overwritten version of ' + what + '?', lines, ok: c.losing_deleted ? 'Restore (delete the row)' : 'Restore', danger: true };
}

async function act(action) {
  const c = cs.open;
  if (!c || cs.busy) return;
  const what = str(c.table_name) + ' / ' + str(c.row_id);
  const e = effect(action, c);
  if (!await confirmAction(e.title, e.lines, e.ok, e.danger)) return;
  setBusy(true);
  try {
    await api('POST', conflictPath(str(c.id), action));
    showStatus('ok', action === 'keep' ?
      'Kept the current version of ' + what + '; the conflict is resolved.' :
      (c.losing_deleted ? 'Restored the overwritten version of ' + what + ': the row is deleted on every instance as the delete syncs; the conflict is resolved.' :
        'Restored the overwritten version of ' + what + '. It is a new edit and syncs to every instance; the conflict is resolved.'));
  } catch (err) {
    if (err.auth) { setBusy(false); return; }
    showStatus('error', (action === 'keep' ? 'Keep current' : 'Restore') + ' refused for ' + what + ': ' + err.message);
  }
  // The live state, whatever happened: the record may have been resolved
  // elsewhere meanwhile, and the row is what the action made it.
  try { await reread(str(c.id)); } catch (err) { /* the status already says what failed */ }
  setBusy(false);
  await loadConflicts(false);
}

async function resolveAll() {
  if (cs.busy) return;
  const n = cs.items.filter(c => !c.resolved).length;
  const scope = cs.table ? 'in table ' + cs.table : 'in all tables';
  const count = (cs.unresolvedOnly && cs.cursor ? 'at least ' : '') + plural(n, 'unresolved conflict');
  const ok = await confirmAction('Resolve ' + count + '?', [
    'Resolve all: ' + count + ' ' + scope + ' (the ' + (n === 1 ? 'one' : 'ones') + ' listed' + (cs.cursor ? ' and more not loaded yet' : '') + ') will be resolved by keeping ' + (n === 1 ? 'its current version.' : 'their current versions.'),
    'No row is written: the overwritten versions are not brought back. They stay listed under "Show: All".'
  ], 'Resolve ' + (cs.cursor ? 'all' : plural(n, 'conflict')), true);
  if (!ok) return;
  setBusy(true);
  try {
    const d = await api('POST', '/v1/sync/conflicts/resolve-all', cs.table ? { table: cs.table } : {});
    const r = num(d.resolved);
    showStatus('ok', 'Resolved ' + plural(r, 'conflict') + ' by keeping the current versions.');
  } catch (err) {
    failed('Resolve all failed')(err);
  }
  if (cs.open) {
    try { await reread(str(cs.open.id)); } catch (err) { /* ignore */ }
  }
  setBusy(false);
  await loadConflicts(false);
}

async function loadInstanceNames() {
  try {
    const d = await api('GET', '/v1/instances');
    arr(d.instances).forEach(i => {
      i = obj(i);
      if (i.id && i.name) cs.names[str(i.id)] = str(i.name);
    });
  } catch (err) { /* names are a nicety: ids are shown without them */ }
}

boot({
  name: 'conflicts',
  init() {
    $('filter-resolved').addEventListener('change', ev => {
      cs.unresolvedOnly = ev.target.value !== 'all';
      loadConflicts(false);
    });
    $('filter-table').addEventListener('change', ev => {
      cs.table = ev.target.value;
      loadConflicts(false);
    });
    $('conflict-filter').addEventListener('submit', ev => ev.preventDefault());
    $('refresh').addEventListener('click', () => {
      clearStatus();
      loadConflicts(false);
      if (cs.open) openConflict(str(cs.open.id));
    });
    $('conflict-more').addEventListener('click', () => loadConflicts(true));
    $('resolve-all').addEventListener('click', resolveAll);
    $('keep').addEventListener('click', () => act('keep'));
    $('restore').addEventListener('click', () => act('restore'));
    $('close-detail').addEventListener('click', closeDetail);
  },
  async load() {
    cs.unresolvedOnly = $('filter-resolved').value !== 'all';
    cs.table = $('filter-table').value;
    // The names first, so that the list shows them from the start.
    await loadInstanceNames();
    loadConflicts(false);
    const id = new URLSearchParams(location.search).get('id');
    if (id) openConflict(id);
  }
});
