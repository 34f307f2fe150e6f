// Package nats is the NATS JetStream sink driver: nats://HOST:PORT/SUBJECT?stream=NAME
// (tls://… for TLS) publishes each record as one message with its id as
// Nats-Msg-Id, so the server drops a resend inside the stream's duplicate
// window. Importing the package registers the driver.
package nats

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/internal/backoff"
	"github.com/litcrawl/litcrawl/internal/jsadmin"
	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
	"github.com/litcrawl/litcrawl/sink/sinkurl"
)

func init() {
	check := func(raw string) error { _, err := parseURL(raw); return err }
	sink.Register(sink.Driver{Scheme: "nats", Usage: "nats://HOST:PORT/SUBJECT?stream=NAME", Check: check, Open: open})
	sink.Register(sink.Driver{Scheme: "tls", Usage: "tls://HOST:PORT/SUBJECT?stream=NAME (NATS over TLS)", Check: check, Open: open})
}

// config is what a nats:// URL says.
type config struct {
	servers     []string // nats://host:port, without userinfo
	subject     string
	stream      string
	create      bool
	dupeWindow  time.Duration
	maxPending  int
	ackTimeout  time.Duration
	reconnBuf   int
	replicas    int // 0: as the stream is (1 when the sink creates it)
	user, pass  string
	token       string
	creds       string
	tls         sinkurl.TLS
	description string // the URL, redacted
	raw         string
}

// Defaults of the nats:// parameters.
const (
	defaultDupeWindow = 24 * time.Hour
	defaultMaxPending = 256
	defaultAckTimeout = 10 * time.Second
	defaultReconnBuf  = 8 << 20
)

// parseURL reads nats://[user[:pass]@]host:port[,host:port]/SUBJECT?stream=NAME&…
// (tls:// for TLS).
func parseURL(raw string) (*config, error) {
	u, err := sinkurl.Parse(raw)
	if err != nil {
		return nil, err
	}
	c := &config{create: true, dupeWindow: defaultDupeWindow, maxPending: defaultMaxPending,
		ackTimeout: defaultAckTimeout, reconnBuf: defaultReconnBuf, description: u.Redacted, raw: raw}
	tlsScheme := strings.HasPrefix(raw, "tls://") // the registry gives the scheme in lower case
	c.tls.On = tlsScheme
	if u.HasPass {
		c.user, c.pass = u.User, u.Pass
	} else {
		c.token = u.User
	}
	if len(u.Hosts) == 0 {
		return nil, u.Errorf("expected nats://HOST:PORT/SUBJECT?stream=NAME")
	}
	for _, h := range u.Hosts {
		if !strings.Contains(h, ":") {
			h += ":4222"
		}
		c.servers = append(c.servers, "nats://"+h)
	}
	c.subject = u.Name
	if c.subject == "" || strings.ContainsAny(c.subject, " \t") || strings.HasSuffix(c.subject, ".") || strings.HasPrefix(c.subject, ".") || strings.Contains(c.subject, "..") {
		return nil, u.Errorf("expected a subject after the host, e.g. nats://127.0.0.1:4222/papers.new?stream=PAPERS")
	}
	for _, tok := range strings.Split(c.subject, ".") {
		if tok == "*" || tok == ">" {
			return nil, u.Errorf("subject %s: a wildcard (* or >) cannot be published to: name one subject, e.g. papers.new", c.subject)
		}
	}
	params := []sinkurl.Param{
		sinkurl.String("stream", &c.stream),
		sinkurl.Bool("create", &c.create),
		sinkurl.Duration("dupe_window", &c.dupeWindow, "24h"),
		sinkurl.Int("max_pending", &c.maxPending, 1, 1<<20, "a number of messages"),
		sinkurl.Duration("ack_timeout", &c.ackTimeout, "10s"),
		sinkurl.Int("reconnect_buffer", &c.reconnBuf, 0, 1<<30, "a number of bytes"),
		sinkurl.Int("replicas", &c.replicas, 1, 5, "a number of replicas"),
		sinkurl.String("creds", &c.creds),
	}
	if err := u.Apply(append(params, c.tls.Params()...)...); err != nil {
		return nil, err
	}
	if c.stream == "" || strings.ContainsAny(c.stream, ". *>") {
		return nil, u.Errorf("expected ?stream=NAME (a stream name without dots, spaces or wildcards)")
	}
	if problem := c.tls.Check(); problem != "" {
		return nil, u.Errorf("%s", problem)
	}
	if tlsScheme && !c.tls.On {
		return nil, u.Errorf("tls=false contradicts tls://: use nats:// for a connection without TLS")
	}
	return c, nil
}

