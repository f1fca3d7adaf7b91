#!/usr/bin/env node
// The peer side of one cell of the interop matrix: a RakNet library that
// nobody here wrote, acting as client or server against librudp
// (interop_rudp). run_cell.sh starts both.
//
//   node peer.js LIB ROLE SCENARIO [PORT] [options]
//     LIB       jsp (jsp-raknet) or rknode (raknet-node, rust-raknet inside)
//     ROLE      server (binds 127.0.0.1:0, prints "listening PORT GUID", GUID
//               "-" when the library does not expose it) or client (connects
//               to 127.0.0.1:PORT)
//     SCENARIO  ping handshake bulk unreliable keepalive disc-rudp disc-peer kill
//   options: --expect-pong TEXT   --expect-guid G   --idle MS   --deadline MS
//            --count N (bulk: messages, default 10,000; the librudp side always
//            expects 10,000, so only for echo servers such as rudp-echo)
//
// The message formats and scenario steps mirror interop_rudp.c (read its
// header comment); the bulk stream, the pattern bytes and the tags must stay
// identical in both files. Exits 0 when its half of the cell passed, 1 with
// "FAIL: reason" on stderr, 77 with "SKIP: reason" when the library cannot
// do what the cell needs.
'use strict';

let BULK_COUNT = 10000;
const BULK_MAX = 65536;
const BULK_OUTSTANDING = 64;
const UNREL_COUNT = 200;
const UNREL_MIN_PERCENT = 90;
const UNREL_SETTLE_MS = 200;

const argv = process.argv.slice(2);
const [libName, role, scenario] = argv;
let rest = argv.slice(3);
let port = 0;
if (role === 'client') {
  port = Number(rest[0]);
  rest = rest.slice(1);
}
const opts = { expectPong: null, expectGuid: null, idle: 0, deadline: 60000 };
for (let i = 0; i < rest.length; i += 2) {
  const v = rest[i + 1];
  if (v === undefined) usage(`option ${rest[i]} needs a value`);
  if (rest[i] === '--expect-pong') opts.expectPong = v;
  else if (rest[i] === '--expect-guid') opts.expectGuid = BigInt(v);
  else if (rest[i] === '--idle') opts.idle = Number(v);
  else if (rest[i] === '--deadline') opts.deadline = Number(v);
  else if (rest[i] === '--count') BULK_COUNT = Number(v);
  else usage(`unknown option ${rest[i]}`);
}
const SCENARIOS = ['ping', 'handshake', 'bulk', 'unreliable', 'keepalive', 'disc-rudp', 'disc-peer', 'kill'];
if (!['jsp', 'rknode'].includes(libName) || !['client', 'server'].includes(role) || !SCENARIOS.includes(scenario)) {
  usage();
}
if (role === 'client' && !(Number.isInteger(port) && port > 0 && port < 65536)) usage('bad PORT');

function usage(msg) {
  if (msg) process.stderr.write(`peer.js: ${msg}\n`);
  process.stderr.write('usage: node peer.js jsp|rknode client|server SCENARIO [PORT] [options]\n');
  process.exit(2);
}

const tag = `peer ${libName} ${role}`;
function note(msg) {
  process.stdout.write(`${tag}: ${msg}\n`);
}
let exiting = false;
function fail(msg) {
  if (exiting) return;
  exiting = true;
  process.stderr.write(`${tag}: FAIL: ${msg}\n`);
  process.exit(1);
}
function pass(msg) {
  if (exiting) return;
  exiting = true;
  note(`PASS${msg ? ` (${msg})` : ''}`);
  // Let the library's last datagrams (acks, a disconnect) leave first.
  setTimeout(() => process.exit(0), 300);
}
process.on('uncaughtException', (e) => fail(`uncaught exception: ${(e && e.stack) || e}`));
process.on('unhandledRejection', (e) => fail(`unhandled rejection: ${(e && e.stack) || e}`));
setTimeout(() => fail(`scenario ${scenario} did not finish in ${opts.deadline} ms`), opts.deadline).unref();
// Keeps the process alive while a library has nothing scheduled.
setInterval(() => {}, 1 << 30);

