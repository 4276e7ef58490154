// The proof of a numbered memory (GET /v1/memory/{n}/proof), shown
// readably on the memories page: the verdict, then each step (the event
// hash, home's anchor record, the event read back from the chain, the
// ciphertext decrypted), the raw answer behind a toggle.
import { $, el, str, obj, arr, num, fmtTime, metaList, codeOrDash, pretty } from './dom.js';

// STATUS explains each status of a memory proof.
const STATUS = {
  verified: 'the event hash recomputes, the chain holds the anchored event and its ciphertext decrypts to this content',
  content_forgotten: 'the memory was forgotten: its key is destroyed and the ciphertext on chain is unreadable; number and event hash still verify',
  pending: 'not anchored on chain yet',
  mismatch: 'a part does not match (see below)',
  unverified: 'this instance lacks the chain or the seed to check it: ask home'
};

const BADGE = { verified: 'ok', content_forgotten: 'neutral', pending: 'waiting', mismatch: 'error', unverified: 'neutral' };

function yesNo(b, yes, no) {
  return el('span', { class: 'badge anchor ' + (b ? 'ok' : 'error') }, b ? yes : no);
}

// resetProof empties the proof view and shows message instead.
export function resetProof(message) {
  $('memory-proof').hidden = true;
  const m = $('memory-proof-empty');
  m.textContent = message;
  m.hidden = !message;
}

export function renderProof(p) {
  const status = str(p.status) || 'unknown';
  const v = $('memory-proof-verdict');
  v.className = 'verdict ' + (BADGE[status] === 'ok' ? 'ok' : BADGE[status] === 'error' ? 'error' : 'info');
  v.dataset.status = status;
  v.replaceChildren(el('span', { class: 'badge anchor ' + (BADGE[status] || 'neutral') }, status),
    ' #' + num(p.number) + ': ' + (STATUS[status] || '') +
    (arr(p.mismatch).length ? ' (mismatch: ' + arr(p.mismatch).join(', ') + ')' : '') + '.');

  const ev = obj(p.event);
  const a = p.anchor ? obj(p.anchor) : null;
  const oc = p.onchain ? obj(p.onchain) : null;
  const ct = p.content ? obj(p.content) : null;
  const pairs = [
    ['Event hash', codeOrDash(ev.event_hash), { data: { field: 'event_hash' } }],
    ['Recomputed', ev.recomputed_hash ? el('span', null, el('code', null, str(ev.recomputed_hash)), ' ', yesNo(ev.match, 'matches', 'differs')) :
      el('span', { class: 'absent' }, 'not recomputable here (deleted or forgotten)'), { data: { field: 'recomputed' } }],
    ['Content hash', el('span', null, codeOrDash(ev.content_hash), ' ', yesNo(ev.content_hash_match, 'content matches', 'no matching content here')), { data: { field: 'content_hash' } }]
  ];
  if (a) {
    pairs.push(['Anchor status', str(a.status), { data: { field: 'anchor_status' } }]);
    pairs.push(['Root', el('span', null, codeOrDash(a.root), a.root_id ? ' #' + num(a.root_id) : ''), { data: { field: 'root' } }]);
    pairs.push(['Transaction', codeOrDash(a.tx_hash), { data: { field: 'tx_hash' } }]);
    pairs.push(['Block', a.block_number ? String(num(a.block_number)) : '—', { data: { field: 'block_number' } }]);
    pairs.push(['Chain', el('span', null, 'chain id ' + num(a.chain_id) + ', contract ', codeOrDash(a.contract)), { data: { field: 'chain' } }]);
    if (a.anchored_at) pairs.push(['Anchored', fmtTime(a.anchored_at)]);
    pairs.push(['Merkle proof', proofSteps(arr(a.proof).length), { data: { field: 'proof_len' } }]);
  } else {
    pairs.push(['Anchor', 'not anchored yet', { data: { field: 'anchor_status' } }]);
  }
  if (oc) {
    pairs.push(['On chain', oc.found ? el('span', null, yesNo(true, 'event found', ''), ' in block ' + num(oc.block_number) + ', tx ', codeOrDash(oc.tx_hash)) :
      yesNo(false, '', 'no MemoryAnchored event found'), { data: { field: 'onchain' } }]);
  } else {
    pairs.push(['On chain', 'not read here (this instance reads no chain)', { data: { field: 'onchain' } }]);
  }
  if (ct) {
    pairs.push(['Decrypted', ct.decrypted ? el('span', null, yesNo(ct.match, 'matches the content hash', 'does not match'), ' (' + str(ct.key) + ')') :
      'not decrypted (' + str(ct.key) + ')', { data: { field: 'decrypted' } }]);
  }
  metaList($('memory-proof-meta'), pairs);
  const notes = arr(p.notes);
  $('memory-proof-notes').replaceChildren(...notes.map(n => el('li', null, str(n))));
  $('memory-proof-notes').hidden = notes.length === 0;
  $('memory-proof-howto').textContent = str(p.how_to_verify);
  $('memory-proof-json').textContent = pretty(p);
  $('memory-proof-empty').hidden = true;
  $('memory-proof').hidden = false;
}

function proofSteps(n) { return n + ' step' + (n === 1 ? '' : 's') + ' from the leaf to the root'; }
