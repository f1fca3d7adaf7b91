#!/usr/bin/env node
// Interop server: a jsp-raknet Server bound to 127.0.0.1:PORT that echoes every
// application message back to its sender.
//
//   node jsp_echo_server.js PORT
//
// Prints "listening" on stdout once bound; exits 0 on SIGTERM/SIGINT.
// Echo reliability: 0/5 -> unreliable, 2/6 -> reliable, 3/7 -> reliable
// ordered (same channel); anything else, and reassembled split messages
// (jsp-raknet does not keep their reliability), -> reliable ordered.
//
// Note: stock jsp-raknet 2.2.0 shuts the WHOLE server down when any one
// connection times out or sends a disconnection notification
// (Connection.disconnect() calls Server.close()). So that the server can serve
// several test clients in a row, this script replaces that behaviour for
// server-side connections: only the affected connection is dropped. Set
// JSP_SERVER_STOCK_DISCONNECT=1 to keep the stock behaviour.
// JSP_VERBOSE=1 logs connections and traffic counts on stderr.
'use strict';

const { Server, Connection, EncapsulatedPacket, Reliability } = require('jsp-raknet');

const verbose = !!process.env.JSP_VERBOSE;
function log(...args) {
  if (verbose) console.error('jsp_echo_server:', ...args);
}

const portArg = process.argv[2];
const port = Number(portArg);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  process.stderr.write('usage: node jsp_echo_server.js PORT\n');
  process.exit(2);
}

if (!process.env.JSP_SERVER_STOCK_DISCONNECT) {
  const stockDisconnect = Connection.prototype.disconnect;
  Connection.prototype.disconnect = function (reason = 'unknown') {
    if (!(this.listener instanceof Server)) return stockDisconnect.call(this, reason);
    const server = this.listener;
    if (server.connections.get(this.address.hash) === this) {
      server.connections.delete(this.address.hash);
    }
    // On timeout tell the peer (sends an unreliable 0x15); when the peer
    // disconnected us there is nothing to answer.
    if (reason === 'timeout') {
      try { this.close(); } catch (e) { /* ignore */ }
    }
    this.state = 3; // Disconnected
    this.running = false;
    console.error(`jsp_echo_server: connection ${this.address.hash} closed (${reason})`);
  };
}

function echoReliability(r) {
  switch (r) {
    case Reliability.Unreliable:
    case Reliability.UnreliableWithAckReceipt:
      return Reliability.Unreliable;
    case Reliability.Reliable:
    case Reliability.ReliableWithAckReceipt:
      return Reliability.Reliable;
    default:
      return Reliability.ReliableOrdered;
  }
}

// Advertisement for unconnected pongs (uint16-length-prefixed string).
const advertisement = {
  serverId: '0',
  toString() {
    return `MCPE;librudp jsp echo;408;1.16.20;0;10;${this.serverId};jsp_echo_server;Creative;`;
  },
};

const server = new Server('127.0.0.1', port, advertisement);
let echoed = 0;

server.on('openConnection', (conn) => {
  console.error(`jsp_echo_server: connection ${conn.address.hash} open (mtu ${conn.mtuSize})`);
});

server.on('encapsulated', (packet, address) => {
  const conn = server.connections.get(address.hash);
  if (!conn) return;
  const reply = new EncapsulatedPacket();
  reply.reliability = echoReliability(packet.reliability);
  reply.orderChannel = reply.reliability === Reliability.ReliableOrdered ? (packet.orderChannel || 0) : 0;
  reply.buffer = Buffer.from(packet.buffer);
  conn.addEncapsulatedToQueue(reply);
  echoed++;
  if (verbose && echoed % 100 === 0) log(`echoed ${echoed}`);
});

server.on('close', () => {
  console.error('jsp_echo_server: server closed');
  process.exit(0);
});

let stopping = false;
function stop(sig) {
  if (stopping) return;
  stopping = true;
  log(`${sig}: shutting down (echoed ${echoed})`);
  server.close();
  setTimeout(() => process.exit(0), 1000).unref();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

process.on('uncaughtException', (e) => {
  // jsp-raknet throws from its socket/timer handlers on input it cannot parse.
  console.error('jsp_echo_server: uncaught exception (input jsp-raknet could not handle?):', e && e.stack || e);
  process.exit(1);
});

server.listen().then(() => {
  console.log('listening');
}, (e) => {
  console.error(`jsp_echo_server: cannot bind 127.0.0.1:${port}: ${e && e.message || e}`);
  process.exit(1);
});