// ---- messages (identical to interop_rudp.c) ----
function bulkSize(i) {
  if (i % 4000 === 1000) return BULK_MAX - Math.floor(i / 4000) * 22000;
  if (i % 100 === 50) return 1000 + ((i * 37) % 4200);
  return 1 + ((i * 13) % 100);
}
function bulkMessage(i) {
  const n = bulkSize(i);
  const b = Buffer.allocUnsafe(n);
  b[0] = 0xfe;
  for (let j = 1; j < n; j++) b[j] = (i * 131 + j * 7 + (j >> 8)) & 0xff;
  return b;
}
const patternByte = (seed, j) => (seed * 17 + j * 11 + 5) & 0xff;
function tagged(tagChar, head, len, seed) {
  const t = tagChar.charCodeAt(0);
  const n = Math.max(len, 2 + head.length);
  const b = Buffer.allocUnsafe(n);
  b[0] = 0xfe;
  b[1] = t;
  head.copy(b, 2);
  for (let j = 2 + head.length; j < n; j++) b[j] = patternByte(seed === undefined ? t : seed, j);
  return b;
}
function patternOk(b, from, seed) {
  for (let j = from; j < b.length; j++) if (b[j] !== patternByte(seed, j)) return false;
  return true;
}
const u32 = (v) => {
  const h = Buffer.alloc(4);
  h.writeUInt32LE(v >>> 0);
  return h;
};

// ---- adapters: each turns a library into { send(buf, reliable), close(), mtu, canUnreliable } ----
// and calls hooks.connect(link), hooks.message(buf, reliabilityOrNull), hooks.closed(reason).
// jsp-raknet reports reliability 0 for a reassembled split message; the
// scenarios check the reliability only of messages too small to be split.

function jspAdapter(hooks) {
  const raknet = require('jsp-raknet');
  const { Server, Client, Connection, EncapsulatedPacket, Reliability } = raknet;
  const mkLink = (conn, closeFn) => ({
    mtu: conn.mtuSize,
    canUnreliable: true,
    send(buf, reliable) {
      const pk = new EncapsulatedPacket();
      pk.reliability = reliable ? Reliability.ReliableOrdered : Reliability.Unreliable;
      pk.orderChannel = 0;
      pk.buffer = buf;
      conn.addEncapsulatedToQueue(pk);
    },
    close: closeFn,
  });
  return {
    async ping(host, p) {
      const client = new Client(host, p);
      try {
        return await new Promise((resolve, reject) => {
          const t = setTimeout(() => reject(new Error('no pong in 5 s')), 5000);
          client.ping((serverName, guid) => {
            clearTimeout(t);
            resolve({ text: serverName, guid: BigInt.asUintN(64, BigInt(guid)) });
          });
        });
      } finally {
        client.close('ping done');
      }
    },
    async serve(advert) {
      // Stock jsp-raknet 2.2.0 shuts the whole Server down when one
      // connection ends (Connection.disconnect() calls Server.close()); a
      // server that outlives its clients drops only that connection.
      const stock = Connection.prototype.disconnect;
      Connection.prototype.disconnect = function (reason = 'unknown') {
        if (!(this.listener instanceof Server)) return stock.call(this, reason);
        const srv = this.listener;
        if (srv.connections.get(this.address.hash) === this) srv.connections.delete(this.address.hash);
        if (this.state !== 3) {
          this.state = 3;
          this.running = false;
          hooks.closed(reason);
        }
      };
      const ad = { toString: () => advert };
      const server = new Server('127.0.0.1', 0, ad);
      await server.listen();
      server.on('openConnection', (conn) => {
        hooks.connect(
          mkLink(conn, () => {
            // Connection.close() sends 0x15 (unreliable, as jsp-raknet does)
            // but leaves the connection in the table; drop it there too.
            conn.close();
            server.connections.delete(conn.address.hash);
          })
        );
      });
      server.on('encapsulated', (packet) => hooks.message(packet.buffer, packet.reliability));
      return { port: server.socket.address().port, guid: BigInt.asUintN(64, server.serverId).toString() };
    },
    async connect(host, p) {
      const client = new Client(host, p);
      let connected = false;
      client.on('connected', (conn) => {
        if (connected) return;
        connected = true;
        hooks.connect(mkLink(conn, () => client.close('done')));
      });
      client.on('encapsulated', (packet) => hooks.message(packet.buffer, packet.reliability));
      client.on('disconnect', (reason) => hooks.closed(reason));
      client.on('error', (e) => fail(`jsp-raknet client error: ${e}`));
      await client.connect(); // returns after the MTU probe loop
      if (!connected && client.state === 0) fail('no open connection reply 1 after all MTU probes');
    },
  };
}