// connectOptions turns the config into nats.go options. Credentials from
// the URL win; the environment (NATS_USER/NATS_PASSWORD, NATS_TOKEN,
// NATS_CREDS) is used only when the URL gives none.
func (c *config) connectOptions(log func(msg string, args ...any)) ([]natsgo.Option, error) {
	opts := []natsgo.Option{
		natsgo.Name("litcrawl"),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(time.Second),
		natsgo.ReconnectJitter(500*time.Millisecond, time.Second),
		natsgo.ReconnectBufSize(c.reconnBuf),
		natsgo.Timeout(5 * time.Second),
		natsgo.DisconnectErrHandler(func(_ *natsgo.Conn, err error) {
			if err != nil { // nil when we closed the connection ourselves
				log("nats disconnected", "sink", c.description, "error", redact.Error(err, c.raw))
			}
		}),
		natsgo.ReconnectHandler(func(nc *natsgo.Conn) {
			log("nats reconnected", "sink", c.description, "server", redact.URL(nc.ConnectedUrl()))
		}),
		natsgo.ErrorHandler(func(_ *natsgo.Conn, _ *natsgo.Subscription, err error) {
			log("nats error", "sink", c.description, "error", redact.Error(err, c.raw))
		}),
	}
	user, pass, token, creds := c.user, c.pass, c.token, c.creds
	if user == "" && token == "" && creds == "" {
		user, pass = os.Getenv("NATS_USER"), os.Getenv("NATS_PASSWORD")
		token, creds = os.Getenv("NATS_TOKEN"), os.Getenv("NATS_CREDS")
	}
	switch {
	case creds != "":
		if err := sinkurl.SmallFile(creds); err != nil {
			return nil, fmt.Errorf("creds (or NATS_CREDS) %s: %w", creds, err)
		}
		opts = append(opts, natsgo.UserCredentials(creds))
	case user != "":
		opts = append(opts, natsgo.UserInfo(user, pass))
	case token != "":
		opts = append(opts, natsgo.Token(token))
	}
	err := c.tls.With(func(cfg *tls.Config) { opts = append(opts, natsgo.Secure(cfg)) })
	return opts, err
}

// MsgID is a record's Nats-Msg-Id: its id, and for revision 2 and later
// "@" and the revision ("142211052@2"), so that each revision of a paper
// is published once and a resend of one is dropped. A record of
// revision 1 (or of a build before revisions) keeps the bare id.
func MsgID(r *record.Record) string {
	if r.Revision > 1 {
		return r.ID + "@" + strconv.Itoa(r.Revision)
	}
	return r.ID
}

// natsSink publishes each record to a JetStream subject with the record id
// as Nats-Msg-Id, so a resend inside the stream's duplicate window is
// dropped by the server. Write waits for every publish acknowledgement.
type natsSink struct {
	cfg *config
	nc  *natsgo.Conn
	js  jetstream.JetStream
	log func(msg string, args ...any)

	sink.Gate // Writes hold it shared; Close exclusively
}

