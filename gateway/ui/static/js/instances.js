// The instances page: the machines of this identity, their status and
// replication; on home, invite a new machine (SPEC §7) and revoke one; per
// peer (and for all of them) pause and resume replication.
import { api, publicGet, failed, boot } from './api.js';
import { $, el, str, obj, arr, num, fmtTime, renderRows, setText, showStatus, clearStatus, short, plural, confirmAction,
  copyFrom } from './dom.js';

const STATUS_CLASSES = { online: 'online', syncing: 'syncing', offline: 'offline', unknown: '', revoked: 'revoked' };

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


// ist is the page's state: this instance's id and role, whether an action
// is in flight, and the last registry and status read (shown again once
// the role is known: only home revokes).
const ist = { self: '', role: '', busy: false, last: null };

// load reads the registry and the replication status and shows them.
async function loadAll() {
  const [inst, st] = await Promise.all([
    api('GET', '/v1/instances'),
    api('GET', '/v1/sync/status').catch(err => {
      if (err.auth) throw err;
      return { error: err.message };
    })
  ]);
  ist.last = [obj(inst), obj(st)];
  render(...ist.last);
  return obj(inst);
}

function render(inst, st) {
  const self = str(inst.self);
  ist.self = self;
  const peers = arr(st.peers).map(obj);
  const byInstance = {};
  peers.forEach(p => { if (p.instance_id) byInstance[str(p.instance_id)] = p; });
  const pausedPeers = arr(st.paused_peers).map(str);
  const isPaused = p => !!p.paused || pausedPeers.includes(str(p.instance_id));

  renderRows('instance-list', 'instance-empty', arr(inst.instances).map(obj).map(i => {
    const id = str(i.id);
    const status = str(i.status) || 'unknown';
    let repl;
    if (id === self) repl = 'this instance';
    else if (byInstance[id]) {
      const p = byInstance[id];
      repl = (p.connected ? 'connected' : 'not connected') + ', lag ' + num(p.lag) + (isPaused(p) ? ', paused' : '');
    } else repl = 'no peer session';
    let action = null;
    if (id !== self && status !== 'revoked' && ist.role === 'home') {
      action = el('button', { type: 'button', class: 'small danger', data: { revoke: id } }, 'Revoke…');
      action.addEventListener('click', () => revoke(i));
    }
    return el('tr', { data: { id } },
      el('td', { data: { field: 'name' } }, str(i.name) || '—', id === self ? el('span', { class: 'muted' }, ' (this instance)') : null),
      el('td', null, el('code', null, id)),
      el('td', null, str(i.role)),
      el('td', { data: { field: 'status' } }, el('span', { class: 'badge ' + (STATUS_CLASSES[status] || '') }, status)),
      el('td', null, fmtTime(typeof i.last_seen === 'number' ? i.last_seen : str(i.last_seen))),
      el('td', null, el('code', null, str(i.gateway_url))),
      el('td', { data: { field: 'replication' } }, repl),
      el('td', null, action));
  }));

  if (st.error) {
    setText('sync-summary', 'Replication status unavailable: ' + st.error);
  } else {
    const n = peers.filter(isPaused).length;
    setText('sync-summary', st.paused ? 'Replication is paused for every peer.' :
      n > 0 ? 'Replication is running, paused for ' + plural(n, 'peer') + '.' : 'Replication is running.');
  }
  $('sync-summary').dataset.paused = st.paused ? 'true' : 'false';
  $('sync-pause-all').hidden = !!st.paused || !!st.error;
  $('sync-resume-all').hidden = !st.paused;
  renderRows('peer-list', 'peer-empty', peers.map(p => {
    const label = str(p.name) || str(p.instance_id) || str(p.peer_id) || '—';
    const id = str(p.instance_id);
    const paused = isPaused(p);
    let button = null;
    if (id && !st.paused) {
      button = el('button', { type: 'button', class: 'small secondary', data: paused ? { resume: id } : { pause: id } }, paused ? 'Resume' : 'Pause');
      button.addEventListener('click', () => setPaused(!paused, id, label));
    }
    return el('tr', { data: { id: id || str(p.peer_id), paused: paused ? 'true' : 'false' } },
      el('td', { title: str(p.peer_id) }, label),
      el('td', { data: { field: 'connected' } }, p.connected ? 'yes' : 'no'),
      el('td', { data: { field: 'paused' } }, paused || st.paused ? 'paused' : 'running'),
      el('td', { data: { field: 'lag' } }, String(num(p.lag))),
      el('td', null, fmtTime(p.last_seen)),
      el('td', null, String(num(p.entries_received))),
      el('td', null, String(num(p.entries_sent))),
      el('td', null, button));
  }));
  renderRows('feed-list', 'feed-empty', arr(st.feeds).map(obj).map(f => {
    const key = str(f.feed || f.key);
    return el('tr', null,
      el('td', null, str(f.name) || str(f.instance_id) || 'unknown instance'),
      el('td', { title: key }, el('code', null, short(key))),
      el('td', null, String(num(f.length))));
  }));
}

