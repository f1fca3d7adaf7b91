// SPDX-License-Identifier: MIT

// rudp-bench-quic is the quic-go column of rudp-bench: one bidirectional
// stream per connection, TLS 1.3, congestion and flow control left on. It
// speaks the echo protocol of bench/bench.h (a 4-byte LE length before each
// message on the stream) and verifies every echo the same way the C
// drivers do: length, marker, connection id, message id in order, tag and
// XXH3 (libxxhash through cgo, the very function the C side uses).
//
// It is started by rudp-bench with the arguments of `rudp-bench server` and
// `rudp-bench client`, and prints the same RESULT line. Built offline
// against Debian's quic-go (GO111MODULE=off GOPATH=/usr/share/gocode).
//
// The server runs --workers listeners, each on its own UDP socket bound to
// the same address with SO_REUSEPORT: the kernel keeps each client's
// 4-tuple on one socket, so a QUIC connection lives in one listener.
//
// Path rows (--workload path) may add a game stream on connection 0
// (--game-hz, --game-size). It goes in-band on that connection's one
// stream, both its unreliable-sequenced and reliable-ordered messages
// (byte [1] of a message says which), as bench.h describes. A stream row
// (--workload stream) is that game stream alone, reliable-ordered only,
// --messages ticks of it after the warm-up.
package main

/*
#cgo LDFLAGS: -lxxhash
#include <stdint.h>
#include <stddef.h>
#include <xxhash.h>
static uint64_t bench_hash(const void *m, size_t len)
{
	return XXH3_64bits_withSeed((const uint8_t *)m + 32, len - 32, XXH3_64bits(m, 24));
}
*/
import "C"

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	quic "github.com/lucas-clemente/quic-go"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

const (
	hdr     = 40
	mark    = 0xfe
	maxSize = 1 << 20
)

var epoch = time.Now()

// monoBase is CLOCK_MONOTONIC at epoch: nowNs reads the clock the C side
// and rudp-bench read (Go's monotonic time is that clock), so the burst's
// bounds on the RESULT line line up with the probe's samples.
var monoBase = func() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return uint64(ts.Sec)*1e9 + uint64(ts.Nsec)
}()

func nowNs() uint64 { return monoBase + uint64(time.Since(epoch).Nanoseconds()) }

func hash(m []byte) uint64 {
	return uint64(C.bench_hash(unsafe.Pointer(&m[0]), C.size_t(len(m))))
}

func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Message streams (byte [1]): the workload's, then the game's two.
const (
	streamBulk       = 0
	streamUnreliable = 1
	streamReliable   = 2
)

func tag(c, id uint32, stream byte) uint64 {
	t := mix64(uint64(c)<<32 | uint64(id))
	if stream != streamBulk {
		t = mix64(t + uint64(stream))
	}
	return t
}

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "rudp-bench: quic-go client FAILED: "+format+"\n", a...)
	os.Exit(1)
}

func tlsConfig() *tls.Config {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rudp-bench"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"rudp-bench"}}
}

// dialAttemptsMax bounds dial's retries after a refusal: with 10, 20, ...
// ms between attempts, 20 attempts wait 1.9 s in all.
const dialAttemptsMax = 20

// dial connects, and tries again, after a pause that grows, when the
// server refuses the handshake: quic-go's server answers CONNECTION_REFUSED
// while 32 handshaken connections wait for its Accept, which a server
// busy with a thousand handshakes on one CPU can fall behind on, and the
// client here dials every connection at once. Any other error, or a
// refusal after dialAttemptsMax attempts, is returned.
func dial(addr string, tlsc *tls.Config) (quic.Connection, error) {
	for attempt := 1; ; attempt++ {
		qc, err := quic.DialAddr(addr, tlsc, quicConfig())
		var te *quic.TransportError
		if err == nil || !errors.As(err, &te) || te.ErrorCode != quic.ConnectionRefused ||
			attempt == dialAttemptsMax {
			return qc, err
		}
		time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
	}
}

func quicConfig() *quic.Config {
	return &quic.Config{
		HandshakeIdleTimeout: 30 * time.Second,
		MaxIdleTimeout:       60 * time.Second,
		MaxIncomingStreams:   16,
	}
}

