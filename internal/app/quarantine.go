package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/internal/state"
	"github.com/litcrawl/litcrawl/parser"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/quarantine"
)

// tokenDigest names a sink token in a quarantine entry (Refusal.Pending).
func tokenDigest(tok []byte) string {
	sum := sha256.Sum256(tok)
	return hex.EncodeToString(sum[:8])
}

// resolvePending settles the entries a crash left in the middle of a
// quarantine retry: the state's sink token changed since the retry marked
// them, so their delivery was committed (they leave the quarantine), or
// it did not (they stay, to be retried). Every run that commits tokens
// calls it before it commits anything, so the token can only have changed
// by that retry's commit. It returns the entries the quarantine holds.
func resolvePending(ctx context.Context, st *state.Store, path string) ([]sink.Refusal, error) {
	var out []sink.Refusal
	err := quarantine.Locked(path, func() error {
		c, err := quarantine.Read(path)
		if err != nil {
			return err
		}
		c.Entries, err = settle(ctx, st, c.Entries)
		if err != nil {
			return err
		}
		out = c.Entries
		return quarantine.Replace(path, c)
	})
	return out, err
}

// settle is resolvePending on entries read. Held records (quality.hold)
// whose paper the state knows as delivered (a crawl met it read right:
// the site fixed it) leave too.
func settle(ctx context.Context, st *state.Store, rs []sink.Refusal) ([]sink.Refusal, error) {
	since, err := deliveredSince(ctx, st, rs)
	if err != nil {
		return nil, err
	}
	if len(since) > 0 {
		keep := make([]sink.Refusal, 0, len(rs)-len(since))
		for i, r := range rs {
			if !since[i] {
				keep = append(keep, r)
			}
		}
		rs = keep
	}
	pending := false
	for _, r := range rs {
		pending = pending || r.Pending != ""
	}
	if !pending {
		return rs, nil
	}
	tok, err := st.SinkToken(ctx)
	if err != nil {
		return nil, err
	}
	now := tokenDigest(tok)
	keep := rs[:0]
	for _, r := range rs {
		switch {
		case r.Pending == "":
		case r.Pending != now:
			continue // delivered and committed
		default:
			r.Pending = ""
		}
		keep = append(keep, r)
	}
	return keep, nil
}

// atStage calls the retry's stage hook, if any.
func (o QuarantineRetry) atStage(stage string) error {
	if o.stage == nil {
		return nil
	}
	return o.stage(stage)
}

// QuarantineRetry delivers the quarantine of a state directory again.
type QuarantineRetry struct {
	StateDir string
	// Sinks are the sink URLs: each record goes to the sink it was refused
	// by, when one of them is that sink (by its name); none: the config's.
	Sinks []string
	// JournalSinks are the sinks of the journals whose records go to
	// sinks of their own (RetryHeld: a held record goes where a crawl
	// would have delivered it).
	JournalSinks map[int64][]string
	// stage, when set (tests), is called at each step of a retry that a
	// crash may follow; an error ends the retry there, as a kill would.
	stage func(stage string) error
	// findings, when set (tests), is the parser's findings on a page
	// parsed again (RetryHeld): a test swaps a rule as a parser fix would.
	findings func(*parser.Page, time.Time) []parser.Finding
}

// QuarantineResult is what a retry did.
type QuarantineResult struct {
	Path      string
	Delivered int // delivered and gone from the quarantine
	Refused   int // refused again, kept
	Unmatched int // their sink is not among the sinks given, kept
	// UnmatchedSinks are those sinks, as the quarantine names them
	// (redacted), in the order they first appear: what to give --sink.
	UnmatchedSinks []string
	Held           int // held back by the quality gate: retried by RetryHeld (--reparse), kept
	Bad            int // lines of the file that are no entry
}

// RetryQuarantine delivers each quarantined record to the sink that refused
// it, as a crawl would (its sinks opened, restored to the state's token,
// and the new token committed to the state), holding the state so that no
// crawl runs meanwhile. Records delivered leave the quarantine; records
// refused again stay, their tries counted. A crash at any point leaves
// each record either delivered once or still quarantined (Refusal.Pending).
func (e *Env) RetryQuarantine(ctx context.Context, o QuarantineRetry) (QuarantineResult, error) {
	res := QuarantineResult{Path: filepath.Join(o.StateDir, quarantine.Name)}
	err := withQuarantine(o.StateDir, &res.Bad, func(st *state.Store, path string) error {
		return e.retryLocked(ctx, o, st, path, &res)
	})
	return res, err
}

// withQuarantine runs a retry of the state directory's quarantine: when
// it holds entries, with the state open and the quarantine held from its
// read to its last rewrite (a worker quarantining meanwhile waits). It
// sets bad to its lines that are no entry (the retry sets it again from
// its own read).
func withQuarantine(stateDir string, bad *int, retry func(st *state.Store, path string) error) error {
	path := filepath.Join(stateDir, quarantine.Name)
	c, err := quarantine.Read(path)
	*bad = len(c.Bad)
	if err != nil || len(c.Entries) == 0 {
		return err
	}
	st, err := state.Open(stateDir)
	if err != nil {
		return err
	}
	defer st.Close()
	return quarantine.Locked(path, func() error { return retry(st, path) })
}

