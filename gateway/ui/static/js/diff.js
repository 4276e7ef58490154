// A human diff of two versions of a row (the conflicts page): text as a
// word diff, lists of plain values as sets, anything else as before →
// after. Pure functions over the decoded JSON; rendering is in conflicts.js.
import { canon, isObject } from './dom.js';

// MAX_TOKENS bounds the word diff (an LCS table is tokens² cells); longer
// texts are shown as replaced whole.
const MAX_TOKENS = 1500;

// tokens splits a text into words and the whitespace between them.
function tokens(s) { return s.split(/(\s+)/).filter(t => t !== ''); }

// words diffs text a into text b: a list of {op: 'same'|'del'|'ins', text}.
// A run of changed words (with the spaces between them) is one del then
// one ins, so that a rewritten sentence reads as removed, then added.
export function words(a, b) {
  const x = tokens(a), y = tokens(b);
  if (x.length > MAX_TOKENS || y.length > MAX_TOKENS) {
    return [a ? { op: 'del', text: a } : null, b ? { op: 'ins', text: b } : null].filter(Boolean);
  }
  // lcs[i][j]: the longest common subsequence of x[i:] and y[j:].
  const lcs = Array.from({ length: x.length + 1 }, () => new Uint16Array(y.length + 1));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const raw = [];
  let i = 0, j = 0;
  while (i < x.length && j < y.length) {
    if (x[i] === y[j]) { raw.push({ op: 'same', text: x[i] }); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) raw.push({ op: 'del', text: x[i++] });
    else raw.push({ op: 'ins', text: y[j++] });
  }
  while (i < x.length) raw.push({ op: 'del', text: x[i++] });
  while (j < y.length) raw.push({ op: 'ins', text: y[j++] });

  const out = [];
  const push = (op, text) => {
    const last = out[out.length - 1];
    if (last && last.op === op) last.text += text;
    else out.push({ op, text });
  };
  const space = t => /^\s+$/.test(t);
  for (let k = 0; k < raw.length;) {
    if (raw[k].op === 'same') { push('same', raw[k++].text); continue; }
    let del = '', ins = '', hasDel = false, hasIns = false;
    while (k < raw.length && (raw[k].op !== 'same' ||
      (space(raw[k].text) && k + 1 < raw.length && raw[k + 1].op !== 'same'))) {
      const p = raw[k++];
      if (p.op === 'del') { del += p.text; hasDel = true; }
      else if (p.op === 'ins') { ins += p.text; hasIns = true; }
      else { del += p.text; ins += p.text; }
    }
    if (hasDel) push('del', del);
    if (hasIns) push('ins', ins);
    if (hasDel !== hasIns) {
      // Only one side changed: the spaces taken in belong to both.
      const whole = hasDel ? del : ins;
      const lead = whole.match(/^\s*/)[0];
      if (lead) { out[out.length - 1].text = whole.slice(lead.length); out.splice(out.length - 1, 0, { op: 'same', text: lead }); }
    }
  }
  return out;
}

function plainList(v) {
  return Array.isArray(v) && v.every(e => e === null || typeof e !== 'object');
}

// sets compares two lists of plain values as sets: {removed, added, kept}
// (values as JSON text, in their order of appearance).
export function sets(a, b) {
  const ka = a.map(canon), kb = b.map(canon);
  const uniq = l => l.filter((v, i) => l.indexOf(v) === i);
  return {
    removed: uniq(ka.filter(v => !kb.includes(v))),
    added: uniq(kb.filter(v => !ka.includes(v))),
    kept: uniq(ka.filter(v => kb.includes(v)))
  };
}

// FIRST are the fields shown first (what a person reads); the others
// follow by name.
const FIRST = ['content', 'title', 'name', 'body', 'tags', 'project', 'category', 'importance'];

function rank(k) { const i = FIRST.indexOf(k); return i < 0 ? FIRST.length : i; }

// fields compares the top-level fields of two row versions, from (the
// current) to to (the overwritten). Each entry is {field, from, to, change,
// kind}: change is 'changed', 'removed' (only in from), 'added' (only in
// to) or 'same'; kind says how to show it: 'text' (both strings, one with
// a space: a single word or a hash is a value), 'set' (both lists of
// plain values) or 'value'.
export function fields(from, to) {
  if (!isObject(from) || !isObject(to)) {
    return [{ field: '(whole value)', from, to, change: canon(from) === canon(to) ? 'same' : 'changed', kind: 'value' }];
  }
  const keys = [...new Set([...Object.keys(from), ...Object.keys(to)])].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  return keys.map(k => {
    const inF = Object.prototype.hasOwnProperty.call(from, k);
    const inT = Object.prototype.hasOwnProperty.call(to, k);
    const f = inF ? from[k] : undefined, t = inT ? to[k] : undefined;
    const change = inF && inT ? (canon(f) === canon(t) ? 'same' : 'changed') : inF ? 'removed' : 'added';
    let kind = 'value';
    if (typeof f === 'string' && typeof t === 'string' && (/\s/.test(f) || /\s/.test(t))) kind = 'text';
    else if ((plainList(f) || f === undefined || f === null) && (plainList(t) || t === undefined || t === null) && (plainList(f) || plainList(t))) kind = 'set';
    return { field: k, from: f, to: t, change, kind };
  });
}

// sameData: two row versions hold the same data, updated_at aside (a
// restore writes the overwritten data again with a new time).
export function sameData(a, b) {
  if (!isObject(a) || !isObject(b)) return canon(a) === canon(b);
  const strip = o => { const c = Object.assign({}, o); delete c.updated_at; return c; };
  return canon(strip(a)) === canon(strip(b));
}