// workerConn is one worker's SO_REUSEPORT socket as quic-go sees it.
// quic-go 0.29 keeps one packet reader per local address string (its
// connection multiplexer), so a second listener on the same address would
// be handed the first socket's reader and its own socket would never be
// read. A per-worker zone on the reported IPv4 address ("127.0.0.1%w1")
// makes the addresses distinct; the zone is used for nothing else (packets
// go out with WriteMsgUDP to the peer's address). The methods quic-go uses
// for its fast path (ReadMsgUDP, WriteMsgUDP, SyscallConn, SetReadBuffer)
// are the socket's own; ReadBatch is what quic-go would build for it.
type workerConn struct {
	*net.UDPConn
	local *net.UDPAddr
	batch *ipv4.PacketConn
}

func (c *workerConn) LocalAddr() net.Addr { return c.local }

func (c *workerConn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	return c.batch.ReadBatch(ms, flags)
}

func reusePort(network, address string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}

type workerStats struct {
	conns, echoes int64
}

func listen(bind string, workers int) []quic.Listener {
	tlsc, qc := tlsConfig(), quicConfig()
	if workers == 1 {
		ln, err := quic.ListenAddr(bind, tlsc, qc)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rudp-bench: quic-go server: %v\n", err)
			os.Exit(1)
		}
		return []quic.Listener{ln}
	}
	lc := net.ListenConfig{Control: reusePort}
	lns := make([]quic.Listener, workers)
	for i := range lns {
		pc, err := lc.ListenPacket(context.Background(), "udp", bind)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rudp-bench: quic-go server: worker %d: %v\n", i, err)
			os.Exit(1)
		}
		udp := pc.(*net.UDPConn)
		la := *udp.LocalAddr().(*net.UDPAddr)
		la.Zone = fmt.Sprintf("w%d", i)
		wc := &workerConn{UDPConn: udp, local: &la, batch: ipv4.NewPacketConn(udp)}
		if lns[i], err = quic.Listen(wc, tlsc, qc); err != nil {
			fmt.Fprintf(os.Stderr, "rudp-bench: quic-go server: worker %d: %v\n", i, err)
			os.Exit(1)
		}
	}
	return lns
}

// summary is the line rudp-bench reads from the ready pipe at exit.
func summary(st []workerStats) string {
	c, e := make([]string, len(st)), make([]string, len(st))
	for i := range st {
		c[i] = fmt.Sprint(atomic.LoadInt64(&st[i].conns))
		e[i] = fmt.Sprint(atomic.LoadInt64(&st[i].echoes))
	}
	return fmt.Sprintf("served workers=%d conns=%s echoes=%s hwm_kib=%d\n", len(st), strings.Join(c, ","),
		strings.Join(e, ","), hwmKiB())
}

// hwmKiB is this process's peak resident set (VmHWM), -1 if unknown:
// rudp-bench prefers it to wait4's ru_maxrss, which also counts the
// launcher's pages held between fork and exec.
func hwmKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			var v int64
			if _, err := fmt.Sscanf(strings.TrimSpace(l[6:]), "%d", &v); err == nil {
				return v
			}
		}
	}
	return -1
}

func server(bind string, readyFd, workers int) {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	lns := listen(bind, workers)
	st := make([]workerStats, workers)
	var ready *os.File
	if readyFd >= 0 {
		ready = os.NewFile(uintptr(readyFd), "ready")
		ready.Write([]byte("ready\n"))
	}
	for i, ln := range lns {
		go serve(ln, &st[i])
	}
	<-stop
	if ready != nil {
		ready.Write([]byte(summary(st)))
		ready.Close()
	} else {
		fmt.Fprint(os.Stderr, "rudp-bench: "+summary(st))
	}
	os.Exit(0)
}

func serve(ln quic.Listener, st *workerStats) {
	for {
		conn, err := ln.Accept(context.Background())
		if err != nil {
			return
		}
		atomic.AddInt64(&st.conns, 1)
		go func() {
			for {
				s, err := conn.AcceptStream(context.Background())
				if err != nil {
					return
				}
				go echo(s, &st.echoes)
			}
		}()
	}
}

// echo writes each whole record back with one Write, as the TCP column does.
func echo(st quic.Stream, echoes *int64) {
	buf := make([]byte, 4+maxSize)
	for {
		if _, err := io.ReadFull(st, buf[:4]); err != nil {
			return
		}
		n := binary.LittleEndian.Uint32(buf)
		if n > maxSize {
			return
		}
		if _, err := io.ReadFull(st, buf[4:4+n]); err != nil {
			return
		}
		if _, err := st.Write(buf[:4+n]); err != nil {
			return
		}
		atomic.AddInt64(echoes, 1)
	}
}

