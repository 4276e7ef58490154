// Hypercore 11 replication over a real TCP loopback connection, encrypted
// with Noise (Hypercore's replicate() wraps the socket in
// @hyperswarm/secret-stream), measured like crow's sync benchmarks
// (docs/bench/sync.md): full sync of N 256-byte entries from core A to a
// fresh core B (time until B holds all of them, verified), and reconnect
// catch-up of 1,000 entries appended while B was disconnected (time from
// the new TCP connection to B holding them). Both cores live in this one
// process, each in its own temp dir.
'use strict'
const Hypercore = require('hypercore')
const net = require('net')
const fs = require('fs')
const os = require('os')
const path = require('path')

const ENTRY = 256
const FULL = Number(process.env.FULL || 100000)
const CATCHUP = Number(process.env.CATCHUP || 1000)
const ROUNDS = Number(process.env.ROUNDS || 5)

function entry (i) {
  const b = Buffer.alloc(ENTRY)
  b.write(String(i).padStart(ENTRY, '0'))
  return b
}

function tmp (name) {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'hc-' + name + '-'))
}

async function fill (core, n) {
  const batch = []
  for (let i = core.length, end = core.length + n; i < end; i++) {
    batch.push(entry(i))
    if (batch.length === 1000) await core.append(batch.splice(0))
  }
  if (batch.length) await core.append(batch.splice(0))
}

// connect replicates a and b over a TCP loopback socket pair (Noise inside
// replicate()) and returns a function closing both ends.
async function connect (a, b) {
  const server = net.createServer(sock => {
    const s = a.replicate(false)
    sock.pipe(s).pipe(sock)
    sock.on('error', () => {})
    s.on('error', () => {})
  })
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  const sock = net.connect(server.address().port, '127.0.0.1')
  sock.setNoDelay(true)
  sock.on('error', () => {})
  const s = b.replicate(true)
  s.on('error', () => {})
  sock.pipe(s).pipe(sock)
  return () => { s.destroy(); sock.destroy(); server.close() }
}

async function waitContiguous (core, n) {
  while (core.contiguousLength < n) {
    await core.download({ start: core.contiguousLength, end: n }).done()
  }
}

async function main () {
  console.log(`hypercore ${require('hypercore/package.json').version}, node ${process.version}, TCP loopback + Noise`)
  const dirA = tmp('a')
  const dirB = tmp('b')
  const a = new Hypercore(dirA)
  await a.ready()
  await fill(a, FULL)
  const b = new Hypercore(dirB, a.key)
  await b.ready()

  let t0 = process.hrtime.bigint()
  let close = await connect(a, b)
  await b.update({ wait: true })
  await waitContiguous(b, FULL)
  let ms = Number(process.hrtime.bigint() - t0) / 1e6
  console.log(`full sync ${FULL} entries: ${ms.toFixed(0)} ms, ${Math.round(FULL / (ms / 1000))} entries/s, peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`)

  const times = []
  for (let r = 0; r < ROUNDS; r++) {
    close()
    await new Promise(resolve => setTimeout(resolve, 50))
    const batch = []
    for (let i = 0; i < CATCHUP; i++) {
      batch.push(entry(a.length + i))
      if (batch.length === 100) { await a.append(batch.splice(0)) }
    }
    const want = a.length
    t0 = process.hrtime.bigint()
    close = await connect(a, b)
    await b.update({ wait: true })
    await waitContiguous(b, want)
    ms = Number(process.hrtime.bigint() - t0) / 1e6
    times.push(ms)
  }
  times.sort((x, y) => x - y)
  console.log(`reconnect catch-up ${CATCHUP} entries: median ${times[times.length >> 1].toFixed(1)} ms over ${ROUNDS} rounds (min ${times[0].toFixed(1)}, max ${times[times.length - 1].toFixed(1)})`)
  close()
  await a.close()
  await b.close()
  fs.rmSync(dirA, { recursive: true, force: true })
  fs.rmSync(dirB, { recursive: true, force: true })
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1) })