function rknodeAdapter(hooks) {
  const { RaknetClient, RaknetServer } = require('raknet-node');
  const mkLink = (sock) => {
    let chain = Promise.resolve();
    return {
    // raknet-node does not expose the MTU it negotiated.
    mtu: 0,
    // RaknetClient.send() always sends ReliableOrdered (the binding
    // hard-codes it); there is no way to send unreliable.
    canUnreliable: false,
    send(buf) {
      // Each send() is a native async task; two in flight may reach
      // rust-raknet's queue in either order, so they go one at a time. The
      // binding reads the Buffer on its own thread after send() returned
      // without holding it: unless JavaScript keeps it alive until the
      // promise settles, V8's garbage collector frees or moves it under the
      // native code (seen as "Check failed: Heap::InFromPage" aborts).
      chain = chain
        .then(() => sock.send(buf))
        .then(() => buf.length, (e) => fail(`raknet-node send of ${buf.length} bytes: ${e}`));
    },
    close() {
      chain = chain.then(() => sock.close()).catch(() => {});
    },
    };
  };
  const recvLoop = (sock) => {
    sock.recv().then(
      (buf) => {
        // rust-raknet does not tell the reliability of what it delivers.
        hooks.message(buf, null);
        recvLoop(sock);
      },
      (e) => hooks.closed(`${e && e.message ? e.message : e}`)
    );
  };
  return {
    async ping(host, p) {
      // Returns the pong's string (rust-raknet decodes the uint16-length
      // string itself) and not the guid.
      const text = await RaknetClient.ping(`${host}:${p}`);
      return { text, guid: null };
    },
    async serve() {
      const server = await RaknetServer.bind('127.0.0.1:0');
      const local = await server.localaddr();
      (async () => {
        for (;;) {
          let sock;
          try {
            sock = await server.accept();
          } catch (e) {
            return;
          }
          hooks.connect(mkLink(sock));
          recvLoop(sock);
        }
      })();
      return { port: Number(local.split(':').pop()), guid: '-' };
    },
    async connect(host, p) {
      const sock = await RaknetClient.connect(`${host}:${p}`);
      hooks.connect(mkLink(sock));
      recvLoop(sock);
    },
  };
}

// ---- the scenarios (peer half) ----
const st = {
  link: null,
  connectedAt: 0,
  done: false,
  sent: 0,
  got: 0,
  gotM: false,
  gotB: false,
  seen: new Uint8Array(UNREL_COUNT),
  unrelGot: 0,
  unrelExpected: 0,
  peerCannot: false,
  sentBurst: 0,
  gotReport: false,
  hello: false,
};

function markDone(why) {
  if (st.done) return;
  st.done = true;
  note(why);
  if (role === 'client') {
    // The client ends the connection; give our last messages a moment.
    setTimeout(() => {
      st.closing = true;
      st.link.close();
      pass();
    }, 300);
  } else {
    // A server waits for librudp to close (it does once it has all).
    setTimeout(() => pass('librudp client did not close within 3 s; ending'), 3000);
  }
}

function pumpBulk() {
  while (st.sent < BULK_COUNT && st.sent - st.got < BULK_OUTSTANDING) {
    st.link.send(bulkMessage(st.sent), true);
    st.sent++;
  }
}

