#!/usr/bin/env node
// Interop client: connects to a RakNet server with jsp-raknet's Client, sends
// COUNT reliable-ordered messages and checks that each one comes back
// unchanged and in order.
//
//   node jsp_client.js HOST PORT COUNT [SIZE]
//
// Each message is SIZE bytes (default 64, minimum 5): 0xfe, the message id as
// uint32 LE, then deterministic payload bytes. At most 16 messages are
// outstanding. On success prints "verified N/N messages" and exits 0; on a
// mismatch, a disconnect or a timeout (JSP_TIMEOUT_MS, default 20000) prints
// the reason to stderr and exits 1. Set JSP_VERBOSE=1 for progress on stderr.
'use strict';

const dns = require('dns').promises;
const net = require('net');
const { Client, EncapsulatedPacket, Reliability } = require('jsp-raknet');

const MAX_OUTSTANDING = 16;
const verbose = !!process.env.JSP_VERBOSE;

function usage(msg) {
  if (msg) process.stderr.write(`jsp_client: ${msg}\n`);
  process.stderr.write('usage: node jsp_client.js HOST PORT COUNT [SIZE]\n');
  process.exit(2);
}

const [host, portArg, countArg, sizeArg] = process.argv.slice(2);
if (!host || !portArg || !countArg) usage();
const port = Number(portArg);
const count = Number(countArg);
const size = sizeArg === undefined ? 64 : Number(sizeArg);
if (!Number.isInteger(port) || port < 1 || port > 65535) usage(`bad port ${portArg}`);
if (!Number.isInteger(count) || count < 0) usage(`bad count ${countArg}`);
if (!Number.isInteger(size) || size < 5) usage(`bad size ${sizeArg} (minimum 5)`);
const timeoutMs = process.env.JSP_TIMEOUT_MS ? Number(process.env.JSP_TIMEOUT_MS) : 20000;
if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) usage(`bad JSP_TIMEOUT_MS ${process.env.JSP_TIMEOUT_MS}`);

function log(...args) {
  if (verbose) console.error('jsp_client:', ...args);
}

function makeMessage(id) {
  const buf = Buffer.alloc(size);
  buf[0] = 0xfe;
  buf.writeUInt32LE(id >>> 0, 1);
  for (let j = 5; j < size; j++) buf[j] = (id * 31 + j * 7 + 13) & 0xff;
  return buf;
}

let finished = false;
let client = null;
let sent = 0;
let received = 0;

function fail(reason) {
  if (finished) return;
  finished = true;
  process.stderr.write(`jsp_client: FAIL: ${reason} (sent ${sent}, verified ${received}/${count})\n`);
  try { if (client) client.close('failure'); } catch (e) { /* ignore */ }
  // Give the disconnect notification a moment to leave, then quit.
  setTimeout(() => process.exit(1), 150).unref();
  setTimeout(() => process.exit(1), 1000);
}

function succeed() {
  if (finished) return;
  finished = true;
  // Wait a few ticks (jsp-raknet ticks every 10 ms) so the ACKs for the last
  // echoes go out, then disconnect gracefully (sends 0x15) and let the socket
  // close (jsp-raknet closes it 100 ms after close()).
  setTimeout(() => {
    try { client.close('done'); } catch (e) { /* ignore */ }
    console.log(`verified ${received}/${count} messages`);
    setTimeout(() => process.exit(0), 250);
  }, 50);
}

const overall = setTimeout(() => fail(`timeout after ${timeoutMs} ms`), timeoutMs);
overall.unref(); // the hard exit below keeps the process honest
setTimeout(() => {
  process.stderr.write('jsp_client: FAIL: hard timeout\n');
  process.exit(1);
}, timeoutMs + 2000).unref();
// Keep the event loop alive until we decide to exit, even if jsp-raknet
// closes its socket on its own.
const keepAlive = setInterval(() => {}, 1 << 30);

process.on('uncaughtException', (e) => fail(`uncaught exception: ${e && e.stack || e}`));
process.on('unhandledRejection', (e) => fail(`unhandled rejection: ${e && e.stack || e}`));

async function main() {
  // jsp-raknet writes the server address into open connection request 2 by
  // splitting the host string on '.', so it must be an IPv4 literal.
  let ip = host;
  if (!net.isIPv4(host)) {
    const res = await dns.lookup(host, { family: 4 });
    ip = res.address;
  }
  log(`connecting to ${ip}:${port}, ${count} messages of ${size} bytes`);

  client = new Client(ip, port);
  let conn = null;

  const pump = () => {
    while (!finished && sent < count && sent - received < MAX_OUTSTANDING) {
      const pk = new EncapsulatedPacket();
      pk.reliability = Reliability.ReliableOrdered;
      pk.orderChannel = 0;
      pk.buffer = makeMessage(sent);
      conn.addEncapsulatedToQueue(pk);
      sent++;
    }
  };

  client.on('error', (err) => fail(`client error: ${err}`));
  client.on('disconnect', (reason) => fail(`disconnected by jsp-raknet: ${reason}`));
  client.on('connected', (c) => {
    if (conn) return;
    conn = c;
    log('connected, mtu', c.mtuSize);
    if (count === 0) return succeed();
    pump();
  });
  client.on('encapsulated', (packet) => {
    if (finished) return;
    const got = packet.buffer;
    if (received >= count) return fail(`unexpected extra message of ${got.length} bytes`);
    const expected = makeMessage(received);
    if (!got.equals(expected)) {
      const gotId = got.length >= 5 ? got.readUInt32LE(1) : -1;
      return fail(`message ${received} mismatch: got ${got.length} bytes, first byte 0x${(got[0] || 0).toString(16)}, id ${gotId}; expected ${expected.length} bytes id ${received}`);
    }
    received++;
    if (verbose && received % 100 === 0) log(`verified ${received}`);
    if (received === count) return succeed();
    pump();
  });

  await client.connect(); // resolves after the MTU-probe loop (>= 1.5 s)
  if (!conn && !finished && client.state === 0) {
    fail('no open connection reply 1 from server after all MTU probes');
  }
}

main().catch((e) => fail(`error: ${e && e.stack || e}`));
void keepAlive;
