package frontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sourcegraph/conc/pool"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/jsadmin"
)

// The fleet's view of itself (the workers bucket, the runs stream) is read
// without a consumer: the stream's leader lists the subjects (one request),
// and the last message of each is asked for on its own (a direct get, which
// any server holding a replica answers), at most viewInFlight at a time.
// A consumer would be placed on one server, and a client library re-makes
// a lost one without end and without a deadline: with one server of three
// down, nats-server 2.9.10 left such a read hanging. Reading by subject
// also reads each subject once, as it is at that moment: a worker that
// announces itself during the read is read once, not once per
// announcement.

// viewInFlight bounds the gets one read has in flight, and viewGetTimeout
// one get (a get lost with a server is asked again; what is read stays
// read). A bucket of large hostile entries is read at the pace the server
// sends them, not all asked for at once.
const (
	viewInFlight   = 16
	viewGetTimeout = 5 * time.Second
)

// maxListedSubjects is the most subjects one listing returns: the server's
// own page (nats-server sends at most 100,000 subjects a page); a read
// takes one page.
const maxListedSubjects = 100_000

// subjects lists the subjects of stream matching filter: one page of the
// server's listing (at most maxListedSubjects), and how many subjects
// match in all. It asks again while the cluster elects the stream's
// leader, until ctx ends.
func (f *Frontier) subjects(ctx context.Context, stream, filter string) (subjects []string, total int, err error) {
	req, _ := json.Marshal(map[string]any{"subjects_filter": filter})
	err = jsadmin.Retry(ctx, func(ctx context.Context) error {
		m, err := f.nc.RequestWithContext(ctx, "$JS.API.STREAM.INFO."+stream, req)
		if err != nil {
			return err
		}
		var resp struct {
			Total int `json:"total"`
			State struct {
				Subjects    map[string]uint64 `json:"subjects"`
				NumSubjects int               `json:"num_subjects"`
			} `json:"state"`
			Error *jetstream.APIError `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &resp); err != nil {
			return fmt.Errorf("stream %s: %w", stream, err)
		}
		if resp.Error != nil {
			if resp.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound {
				return backoff.Permanent(fmt.Errorf("stream %s: %w", stream, jetstream.ErrStreamNotFound))
			}
			return resp.Error
		}
		subjects = subjects[:0]
		for s := range resp.State.Subjects {
			if len(subjects) == maxListedSubjects {
				break
			}
			subjects = append(subjects, s)
		}
		total = max(resp.Total, len(resp.State.Subjects))
		return nil
	})
	return subjects, total, err
}

// readBounds bound one read of the view.
type readBounds struct {
	entries    int // subjects read at most
	entryBytes int // a larger message is skipped
	bytes      int // all messages read, at most
	// count: the stream's subjects are all the filter's (the workers
	// bucket, the runs stream): they are counted first, and more than
	// entries are walked in order, never listed whole (a listing of
	// tens of thousands of long keys is a reply the server refuses to
	// send).
	count bool
}

// maxSubjectBytes bounds a subject read: a longer key is nobody's (a get
// for it would pass the server's 4 KiB control line and cost the
// connection), and is skipped.
const maxSubjectBytes = 512

// cut is a subject as an error message may show it: quoted, escapes and
// all, and short.
func cut(subject string) string {
	if len(subject) > 80 {
		subject = subject[:80] + "…"
	}
	return fmt.Sprintf("%q", subject)
}

// readResult counts what a read did not visit.
type readResult struct {
	// Total are the subjects that matched; Skipped those not visited:
	// beyond the bounds, too big, or unreadable.
	Total, Skipped int
}

// readLatest visits the last message of each subject of a stream matching
// filter (its data and headers), in the order the subjects sort (newest
// first sorts them backwards), within the bounds. visit says whether the
// message was one it could read. A deleted subject (a key-value delete) is passed with its
// headers. The read asks again, whole, while a server answers nothing
// (an election, a reconnection), until ctx ends.
func (f *Frontier) readLatest(ctx context.Context, stream jetstream.Stream, filter string, b readBounds, newestFirst bool,
	visit func(subject string, data []byte, h nats.Header) bool) (readResult, error) {
	name := stream.CachedInfo().Config.Name
	if b.count {
		var info *jetstream.StreamInfo
		if err := jsadmin.Retry(ctx, func(ctx context.Context) (err error) { info, err = stream.Info(ctx); return err }); err != nil {
			return readResult{}, fmt.Errorf("stream %s: %w", name, err)
		}
		if int(info.State.NumSubjects) > b.entries {
			return f.walkLatest(ctx, stream, info, filter, b, visit)
		}
	}
	subjects, total, err := f.subjects(ctx, name, filter)
	if err != nil {
		return readResult{}, err
	}
	long := len(subjects)
	subjects = slices.DeleteFunc(subjects, func(s string) bool { return len(s) > maxSubjectBytes })
	long -= len(subjects)
	total -= long
	slices.Sort(subjects)
	if newestFirst {
		slices.Reverse(subjects)
	}
	res := readResult{Total: total + long, Skipped: long + total - min(len(subjects), b.entries)}
	subjects = subjects[:min(len(subjects), b.entries)]
	// Each subject's message: not asked yet, gone since the listing,
	// skipped (too big, or beyond the bytes read), or read.
	const (
		notAsked = iota
		gone
		skipped
		read
	)
	type msg struct {
		data  []byte
		h     nats.Header
		state int
	}
	got := make([]msg, len(subjects))
	var budget atomic.Int64
	budget.Store(int64(b.bytes))
	r := backoff.Retry{Policy: jsadmin.RetryWait, Retryable: func(err error) bool {
		return jsadmin.Transient(err) || errors.Is(err, nats.ErrNoResponders)
	}}
	err = r.Do(ctx, func(ctx context.Context, _ int) error {
		p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(viewInFlight)
		for i, subj := range subjects {
			if got[i].state != notAsked || budget.Load() <= 0 {
				continue
			}
			p.Go(func(ctx context.Context) error {
				tctx, cancel := context.WithTimeout(ctx, viewGetTimeout)
				defer cancel()
				m, err := stream.GetLastMsgForSubject(tctx, subj)
				switch {
				case errors.Is(err, jetstream.ErrMsgNotFound):
					got[i].state = gone
				case err != nil:
					return fmt.Errorf("stream %s: %s: %w", name, cut(subj), err)
				case len(m.Data) > b.entryBytes || budget.Add(-int64(len(m.Data))) < 0:
					got[i].state = skipped
				default:
					got[i] = msg{m.Data, m.Header, read}
				}
				return nil
			})
		}
		return p.Wait()
	}, nil)
	if err != nil {
		return res, err
	}
	for i, subj := range subjects {
		switch got[i].state {
		case notAsked, skipped:
			res.Skipped++
		case read:
			if !visit(subj, got[i].data, got[i].h) {
				res.Skipped++
			}
		}
	}
	return res, nil
}

// walkLatest visits the messages of a stream matching filter, newest
// first, within the bounds: for a stream holding more subjects than a read
// takes, so that none is listed whole. Direct gets go forward only, so the
// stream is walked in spans from its end, each span twice as long as the
// one after it, each in order (one get after the other, for the next
// matching message, which any replica answers). The newest first: a
// worker announcing itself is always among the newest messages, however
// much older junk the bucket holds. Each subject of such a stream holds
// one message (its last).
func (f *Frontier) walkLatest(ctx context.Context, stream jetstream.Stream, info *jetstream.StreamInfo, filter string, b readBounds,
	visit func(subject string, data []byte, h nats.Header) bool) (readResult, error) {
	name := info.Config.Name
	res := readResult{Total: int(info.State.NumSubjects)}
	n, budget := 0, b.bytes
	first, end, span := info.State.FirstSeq, info.State.LastSeq+1, uint64(max(b.entries, 1))
	for n < b.entries && budget > 0 && end > first {
		start := first
		if end-first > span {
			start = end - span
		}
		for seq := start; seq < end && n < b.entries && budget > 0; {
			var m *jetstream.RawStreamMsg
			err := jsadmin.Retry(ctx, func(ctx context.Context) (err error) {
				m, err = stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
				return err
			})
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				break
			}
			if err != nil {
				return res, fmt.Errorf("stream %s: message %d on: %w", name, seq, err)
			}
			if m.Sequence >= end {
				break // the next span's
			}
			seq, n = m.Sequence+1, n+1
			switch {
			case len(m.Subject) > maxSubjectBytes || len(m.Data) > b.entryBytes:
				res.Skipped++
			default:
				budget -= len(m.Data)
				if !visit(m.Subject, m.Data, m.Header) {
					res.Skipped++
				}
			}
		}
		end, span = start, span*2
	}
	res.Skipped += max(res.Total-n, 0)
	return res, nil
}