type params struct {
	kind                                 string
	size, conns, window, warmup, samples uint32
	messages                             uint64
	stallMs                              uint32
	fault                                string
	gameHz, gameSize                     uint32
}

// gameStream is one of the game's two streams on connection 0.
type gameStream struct {
	sent, received uint32 // sent: under the connection's write lock
	next           uint32 // reliable: the id due next; sequenced: one past the newest seen
	rtt            []float32
	slot           []byte
}

type conn struct {
	id         uint32
	slots      []byte
	slotBytes  uint32
	sent, done uint32 // done: atomic (the first connection to finish reads everyone's)
	pre, total uint32
	connectNs  uint64
	rtt        []float32
	endNs      uint64
	faultAt    uint32
	held       []byte
	holding    bool
	fault      string
	wmu        sync.Mutex // one writer at a time on the stream: the workload's and the game's
	game       [2]gameStream
}

var progress int64

func fill(slot []byte, c, id, size uint32, stream byte, sentAt uint64) {
	m := slot[4:]
	binary.LittleEndian.PutUint32(slot, size)
	m[0], m[1], m[2], m[3] = mark, stream, 0, 0
	binary.LittleEndian.PutUint32(m[4:], c)
	binary.LittleEndian.PutUint32(m[8:], id)
	binary.LittleEndian.PutUint32(m[12:], size)
	binary.LittleEndian.PutUint64(m[16:], sentAt)
	binary.LittleEndian.PutUint64(m[32:], tag(c, id, stream))
	binary.LittleEndian.PutUint64(m[24:], hash(m))
}

func (k *conn) build(p *params, id uint32) []byte {
	slot := k.slots[(id%p.window)*k.slotBytes : (id%p.window+1)*k.slotBytes]
	fill(slot, k.id, id, p.size, streamBulk, nowNs())
	return slot
}

// write puts one record on the stream, after any other writer's.
func (k *conn) write(st quic.Stream, rec []byte) {
	k.wmu.Lock()
	_, err := st.Write(rec)
	k.wmu.Unlock()
	if err != nil {
		fail("write: %v", err)
	}
}

// gameTicks writes the game's two messages every tick, stamped with the
// tick's time, until stop closes; a tick it is late for is still sent
// (catching up), so waiting behind the workload's writes counts.
func (k *conn) gameTicks(p *params, st quic.Stream, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	period := time.Second / time.Duration(p.gameHz)
	next := nowNs()
	for {
		if wait := int64(next) - int64(nowNs()); wait > 0 {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(wait)):
			}
		}
		select {
		case <-stop:
			return
		default:
		}
		k.wmu.Lock()
		for i := range k.game {
			if p.kind == "stream" && i == 0 {
				continue // a stream row's ticks carry the reliable-ordered message only
			}
			g := &k.game[i]
			fill(g.slot, k.id, g.sent, p.gameSize, byte(streamUnreliable+i), next)
			if _, err := st.Write(g.slot); err != nil {
				k.wmu.Unlock()
				fail("write: %v", err)
			}
			g.sent++
		}
		done := p.kind == "stream" && uint64(k.game[1].sent) >= p.messages
		k.wmu.Unlock()
		if done {
			return
		}
		next += uint64(period)
	}
}

func (k *conn) verifyGame(p *params, m []byte, stream byte) {
	g := &k.game[stream-streamUnreliable]
	name := map[byte]string{streamUnreliable: "unreliable-sequenced", streamReliable: "reliable"}[stream]
	if p.gameHz == 0 || k.id != 0 {
		fail("connection %d: a game message where no game stream runs", k.id)
	}
	if uint32(len(m)) != p.gameSize || m[0] != mark || binary.LittleEndian.Uint32(m[12:]) != p.gameSize ||
		binary.LittleEndian.Uint32(m[4:]) != k.id {
		fail("game %s message after %d: %d B, header corrupted", name, g.next, len(m))
	}
	id := binary.LittleEndian.Uint32(m[8:])
	k.wmu.Lock()
	sent := g.sent
	k.wmu.Unlock()
	if id >= sent || id < g.next || (stream == streamReliable && id != g.next) {
		fail("game %s message %d arrived where %d was due (lost, reordered or duplicated)", name, id, g.next)
	}
	if binary.LittleEndian.Uint64(m[32:]) != tag(k.id, id, stream) || binary.LittleEndian.Uint64(m[24:]) != hash(m) {
		fail("game %s message %d: payload hash mismatch", name, id)
	}
	rtt := float32(float64(nowNs()-binary.LittleEndian.Uint64(m[16:])) / 1000.0)
	g.rtt = append(g.rtt, rtt)
	if p.kind == "stream" {
		k.rtt = append(k.rtt, rtt) // a stream row's RTT figures are its messages'
	}
	g.next = id + 1
	g.received++
	atomic.AddInt64(&progress, 1)
}