function sendBurst() {
  const link = st.link;
  if (!link.canUnreliable) {
    link.send(tagged('E', Buffer.concat([u32(0), Buffer.from([1])]), 7), true);
    note('cannot send unreliable messages (raknet-node\'s send() is always ReliableOrdered); sent none');
    return;
  }
  let id = 0;
  // 20 messages per 10 ms: paced so that no socket buffer overflows.
  const step = () => {
    for (let k = 0; k < 20 && id < UNREL_COUNT; k++, id++) {
      link.send(tagged('U', u32(id), 50 + ((id * 29) % 400), id), false);
    }
    if (id < UNREL_COUNT) return setTimeout(step, 10);
    link.send(tagged('E', Buffer.concat([u32(UNREL_COUNT), Buffer.from([0])]), 7), true);
    st.sentBurst = UNREL_COUNT;
    note(`sent ${UNREL_COUNT} unreliable messages`);
  };
  step();
}

function judgeBurst() {
  st.link.send(tagged('R', u32(st.unrelGot), 6), true);
  note(`received ${st.unrelGot}/${st.unrelExpected} unreliable messages from librudp`);
  if (st.unrelExpected !== UNREL_COUNT) return fail(`librudp announced ${st.unrelExpected} messages`);
  if (st.unrelGot * 100 < st.unrelExpected * UNREL_MIN_PERCENT) {
    return fail(`only ${st.unrelGot} of ${st.unrelExpected} unreliable messages arrived`);
  }
  if (role === 'server') sendBurst();
  else if (st.gotReport) markDone('unreliable exchange complete');
}

const hooks = {
  connect(link) {
    if (st.link) return fail('a second connection');
    st.link = link;
    st.connectedAt = Date.now();
    note(`connected (mtu ${link.mtu || 'not exposed'})`);
    switch (scenario) {
      case 'handshake': {
        const mtu = link.mtu || 0;
        const room = (mtu || 1200) - 60;
        link.send(tagged('M', Buffer.from([mtu & 0xff, mtu >> 8]), room, 'M'.charCodeAt(0)), true);
        link.send(tagged('B', Buffer.alloc(0), 3 * (mtu || 1200)), true);
        break;
      }
      case 'bulk':
        if (role === 'client') pumpBulk();
        break;
      case 'unreliable':
        if (role === 'client') sendBurst();
        break;
      default:
        if (role === 'client') link.send(tagged('H', Buffer.alloc(0), 16), true);
    }
  },
  message(buf, rel) {
    if (exiting) return;
    if (!buf.length || buf[0] !== 0xfe) return fail(`message of ${buf.length} bytes without the 0xfe id`);
    if (scenario === 'bulk') {
      if (st.got >= BULK_COUNT) return fail(`extra bulk message of ${buf.length} bytes`);
      const want = bulkMessage(st.got);
      if (!buf.equals(want)) {
        return fail(`bulk message ${st.got}: got ${buf.length} bytes, expected ${want.length} (or content differs)`);
      }
      st.got++;
      if (role === 'server') {
        st.link.send(buf, true);
        st.sent++;
      } else pumpBulk();
      if (st.got === BULK_COUNT) markDone(`verified ${st.got}/${BULK_COUNT} bulk messages in order`);
      return;
    }
    if (buf.length < 2) return fail(`message of ${buf.length} bytes`);
    const t = String.fromCharCode(buf[1]);
    switch (t) {
      case 'H':
        st.hello = true;
        if (role === 'server') st.link.send(buf, true);
        if (scenario === 'keepalive' && role === 'client') {
          note(`idle for ${opts.idle} ms`);
          setTimeout(() => st.link.send(tagged('A', Buffer.alloc(0), 16), true), opts.idle);
        }
        if (scenario === 'disc-peer') {
          setTimeout(() => {
            note('closing');
            st.closing = true;
            st.link.close();
            // The close is what librudp checks; stay a moment so that a
            // library that sends its notification on a timer gets it out.
            setTimeout(() => pass('closed'), 1000);
          }, 100);
        }
        break;
      case 'A':
        if (role === 'server') {
          st.link.send(buf, true);
          const idle = Date.now() - st.connectedAt;
          if (idle < opts.idle) return fail(`librudp did not stay idle (${idle} ms)`);
        }
        markDone('message after the idle time arrived');
        break;
      case 'M': {
        if (buf.length < 4 || !patternOk(buf, 4, 'M'.charCodeAt(0))) return fail(`bad 'M' message (${buf.length} bytes)`);
        const theirs = buf[2] | (buf[3] << 8);
        if (st.link.mtu && theirs !== st.link.mtu) return fail(`MTU disagreement: librudp ${theirs}, peer ${st.link.mtu}`);
        note(`librudp reports MTU ${theirs}; ours ${st.link.mtu || 'not exposed'}; its ${buf.length}-byte message arrived`);
        st.gotM = true;
        break;
      }
      case 'B':
        if (buf.length < 1000 || !patternOk(buf, 2, 'B'.charCodeAt(0))) return fail(`bad 'B' message (${buf.length} bytes)`);
        st.gotB = true;
        break;
      case 'U': {
        if (rel !== null && rel !== 0) return fail(`'U' message arrived with reliability ${rel}`);
        const id = buf.readUInt32LE(2);
        if (id >= UNREL_COUNT || buf.length !== 50 + ((id * 29) % 400) || !patternOk(buf, 6, id)) {
          return fail(`bad unreliable message ${id} (${buf.length} bytes)`);
        }
        if (st.seen[id]) return fail(`unreliable message ${id} delivered twice`);
        st.seen[id] = 1;
        st.unrelGot++;
        break;
      }
      case 'E':
        st.unrelExpected = buf.readUInt32LE(2);
        setTimeout(judgeBurst, UNREL_SETTLE_MS);
        break;
      case 'R': {
        const r = buf.readUInt32LE(2);
        note(`librudp received ${r}/${st.sentBurst} of our unreliable messages`);
        if (r * 100 < st.sentBurst * UNREL_MIN_PERCENT) return fail(`librudp received only ${r} of ${st.sentBurst}`);
        st.gotReport = true;
        if (role === 'server') markDone('unreliable exchange complete');
        break;
      }
      default:
        return fail(`unexpected message tag 0x${buf[1].toString(16)}`);
    }
    if (scenario === 'handshake' && st.gotM && st.gotB) markDone('MTU-sized and split messages arrived');
  },
  closed(reason) {
    if (exiting) return;
    note(`connection closed (${reason})`);
    if (scenario === 'disc-rudp') {
      if (!st.hello) return fail('closed before the hello exchange');
      return pass('saw librudp\'s graceful close');
    }
    if (st.closing) return; // our own close
    if (st.done) return pass();
    fail(`connection closed (${reason}) before the scenario finished`);
  },
};

