package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/ledger"
)

// fleetPage is page n of the fleet bench: 20 papers, each with an id and a
// DOI.
func fleetPage(n int) []ledger.Paper {
	ps := make([]ledger.Paper, 20)
	for i := range ps {
		k := n*20 + i
		ps[i] = ledger.Paper{ID: fmt.Sprintf("%d", 140000000+k), DOI: fmt.Sprintf("10.1016/j.bench.2025.%06d", k)}
	}
	return ps
}

// delayProxy forwards TCP connections to upstream, holding every chunk
// for delay in each direction: a network whose round trip is 2×delay.
func delayProxy(upstream string, delay time.Duration) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	pump := func(dst, src net.Conn) {
		type chunk struct {
			at time.Time
			b  []byte
		}
		ch := make(chan chunk, 4096)
		go func() {
			for c := range ch {
				time.Sleep(time.Until(c.at))
				if _, err := dst.Write(c.b); err != nil {
					break
				}
			}
			dst.Close()
		}()
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{time.Now().Add(delay), append([]byte(nil), buf[:n]...)}
			}
			if err != nil {
				close(ch)
				return
			}
		}
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			go pump(u, c)
			go pump(c, u)
		}
	}()
	return ln.Addr().String()
}

// procMem reads a process's resident and anonymous memory, in bytes.
func procMem(pid int) (rss, anon int64) {
	_, a := memory(pid)
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && k == "VmRSS" {
			fmt.Sscan(strings.Fields(v)[0], &rss)
		}
	}
	return rss << 10, a << 10
}