func (k *conn) verify(p *params, m []byte) {
	if len(m) > 1 && m[1] != streamBulk {
		if m[1] != streamUnreliable && m[1] != streamReliable {
			fail("connection %d: message of unknown stream %d", k.id, m[1])
		}
		k.verifyGame(p, m, m[1])
		return
	}
	want := k.done
	if uint32(len(m)) != p.size {
		fail("connection %d message %d: echo of %d B, expected %d B", k.id, want, len(m), p.size)
	}
	if m[0] != mark || binary.LittleEndian.Uint32(m[12:]) != p.size {
		fail("connection %d message %d: header corrupted", k.id, want)
	}
	if c := binary.LittleEndian.Uint32(m[4:]); c != k.id {
		fail("connection %d: received connection %d's message", k.id, c)
	}
	id := binary.LittleEndian.Uint32(m[8:])
	if id != want {
		fail("connection %d: message %d arrived where %d was due (lost, reordered or duplicated)", k.id, id, want)
	}
	if binary.LittleEndian.Uint64(m[32:]) != tag(k.id, id, streamBulk) || binary.LittleEndian.Uint64(m[24:]) != hash(m) {
		fail("connection %d message %d: payload hash mismatch", k.id, id)
	}
	now := nowNs()
	sample := (id >= p.warmup && id < k.pre) || (id >= k.pre && (p.kind == "many" || p.kind == "loaded"))
	if sample {
		k.rtt = append(k.rtt, float32(float64(now-binary.LittleEndian.Uint64(m[16:]))/1000.0))
	}
	atomic.AddUint32(&k.done, 1)
	k.endNs = now
	atomic.AddInt64(&progress, 1)
}

// deliver applies the test-only fault on connection 0, then verifies.
func (k *conn) deliver(p *params, m []byte) {
	if k.id == 0 && k.fault != "" && (len(m) < 2 || m[1] == streamBulk) {
		if k.holding {
			k.holding = false
			k.verify(p, m)
			k.verify(p, k.held)
			return
		}
		if k.done == k.faultAt {
			f := k.fault
			k.fault = ""
			switch f {
			case "drop":
				return
			case "reorder":
				k.held = append([]byte(nil), m...)
				k.holding = true
				k.fault = "reorder"
				return
			case "corrupt":
				c := append([]byte(nil), m...)
				c[len(c)-1] ^= 1
				k.verify(p, c)
				return
			}
		}
	}
	k.verify(p, m)
}

func readRecord(st quic.Stream, buf []byte, p *params) []byte {
	if _, err := io.ReadFull(st, buf[:4]); err != nil {
		fail("read: %v", err)
	}
	n := binary.LittleEndian.Uint32(buf)
	if n > uint32(len(buf)-4) || n < 1 {
		fail("bad record length %d", n)
	}
	if _, err := io.ReadFull(st, buf[4:4+n]); err != nil {
		fail("read: %v", err)
	}
	return buf[4 : 4+n]
}

func percentile(v []float32, q float64) float64 {
	if len(v) == 0 {
		return -1
	}
	return float64(v[int(q*float64(len(v)-1)+0.5)])
}