func open(ctx context.Context, raw string, opts sink.Options) (sink.Sink, error) {
	cfg, err := parseURL(raw)
	if err != nil {
		return nil, err
	}
	logger := opts.Log()
	s := &natsSink{cfg: cfg, log: func(msg string, args ...any) { logger.Warn(msg, args...) }}
	nopts, err := cfg.connectOptions(s.log)
	if err != nil {
		return nil, &sink.URLError{URL: cfg.description, Reason: err.Error()}
	}
	s.nc, err = natsgo.Connect(strings.Join(cfg.servers, ","), nopts...)
	if err != nil {
		return nil, backoff.Retryable(fmt.Errorf("nats %s: connect: %s", cfg.description, redact.Error(err, raw)))
	}
	s.js, err = jetstream.New(s.nc,
		jetstream.WithPublishAsyncMaxPending(cfg.maxPending),
		jetstream.WithPublishAsyncTimeout(cfg.ackTimeout))
	if err != nil {
		s.nc.Close()
		return nil, fmt.Errorf("nats %s: %w", cfg.description, err)
	}
	if err := jsadmin.CheckClustered(s.nc.ConnectedClusterName(), cfg.replicas, "replicas= on the sink URL"); err != nil {
		s.nc.Close()
		return nil, &sink.URLError{URL: cfg.description, Reason: err.Error()}
	}
	if err := s.ensureStream(ctx); err != nil {
		s.nc.Close()
		return nil, err
	}
	return s, nil
}

// ensureStream checks that the stream exists and takes the subject,
// creating it when allowed, moves it to the asked replica count, and warns
// when its duplicate window is shorter than asked.
func (s *natsSink) ensureStream(ctx context.Context) error {
	c := s.cfg
	// Each request is asked again while a cluster elects a leader (the
	// API answers nothing, or 503, for a few seconds): a worker starting
	// as a server goes would otherwise spend its whole start on one try.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var st jetstream.Stream
	lookup := func(ctx context.Context) (err error) {
		st, err = s.js.Stream(ctx, c.stream)
		return err
	}
	err := jsadmin.Retry(ctx, lookup)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if !c.create {
			return fmt.Errorf("nats %s: stream %s does not exist (and create=false)", c.description, c.stream)
		}
		err = jsadmin.Retry(ctx, func(ctx context.Context) error {
			_, err := s.js.CreateStream(ctx, jetstream.StreamConfig{
				Name:       c.stream,
				Subjects:   []string{c.subject},
				Storage:    jetstream.FileStorage,
				Duplicates: c.dupeWindow,
				Replicas:   max(c.replicas, 1),
			})
			return err
		})
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			if err != nil {
				return retryableUnlessAPI(fmt.Errorf("nats %s: create stream %s: %w%s", c.description, c.stream, err, jsadmin.ReplicasHint(err, max(c.replicas, 1), "replicas= on the sink URL")))
			}
			return nil
		}
		// Made meanwhile (by a try that timed out after the server took
		// it, or by another worker starting at once): checked as found.
		err = jsadmin.Retry(ctx, lookup)
	}
	if err != nil {
		return retryableUnlessAPI(fmt.Errorf("nats %s: stream %s: %w", c.description, c.stream, err))
	}
	info := st.CachedInfo()
	if !SubjectsCover(info.Config.Subjects, c.subject) {
		return fmt.Errorf("nats %s: stream %s does not take subject %s (its subjects: %s)",
			c.description, c.stream, c.subject, strings.Join(info.Config.Subjects, ", "))
	}
	if changed, err := jsadmin.EnsureReplicas(ctx, s.js, c.stream, c.replicas, "replicas= on the sink URL"); err != nil {
		return fmt.Errorf("nats %s: %w", c.description, err)
	} else if changed {
		s.log("nats stream replicas changed", "sink", c.description, "stream", c.stream, "from", max(info.Config.Replicas, 1), "to", c.replicas)
	}
	if info.Config.Duplicates < c.dupeWindow {
		s.log("nats stream duplicate window is shorter than asked: a resend after it is not deduplicated",
			"sink", c.description, "stream", c.stream, "window", info.Config.Duplicates, "asked", c.dupeWindow)
	}
	return nil
}

