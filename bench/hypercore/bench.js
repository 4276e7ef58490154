// Hypercore throughput, measured the same way as crow's feed benchmarks
// (docs/bench/feed.md): 256-byte entries appended singly and in batches of
// 100 to a temp dir, and a 100k-entry replication from core A to a fresh
// core B over an in-process stream pair (time until B holds all entries).
'use strict'
const Hypercore = require('hypercore')
const fs = require('fs')
const os = require('os')
const path = require('path')

const ENTRY = 256
const SINGLE = Number(process.env.SINGLE || 20000)
const BATCHED = Number(process.env.BATCHED || 200000)
const RANGE = Number(process.env.RANGE || 100000)

function entry (i) {
  const b = Buffer.alloc(ENTRY)
  for (let j = 0; j < ENTRY; j++) b[j] = (i * 31 + j) & 0xff
  return b
}

function tmp (name) {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'hc-' + name + '-'))
}

function report (name, n, ms) {
  console.log(`${name.padEnd(28)} ${String(n).padStart(7)} entries  ${ms.toFixed(0).padStart(6)} ms  ${Math.round(n / (ms / 1000)).toString().padStart(8)} entries/s`)
}

async function appendBench (name, total, batch) {
  const dir = tmp(name)
  const core = new Hypercore(dir)
  await core.ready()
  const blocks = []
  for (let i = 0; i < 1000; i++) blocks.push(entry(i))
  const t0 = process.hrtime.bigint()
  for (let i = 0, j = 0; i < total; i += batch) {
    if (j + batch > blocks.length) j = 0
    if (batch === 1) await core.append(blocks[j])
    else await core.append(blocks.slice(j, j + batch))
    j += batch
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (core.length !== total) throw new Error('length ' + core.length)
  await core.close()
  fs.rmSync(dir, { recursive: true, force: true })
  report(name, total, ms)
}

async function replicateBench (n) {
  const dirA = tmp('a')
  const dirB = tmp('b')
  const a = new Hypercore(dirA)
  await a.ready()
  const batch = []
  for (let i = 0; i < n; i++) {
    batch.push(entry(i))
    if (batch.length === 1000) await a.append(batch.splice(0))
  }
  if (batch.length) await a.append(batch.splice(0))

  const b = new Hypercore(dirB, a.key)
  await b.ready()
  const t0 = process.hrtime.bigint()
  const s1 = a.replicate(true)
  const s2 = b.replicate(false)
  s1.pipe(s2).pipe(s1)
  await b.update({ wait: true })
  await b.download({ start: 0, end: n }).done()
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (b.contiguousLength !== n) throw new Error('contiguous ' + b.contiguousLength)
  s1.destroy()
  s2.destroy()
  await a.close()
  await b.close()
  fs.rmSync(dirA, { recursive: true, force: true })
  fs.rmSync(dirB, { recursive: true, force: true })
  report('replicate+verify (B)', n, ms)
}

async function main () {
  console.log(`hypercore ${require('hypercore/package.json').version}, node ${process.version}`)
  await appendBench('append batch=1', SINGLE, 1)
  await appendBench('append batch=100', BATCHED, 100)
  await replicateBench(RANGE)
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1) })
