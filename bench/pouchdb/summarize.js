'use strict';
// node summarize.js results/pouch.jsonl results/crow.jsonl [results/ceiling.jsonl]
// Prints min / median / max per metric for both systems and the ratio of the
// medians (crow / PouchDB), as a Markdown table; with the third file, the
// ceiling of a single-memory POST on this machine (crowbench -ceiling).
const fs = require('fs');
const read = (f) => fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((r) => !r.error && r.run > 0);
const [pf, cf, xf] = process.argv.slice(2);
const P = read(pf || 'results/pouch.jsonl'), C = read(cf || 'results/crow.jsonl');

const stats = (rows, key) => {
  const xs = rows.map((r) => (typeof key === 'function' ? key(r) : r[key])).filter((x) => typeof x === 'number').sort((a, b) => a - b);
  if (!xs.length) return null;
  return { min: xs[0], med: xs.length % 2 ? xs[(xs.length - 1) / 2] : (xs[xs.length / 2 - 1] + xs[xs.length / 2]) / 2, max: xs[xs.length - 1], n: xs.length };
};
const fmt = (x) => (x === undefined || x === null ? '—' : Math.abs(x) >= 100 ? Math.round(x).toLocaleString('en-US') : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const cell = (s) => (s ? `${fmt(s.min)} / **${fmt(s.med)}** / ${fmt(s.max)}` : '—');

// [label, pouch key, crow key, higher is better?]
const rows = [
  ['write rate (docs or memories /s)', 'write_per_s', 'write_per_s', true],
  ['write of N: wall s', 'write_s', 'write_s', false],
  ['bulk write rate, 1,000 per call (PouchDB bulkDocs; crow POST /v1/memories)', 'write_per_s', 'bulk_write_per_s', true],
  ['full sync of N: wall s (crow: until the last-written memory is served; apply is in feed order, count confirmed N)', 'full_sync_s', 'full_sync_marker_s', false],
  ['full sync of N: docs|memories /s', 'full_sync_per_s', (r) => r.n / r.full_sync_marker_s, true],
  ['  crow: until GET /v1/projects counted N (start of the call), s', null, 'full_sync_s', false],
  ['  crow: until the last memory is found by the satellite\'s search, s', null, 'full_sync_searchable_s', false],
  ['  crow: home feed stored on satellite, s (verified, not yet applied)', null, 'full_sync_feed_stored_s', false],
  ['  crow: GET /v1/sync/status on the satellite during the sync, p50 ms', null, 'sat_status_during_sync_p50_ms', false],
  ['  crow: GET /v1/sync/status on the satellite during the sync, p99 ms', null, 'sat_status_during_sync_p99_ms', false],
  ['reconnect catch-up of 1,000: ms (PouchDB: new replication; crow: sync pause → resume)', 'catchup_ms', 'catchup_pause_resume_ms', false],
  ['  crow catch-up, restart: from satellite process spawn, ms', null, 'catchup_restart_from_spawn_ms', false],
  ['  crow catch-up, restart: from satellite /health ready, ms', null, 'catchup_restart_from_ready_ms', false],
  ['  crow catch-up, pause → resume: after the peer connection is up, ms', null, 'catchup_pause_resume_after_connect_ms', false],
  ['live write → visible on peer: p50 ms', 'live_p50_ms', 'live_p50_ms', false],
  ['live write → visible on peer: p99 ms', 'live_p99_ms', 'live_p99_ms', false],
  ['live: max ms', 'live_max_ms', 'live_max_ms', false],
  ['peak RSS source (A / home) during write, MB', 'rss_a_write_peak_mb', 'rss_home_write_peak_mb', false],
  ['peak RSS source (A / home) during full sync, MB', 'rss_a_sync_peak_mb', 'rss_home_sync_peak_mb', false],
  ['peak RSS receiver (B / satellite) during full sync, MB', 'rss_b_sync_peak_mb', 'rss_sat_sync_peak_mb', false],
  ['peak RSS source, whole run after the write, MB', 'rss_a_final_peak_mb', 'rss_home_final_peak_mb', false],
  ['peak RSS receiver, end of run (crow: the restarted satellite process), MB', 'rss_b_final_peak_mb', 'rss_sat_final_peak_mb', false],
  ['disk source, MB', 'disk_a_mb', 'disk_home_mb', false],
  ['disk receiver, MB', 'disk_b_mb', 'disk_sat_mb', false],
];
console.log(`runs: PouchDB ${P.length}, crow ${C.length} (min / **median** / max)\n`);
console.log('| metric | PouchDB | crow | crow / PouchDB (medians) |');
console.log('|---|---|---|---|');
for (const [label, pk, ck, hib] of rows) {
  const ps = pk ? stats(P, pk) : null, cs = ck ? stats(C, ck) : null;
  if (!ps && !cs) continue;
  const ratio = ps && cs ? `${(cs.med / ps.med).toFixed(2)}×${hib ? ' (higher is better)' : ''}` : '';
  console.log(`| ${label} | ${cell(ps)} | ${cell(cs)} | ${ratio} |`);
}
const X = xf && fs.existsSync(xf) ? read(xf) : [];
const xs = stats(X, 'write_per_s'), ws = stats(C, 'write_per_s'), pw = stats(P, 'write_per_s');
if (xs) {
  console.log(`\nceiling of a single-memory POST here (crowbench -ceiling: the same 64 connections against a stand-in that decodes each memory and stores nothing), writes /s: ${cell(xs)}` +
    (ws ? `; crow reaches ${(ws.med / xs.med).toFixed(2)}× of it` : '') + (pw ? `; PouchDB's bulk rate is ${(pw.med / xs.med).toFixed(2)}× of it` : ''));
}
console.log('\nper run:');
for (const r of [...P, ...C]) {
  const keys = ['system', 'run', 'write_per_s', 'full_sync_s', 'catchup_ms', 'catchup_pause_resume_ms', 'catchup_restart_from_spawn_ms', 'live_p50_ms', 'live_p99_ms', 'load_before_sync', 'home_anchor_memories_before_sync', 'home_feed_before_sync', 'home_feed_end'];
  console.log(keys.filter((k) => r[k] !== undefined).map((k) => `${k}=${typeof r[k] === 'number' ? fmt(r[k]) : r[k]}`).join(' '));
}
