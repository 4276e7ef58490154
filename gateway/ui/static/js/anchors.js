// The anchors of a project's state versions (GET /v1/verify/{name}), shown
// on the projects page and on the public verify page.
import { $, el, str, obj, arr, num, fmtTime, metaList, renderRows, setText, codeOrDash, plural } from './dom.js';

export function verifyPath(name) { return '/v1/verify/' + encodeURIComponent(name); }

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
export function resetVerify(message) {
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
  var n = plural(versions.length, 'version');
  if (d.verified === true && bad === 0) {
    var text = versions.length === 1 ?
      'Verified: the only version of ' + project + ' is in a root anchored on chain, with a matching hash and proof.' :
      'Verified: all ' + n + ' of ' + project + ' are in roots anchored on chain, with matching hashes and proofs.';
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
export function renderVerify(d) {
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