// setPaused pauses or resumes replication with one peer (id) or, without
// id, with every peer.
async function setPaused(pause, id, label) {
  if (ist.busy) return;
  ist.busy = true;
  clearStatus();
  try {
    const d = obj(await api('POST', '/v1/sync/' + (pause ? 'pause' : 'resume'), id ? { id } : undefined));
    const who = id ? 'with ' + label : 'with every peer';
    showStatus('ok', (pause ? 'Paused replication ' : 'Resumed replication ') + who + '.' +
      (d.paused ? ' Replication is paused for every peer.' : arr(d.paused_peers).length ? ' Paused peers: ' + arr(d.paused_peers).length + '.' : ''));
  } catch (err) {
    failed('Could not ' + (pause ? 'pause' : 'resume') + ' replication' + (id ? ' with ' + label : ''))(err);
  }
  ist.busy = false;
  try { await loadAll(); } catch (err) { failed('Could not load the instances')(err); }
}

// revoke asks, naming the instance, then revokes it for good.
async function revoke(i) {
  const id = str(i.id), label = str(i.name) || id;
  const ok = await confirmAction('Revoke ' + label + '?', [
    'Revoking ' + label + ' (instance ' + id + ', ' + str(i.role) + ') refuses it for good: every instance then refuses its key for replication, federation and registration, under any id, and applies nothing more of its feed.',
    'What it wrote before stays. This cannot be undone: to use that machine again, make a new invite and enroll it as a new instance.'
  ], 'Revoke ' + label, true);
  if (!ok || ist.busy) return;
  ist.busy = true;
  clearStatus();
  try {
    await api('DELETE', '/v1/instances/' + encodeURIComponent(id));
    showStatus('ok', 'Revoked ' + label + ': every instance refuses it as the revocation replicates.');
  } catch (err) {
    failed('Could not revoke ' + label)(err);
  }
  ist.busy = false;
  try { await loadAll(); } catch (err) { failed('Could not load the instances')(err); }
}

boot({
  name: 'instances',
  init() {
    $('invite-form').addEventListener('submit', ev => {
      ev.preventDefault();
      makeInvite();
    });
    $('invite-copy').addEventListener('click', () => copyFrom($('invite-line'), 'the invite', copyMsg));
    $('invite-copy-command').addEventListener('click', () => copyFrom($('invite-command'), 'the command', copyMsg));
    $('sync-pause-all').addEventListener('click', () => setPaused(true, '', ''));
    $('sync-resume-all').addEventListener('click', () => setPaused(false, '', ''));
  },
  load() {
    // The role comes from the public /health; if that cannot be read,
    // from this instance's own row in the registry.
    const instances = api('GET', '/v1/instances');
    Promise.all([
      publicGet('/health').then(h => ({ role: str(obj(h).role) }), err => ({ error: err.message })),
      instances.catch(err => {
        if (err.auth) throw err;
        return {};
      })
    ]).then(res => {
      const h = res[0];
      const inst = obj(res[1]);
      const list = arr(inst.instances).map(obj);
      const selfRow = list.filter(i => str(i.id) === str(inst.self))[0];
      const homeRow = list.filter(i => i.role === 'home')[0];
      const role = h.error ? (selfRow ? str(selfRow.role) : '') : h.role;
      const why = h.error ? 'GET /health: ' + h.error : 'its role is ' + (role ? '"' + role + '"' : 'not given');
      ist.role = role;
      showInviteRole(role, homeRow && role !== 'home' ? str(homeRow.gateway_url) : '', why);
      if (ist.last) render(...ist.last);
    }, () => { /* the key form is shown */ });
    loadAll().catch(failed('Could not load the instances'));
  }
});