// connectRetry connects to a server that is starting.
func connectRetry(ctx context.Context, url string) *frontier.Frontier {
	for i := 0; ; i++ {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fr, err := frontier.Connect(cctx, url, frontier.Options{})
		cancel()
		if err == nil {
			return fr
		}
		if i == 100 {
			fmt.Fprintln(os.Stderr, "connect:", err)
			os.Exit(1)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// seqLookup is the look-up as it was before: one key at a time, the id,
// then the DOI when the id is not known.
func seqLookup(ctx context.Context, kv jetstream.KeyValue, ps []ledger.Paper) error {
	key := func(kind, v string) string { return kind + "." + base64.RawURLEncoding.EncodeToString([]byte(v)) }
	for _, p := range ps {
		for _, k := range []string{key("id", p.ID), key("doi", p.DOIKey())} {
			_, err := kv.Get(ctx, k)
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrKeyNotFound) {
				return err
			}
		}
	}
	return nil
}

// fleet measures the fleet's ledger on a real nats-server: the memory and
// disk a known paper costs in the papers bucket after papers are
// committed, and the round trips a page's look-up costs.
func fleet(dir, serverBin string, papers int, delay time.Duration) {
	ctx := context.Background()
	if serverBin == "" {
		serverBin = filepath.Join(dir, "nats-server")
		cmd := exec.Command("go", "build", "-o", serverBin, "github.com/nats-io/nats-server/v2")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build nats-server:", err)
			os.Exit(1)
		}
	}
	version, _ := exec.Command(serverBin, "--version").Output()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	store := filepath.Join(dir, "jetstream")
	srv := exec.Command(serverBin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", store)
	if err := srv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start nats-server:", err)
		os.Exit(1)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }() // the one running then
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	fr := connectRetry(ctx, url)
	defer fr.Close()
	l := fr.Ledger()
	pid := srv.Process.Pid
	rss0, anon0 := procMem(pid)
	disk0 := duBytes(store)
	fmt.Printf("%s on loopback; %d papers in pages of 20, committed by 32 workers at once\n", strings.TrimSpace(string(version)), papers)

	pages := papers / 20
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	var failed atomic.Value
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1)) - 1
				if n >= pages {
					return
				}
				pg := ledger.Page{Key: ledger.PageKey{Journal: 1, Page: n + 1}, Papers: fleetPage(n), OnPage: 20, RunID: "20261203T020000Z-bench001", At: time.Now()}
				if _, err := l.Commit(ctx, ledger.Group{Pages: []ledger.Page{pg}}); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		fmt.Fprintln(os.Stderr, "commit:", err)
		os.Exit(1)
	}
	took := time.Since(start)
	rss1, anon1 := procMem(pid)
	disk1 := duBytes(store)
	fmt.Printf("committed in %.1f s (%.0f papers/s, two keys each)\n", took.Seconds(), float64(papers)/took.Seconds())
	fmt.Printf("server RSS %.1f → %.1f MB (anonymous %.1f → %.1f MB): %.0f bytes a paper in memory\n",
		float64(rss0)/1e6, float64(rss1)/1e6, float64(anon0)/1e6, float64(anon1)/1e6, float64(anon1-anon0)/float64(papers))
	fmt.Printf("store on disk %.1f MB: %.0f bytes a paper\n", float64(disk1)/1e6, float64(disk1-disk0)/float64(papers))

	// Round trips: the look-up of a page through a link whose round
	// trip is 2×delay, against the round trip itself.
	proxy := delayProxy(fmt.Sprintf("127.0.0.1:%d", port), delay)
	far, err := frontier.Connect(ctx, "nats://"+proxy, frontier.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "connect through the delay:", err)
		os.Exit(1)
	}
	defer far.Close()
	nc, _ := nats.Connect("nats://" + proxy)
	defer nc.Close()
	rtt, _ := nc.RTT()
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(ctx, frontier.PapersBucket)
	if err != nil {
		fmt.Fprintln(os.Stderr, "papers bucket:", err)
		os.Exit(1)
	}
	const probes = 20
	measure := func(name string, look func(ps []ledger.Paper) error) {
		for _, c := range []struct {
			what  string
			first int
		}{{"known", 0}, {"new", pages + 1000}} {
			start := time.Now()
			for i := range probes {
				if err := look(fleetPage(c.first + i*(pages/probes+1)%max(pages, 1))); err != nil {
					fmt.Fprintln(os.Stderr, name, err)
					os.Exit(1)
				}
			}
			per := time.Since(start) / probes
			fmt.Printf("  %-28s %-6s papers: %6.1f ms a page = %5.1f round trips\n", name, c.what, float64(per.Microseconds())/1000, per.Seconds()/rtt.Seconds())
		}
	}
	fmt.Printf("look-up of a page of 20 papers over a link with a %.1f ms round trip:\n", float64(rtt.Microseconds())/1000)
	measure("one key at a time (before)", func(ps []ledger.Paper) error { return seqLookup(ctx, kv, ps) })
	measure("all keys at once (now)", func(ps []ledger.Paper) error {
		_, err := far.Ledger().Lookup(ctx, ps, "20261204T020000Z-bench002")
		return err
	})
	fmt.Println("the same on loopback, without the delay (the server's own time):")
	measure("all keys at once (now)", func(ps []ledger.Paper) error {
		_, err := fr.Ledger().Lookup(ctx, ps, "20261204T020000Z-bench002")
		return err
	})

	// What the server holds when it starts on the store: the memory the
	// known papers need, without what committing them left to collect.
	far.Close()
	fr.Close()
	srv.Process.Signal(os.Interrupt)
	srv.Wait()
	srv = exec.Command(serverBin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", store)
	if err := srv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "restart nats-server:", err)
		os.Exit(1)
	}
	fr2 := connectRetry(ctx, url)
	defer fr2.Close()
	for i := range probes {
		if _, err := fr2.Ledger().Lookup(ctx, fleetPage(i*(pages/probes+1)%max(pages, 1)), "x"); err != nil {
			fmt.Fprintln(os.Stderr, "look-up after restart:", err)
			os.Exit(1)
		}
	}
	rss2, anon2 := procMem(srv.Process.Pid)
	fmt.Printf("restarted on the store: RSS %.1f MB, anonymous %.1f MB: %.0f bytes a paper\n", float64(rss2)/1e6, float64(anon2)/1e6, float64(anon2-anon0)/float64(papers))
}