// SubjectsCover reports whether any of the stream's subject filters matches
// subject (NATS wildcards: * one token, > the rest).
func SubjectsCover(filters []string, subject string) bool {
	st := strings.Split(subject, ".")
	for _, f := range filters {
		ft := strings.Split(f, ".")
		ok := true
		for i, tok := range ft {
			if tok == ">" {
				ok = len(st) > i
				break
			}
			if i >= len(st) || (tok != "*" && tok != st[i]) {
				ok = false
				break
			}
			if i == len(ft)-1 && len(st) != len(ft) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// retryableUnlessAPI: an answer of the JetStream API (a refusal) is final;
// anything else (no answer, a lost connection) is worth trying again.
func retryableUnlessAPI(err error) error {
	var api *jetstream.APIError
	if errors.As(err, &api) && !jsadmin.Transient(err) {
		return err
	}
	return backoff.Retryable(err)
}

func (s *natsSink) Describe() string { return s.cfg.description }

func (s *natsSink) Write(ctx context.Context, recs []record.Record) error {
	release, err := s.Enter(ctx, false)
	if err != nil {
		return err
	}
	defer release()
	// Every message is checked against the server's max_payload before
	// any is sent: a record over it is refused (sink.ErrRefused) with
	// nothing published.
	msgs := make([]*natsgo.Msg, len(recs))
	limit := s.nc.MaxPayload()
	for i := range recs {
		data, err := sink.Marshal(&recs[i])
		if err != nil {
			return fmt.Errorf("nats: %w", err)
		}
		msg := natsgo.NewMsg(s.cfg.subject)
		msg.Data = data
		id := MsgID(&recs[i])
		msg.Header.Set(jetstream.MsgIDHeader, id)
		// The headers' wire form is a status line and one line a header.
		if n := int64(len(data) + len(id) + len(jetstream.MsgIDHeader) + 64); limit > 0 && n > limit {
			return sink.Refused(fmt.Errorf("nats %s: record %s is %d bytes, over the server's max_payload (%d)", s.cfg.description, recs[i].ID, n, limit))
		}
		msgs[i] = msg
	}
	futures := make([]jetstream.PubAckFuture, 0, len(recs))
	for i, msg := range msgs {
		f, err := s.js.PublishMsgAsync(msg, jetstream.WithExpectStream(s.cfg.stream))
		if errors.Is(err, natsgo.ErrMaxPayload) {
			return sink.Refused(fmt.Errorf("nats %s: publish %s: %w", s.cfg.description, recs[i].ID, err))
		}
		if err != nil {
			return retryableUnlessAPI(fmt.Errorf("nats %s: publish %s: %w", s.cfg.description, recs[i].ID, err))
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			err = fmt.Errorf("nats %s: no ack for %s: %w", s.cfg.description, f.Msg().Header.Get(jetstream.MsgIDHeader), err)
			var api *jetstream.APIError
			if errors.As(err, &api) && api.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum {
				// The stream's max_msg_size: the record, not the sink.
				// The others of the batch may be stored; sent again, they
				// are deduplicated by their msg-id.
				return sink.Refused(err)
			}
			if errors.As(err, &api) && api.ErrorCode == jsDuplicateInProcess {
				// Another writer's message of this id is being stored (two
				// workers delivering a paper at once): sent again, this one
				// is acknowledged as its duplicate.
				return backoff.Retryable(err)
			}
			return retryableUnlessAPI(err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// jsDuplicateInProcess is JetStream's answer to a message whose id another
// message is being stored under (JSStreamDuplicateMessageConflict, 409).
const jsDuplicateInProcess = 10158

func (s *natsSink) Close() error {
	return s.Shut(func() error {
		// Every Write has returned with its acks (or its error), so nothing
		// acknowledged is left in a buffer.
		s.nc.Close()
		return nil
	})
}