func client(addr string, p *params) {
	conns := make([]*conn, p.conns)
	// Each connection's verified burst messages when the first finished
	// its burst (Jain's index on path rows).
	firstBurst := make([]uint32, p.conns)
	var firstDone sync.Once
	var ready, finished sync.WaitGroup
	start := make(chan struct{})
	var burstStart uint64
	ready.Add(int(p.conns))
	finished.Add(int(p.conns))
	tlsc := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"rudp-bench"}}
	go func() {
		last, lastNs := int64(-1), nowNs()
		for {
			time.Sleep(100 * time.Millisecond)
			cur := atomic.LoadInt64(&progress)
			if cur != last {
				last, lastNs = cur, nowNs()
			} else if nowNs()-lastNs > uint64(p.stallMs)*1e6 {
				fail("stalled: no verified echo for %d ms (%d verified)", p.stallMs, cur)
			}
		}
	}()
	bulk := p.messages
	if p.kind == "stream" {
		bulk = 0 // a stream row's messages are its ticks
	}
	for i := uint32(0); i < p.conns; i++ {
		share := bulk / uint64(p.conns)
		if uint64(i) < bulk%uint64(p.conns) {
			share++
		}
		k := &conn{id: i, slotBytes: 4 + p.size, pre: p.warmup + p.samples}
		k.total = k.pre + uint32(share)
		k.slots = make([]byte, p.window*k.slotBytes)
		rand.Read(k.slots)
		if share >= 2 {
			k.faultAt = k.pre + uint32(share)/2
		} else {
			k.faultAt = k.pre / 2
		}
		k.fault = p.fault
		for g := range k.game {
			k.game[g].slot = make([]byte, 4+p.gameSize)
			rand.Read(k.game[g].slot)
		}
		conns[i] = k
		go func(k *conn) {
			defer finished.Done()
			t0 := nowNs()
			qc, err := dial(addr, tlsc)
			if err != nil {
				fail("dial %s: %v", addr, err)
			}
			st, err := qc.OpenStreamSync(context.Background())
			if err != nil {
				fail("open stream: %v", err)
			}
			k.connectNs = nowNs() - t0
			maxSize := p.size
			if p.gameSize > maxSize {
				maxSize = p.gameSize
			}
			buf := make([]byte, 4+maxSize+1)
			for k.sent < k.pre { // sequential: warm-up, then RTT samples
				k.write(st, k.build(p, k.sent))
				k.sent++
				k.deliver(p, readRecord(st, buf, p))
			}
			ready.Done()
			<-start
			var stopGame, gameDone chan struct{}
			if p.gameHz > 0 && k.id == 0 {
				stopGame, gameDone = make(chan struct{}), make(chan struct{})
				go k.gameTicks(p, st, stopGame, gameDone)
			}
			sem := make(chan struct{}, p.window)
			go func() {
				for id := k.pre; id < k.total; id++ {
					sem <- struct{}{}
					k.write(st, k.build(p, id))
				}
			}()
			for atomic.LoadUint32(&k.done) < k.total {
				before := k.done
				k.deliver(p, readRecord(st, buf, p))
				if k.done != before { // a game echo frees no window
					<-sem
				}
			}
			firstDone.Do(func() {
				for i, c := range conns {
					if d := atomic.LoadUint32(&c.done); d > c.pre {
						firstBurst[i] = d - c.pre
					}
				}
			})
			if p.kind == "stream" && stopGame != nil {
				// The ticks stop by themselves after the row's count;
				// each is echoed in-band, after the ones before it.
				for uint64(k.game[1].received) < p.messages {
					k.deliver(p, readRecord(st, buf, p))
				}
				<-gameDone
			} else if stopGame != nil {
				// The ticks stop with the workload; every game message
				// sent is echoed in-band, after the ones before it.
				close(stopGame)
				<-gameDone
				for k.game[0].received < k.game[0].sent || k.game[1].received < k.game[1].sent {
					k.deliver(p, readRecord(st, buf, p))
				}
			}
		}(k)
	}
	ready.Wait()
	burstStart = nowNs()
	if p.kind == "path" {
		// Said at once: rudp-bench starts the competing flow.
		fmt.Printf("BURST %d\n", burstStart)
	}
	close(start)
	finished.Wait()
	var rtt, cms []float32
	var verified, total, burstMsgs, end uint64
	for _, k := range conns {
		rtt = append(rtt, k.rtt...)
		cms = append(cms, float32(float64(k.connectNs)/1e6))
		verified += uint64(k.done)
		total += uint64(k.total)
		burstMsgs += uint64(k.total - k.pre)
		if k.endNs > end {
			end = k.endNs
		}
	}
	sort.Slice(rtt, func(a, b int) bool { return rtt[a] < rtt[b] })
	sort.Slice(cms, func(a, b int) bool { return cms[a] < cms[b] })
	burstNs := uint64(0)
	if burstMsgs > 0 {
		burstNs = end - burstStart
	}
	fmt.Printf("RESULT verified=%d messages=%d burst_messages=%d burst_ns=%d rtt_p50_us=%.2f rtt_p95_us=%.2f "+
		"rtt_p99_us=%.2f connect_p50_ms=%.3f connect_p99_ms=%.3f hwm_kib=%d", verified, total, burstMsgs, burstNs,
		percentile(rtt, 0.5), percentile(rtt, 0.95), percentile(rtt, 0.99), percentile(cms, 0.5),
		percentile(cms, 0.99), hwmKiB())
	if p.kind == "path" {
		var sum, sq float64
		for _, x := range firstBurst {
			sum += float64(x)
			sq += float64(x) * float64(x)
		}
		jain := -1.0
		if sq > 0 {
			jain = sum * sum / (float64(p.conns) * sq)
		}
		fmt.Printf(" burst_start_ns=%d burst_end_ns=%d jain=%.4f", burstStart, end, jain)
		if p.gameHz > 0 {
			for i, name := range []string{"game_u", "game_r"} {
				g := &conns[0].game[i]
				sort.Slice(g.rtt, func(a, b int) bool { return g.rtt[a] < g.rtt[b] })
				fmt.Printf(" %s_sent=%d %s_echoed=%d %s_p50_us=%.1f %s_p99_us=%.1f", name, g.sent, name,
					g.received, name, percentile(g.rtt, 0.5), name, percentile(g.rtt, 0.99))
			}
		}
	}
	fmt.Printf("\n")
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "server" && os.Args[1] != "client") {
		fmt.Fprintln(os.Stderr, "usage: rudp-bench-quic server|client (started by rudp-bench)")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	column := fs.String("column", "quic-go", "")
	bind := fs.String("bind", "", "")
	connect := fs.String("connect", "", "")
	fs.Int("mtu", 0, "quic-go 0.29 has no datagram size setting; path MTU discovery is on")
	fs.Int("conns", 1, "")
	workers := fs.Int("workers", 1, "listeners on the port, one UDP socket each (SO_REUSEPORT)")
	readyFd := fs.Int("ready-fd", -1, "")
	p := &params{}
	fs.StringVar(&p.kind, "workload", "single", "")
	size := fs.Uint("size", 800, "")
	connections := fs.Uint("connections", 1, "")
	window := fs.Uint("window", 64, "")
	warmup := fs.Uint("warmup", 100, "")
	samples := fs.Uint("samples", 300, "")
	fs.Uint64Var(&p.messages, "messages", 10000, "")
	stall := fs.Uint("stall-ms", 15000, "")
	fs.StringVar(&p.fault, "inject-fault", "", "")
	gameHz := fs.Uint("game-hz", 0, "a game stream on connection 0, this many ticks a second (path rows)")
	gameSize := fs.Uint("game-size", 200, "bytes of each game message")
	fs.Parse(os.Args[2:])
	if *column != "quic-go" {
		fmt.Fprintf(os.Stderr, "rudp-bench-quic: column %s is not quic-go\n", *column)
		os.Exit(2)
	}
	p.size, p.conns, p.window = uint32(*size), uint32(*connections), uint32(*window)
	p.warmup, p.samples, p.stallMs = uint32(*warmup), uint32(*samples), uint32(*stall)
	p.gameHz, p.gameSize = uint32(*gameHz), uint32(*gameSize)
	if p.gameHz > 0 && (p.gameHz > 1000 || p.gameSize < hdr || p.gameSize > 65536 ||
		(p.kind != "path" && p.kind != "stream")) {
		fmt.Fprintf(os.Stderr, "rudp-bench-quic: bad game stream (path and stream rows only)\n")
		os.Exit(2)
	}
	if p.kind == "stream" && (p.gameHz == 0 || p.conns != 1 || p.messages == 0 || p.messages > 600*uint64(p.gameHz)) {
		fmt.Fprintf(os.Stderr, "rudp-bench-quic: bad stream (1 connection, 1 to 600 s of ticks)\n")
		os.Exit(2)
	}
	if p.kind == "sparse" {
		p.window, p.messages = 1, 0
	}
	if p.size < hdr || p.size > maxSize || p.conns == 0 || p.window == 0 {
		fmt.Fprintf(os.Stderr, "rudp-bench-quic: bad workload\n")
		os.Exit(2)
	}
	if p.fault != "" && p.fault != "drop" && p.fault != "reorder" && p.fault != "corrupt" {
		fmt.Fprintf(os.Stderr, "rudp-bench-quic: bad --inject-fault %s\n", p.fault)
		os.Exit(2)
	}
	if os.Args[1] == "server" {
		if *workers < 1 || *workers > 64 {
			fmt.Fprintf(os.Stderr, "rudp-bench-quic: --workers wants 1..64\n")
			os.Exit(2)
		}
		server(*bind, *readyFd, *workers)
		return
	}
	client(*connect, p)
}