func (e *Env) retryLocked(ctx context.Context, o QuarantineRetry, st *state.Store, path string, res *QuarantineResult) error {
	c, err := quarantine.Read(path)
	if err != nil {
		return err
	}
	res.Bad = len(c.Bad)
	if c.Entries, err = settle(ctx, st, c.Entries); err != nil {
		return err
	}
	rs := c.Entries
	urls := o.Sinks
	if len(urls) == 0 {
		urls = e.Config.AllSinks() // a refusal names the one that refused it
	}
	out, err := OpenSinks(ctx, urls, SinkOptions{Writer: st.WriterID(), Stdout: e.Stdout, Log: e.Log, Metrics: e.Metrics})
	if err != nil {
		return err
	}
	defer out.Close()
	if err := restore(ctx, st, out, false, e.log()); err != nil {
		return err
	}
	byName := map[string]sink.Sink{}
	for _, s := range out.(*sink.Multi).Sinks() {
		byName[sink.Describe(s)] = s
	}
	before, err := st.SinkToken(ctx)
	if err != nil {
		return err
	}
	digest := tokenDigest(before)
	order, groups := bySink(rs, byName, digest, res)
	if len(order) == 0 {
		return quarantine.Replace(path, c)
	}
	// Marked before anything is delivered: a crash from here on is
	// settled by the next run (settle).
	if err := quarantine.Replace(path, c); err != nil {
		return err
	}
	if err := o.atStage("marked"); err != nil {
		return err
	}
	again := map[string]sink.Refusal{} // by sink and id
	for _, name := range order {
		recs := make([]record.Record, len(groups[name]))
		for k, i := range groups[name] {
			recs[k] = rs[i].Record
		}
		q := &collected{}
		if err := sink.Quarantined(byName[name], q, nil).Write(ctx, recs); err != nil {
			return fmt.Errorf("deliver the quarantine to %s: %w", name, err)
		}
		for _, r := range q.rs {
			again[name+"\x00"+r.Record.ID] = r
		}
	}
	// The records refused again are kept (no longer pending) before the
	// commit that makes the pending ones count as delivered.
	for i := range rs {
		if a, ok := again[rs[i].Sink+"\x00"+rs[i].Record.ID]; ok && rs[i].Pending != "" {
			rs[i].Pending, rs[i].Tries, rs[i].Reason, rs[i].At = "", rs[i].Tries+1, a.Reason, time.Now().UTC()
			res.Refused++
		}
	}
	if err := quarantine.Replace(path, c); err != nil {
		return err
	}
	if cm, ok := out.(sink.Committer); ok {
		tok, err := cm.Token()
		if err != nil {
			return fmt.Errorf("sink token: %w", err)
		}
		// The sinks not given keep their positions in the state's token.
		if tok, err = sink.MergeTokens(before, tok); err != nil {
			return fmt.Errorf("sink token: %w", err)
		}
		// The commit differs from the one the entries were marked at even
		// when no sink moved (NATS and Kafka keep no position): a retry
		// killed after it is settled as delivered, not delivered again.
		if tok, err = sink.MarkToken(tok, "quarantine-retry-"+digest); err != nil {
			return fmt.Errorf("sink token: %w", err)
		}
		if _, err := st.Commit(ctx, ledger.Group{SinkToken: tok}); err != nil {
			return fmt.Errorf("commit the sinks' token: %w", err)
		}
	}
	if err := o.atStage("committed"); err != nil {
		return err
	}
	keep := rs[:0]
	for _, r := range rs {
		if r.Pending != "" {
			res.Delivered++
			continue
		}
		keep = append(keep, r)
	}
	c.Entries = keep
	return quarantine.Replace(path, c)
}

// bySink groups the entries by the sink that refused them, in the order
// the sinks first appear, marking each with digest (Pending): those of no
// sink given, and those the quality gate held (RetryHeld's), are counted
// and left.
func bySink(rs []sink.Refusal, byName map[string]sink.Sink, digest string, res *QuarantineResult) ([]string, map[string][]int) {
	var order []string
	groups := map[string][]int{}
	for i := range rs {
		if rs[i].Sink == sink.HeldBy {
			res.Held++
			continue
		}
		if byName[rs[i].Sink] == nil {
			res.Unmatched++
			if !slices.Contains(res.UnmatchedSinks, rs[i].Sink) {
				res.UnmatchedSinks = append(res.UnmatchedSinks, rs[i].Sink)
			}
			continue
		}
		if groups[rs[i].Sink] == nil {
			order = append(order, rs[i].Sink)
		}
		groups[rs[i].Sink] = append(groups[rs[i].Sink], i)
		rs[i].Pending = digest
	}
	return order, groups
}

// collected keeps refusals in memory.
type collected struct{ rs []sink.Refusal }

func (c *collected) Put(_ context.Context, rs []sink.Refusal) error {
	c.rs = append(c.rs, rs...)
	return nil
}