async function main() {
  const lib = libName === 'jsp' ? jspAdapter(hooks) : rknodeAdapter(hooks);
  if (role === 'server') {
    const advert = `MCPE;jsp-raknet interop peer;594;1.20.0;0;10;0;interop;Survival;`;
    const { port: p, guid } = await lib.serve(advert);
    process.stdout.write(`listening ${p} ${guid}\n`);
    if (scenario === 'ping') {
      // Serves pongs until run_cell.sh stops it.
      process.on('SIGTERM', () => pass('served pings'));
    }
    return;
  }
  if (scenario === 'ping') {
    for (let i = 0; i < 3; i++) {
      const t0 = process.hrtime.bigint();
      const { text, guid } = await lib.ping('127.0.0.1', port);
      const us = Number((process.hrtime.bigint() - t0) / 1000n);
      note(`pong ${i}: guid ${guid === null ? 'not exposed' : guid}, ${us} us, data "${text}"`);
      if (opts.expectPong && !String(text).includes(opts.expectPong)) return fail(`pong data lacks "${opts.expectPong}"`);
      if (opts.expectGuid !== null && guid !== null && guid !== opts.expectGuid) {
        return fail(`pong guid ${guid}, expected ${opts.expectGuid}`);
      }
    }
    return pass();
  }
  // jsp-raknet writes the server address of request 2 by splitting the host
  // string on '.', so it is given the IPv4 literal.
  await lib.connect('127.0.0.1', port);
}

main().catch((e) => fail(`${(e && e.stack) || e}`));
