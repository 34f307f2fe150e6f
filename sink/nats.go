package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/record"
)

// natsConfig is what a nats:// URL says.
type natsConfig struct {
	servers     []string // nats://host:port, without userinfo
	subject     string
	stream      string
	create      bool
	dupeWindow  time.Duration
	maxPending  int
	ackTimeout  time.Duration
	reconnBuf   int
	user, pass  string
	token       string
	creds       string
	tls         tlsParams
	description string // the URL, redacted
}

// Defaults of the nats:// parameters.
const (
	defaultDupeWindow = 24 * time.Hour
	defaultMaxPending = 256
	defaultAckTimeout = 10 * time.Second
	defaultReconnBuf  = 8 << 20
)

// parseNATSURL reads nats://[user[:pass]@]host:port[,host:port]/SUBJECT?stream=NAME&…
// (tls:// for TLS). It is parsed by hand: several hosts are not a valid
// URL host for net/url.
func parseNATSURL(raw string) (*natsConfig, error) {
	red := Redact(raw)
	bad := func(format string, a ...any) error {
		return &URLError{URL: red, Reason: fmt.Sprintf(format, a...)}
	}
	c := &natsConfig{create: true, dupeWindow: defaultDupeWindow, maxPending: defaultMaxPending,
		ackTimeout: defaultAckTimeout, reconnBuf: defaultReconnBuf, description: red}
	c.tls.on = strings.HasPrefix(raw, "tls://")
	u, problem := parseBrokerURL(raw)
	if problem != "" {
		return nil, bad("%s", problem)
	}
	if u.hasPass {
		c.user, c.pass = u.user, u.pass
	} else {
		c.token = u.user
	}
	if len(u.hosts) == 0 {
		return nil, bad("expected nats://HOST:PORT/SUBJECT?stream=NAME")
	}
	for _, h := range u.hosts {
		if !strings.Contains(h, ":") {
			h += ":4222"
		}
		c.servers = append(c.servers, "nats://"+h)
	}
	c.subject = u.name
	if c.subject == "" || strings.ContainsAny(c.subject, " \t") || strings.HasSuffix(c.subject, ".") {
		return nil, bad("expected a subject after the host, e.g. nats://127.0.0.1:4222/papers.new?stream=PAPERS")
	}
	var err error
	for k, v := range u.query {
		val := v[len(v)-1]
		if handled, problem := c.tls.set(k, val); handled {
			if problem != "" {
				return nil, bad("%s", problem)
			}
			continue
		}
		switch k {
		case "stream":
			c.stream = val
		case "create":
			if c.create, err = strconv.ParseBool(val); err != nil {
				return nil, bad("create=%q: expected true or false", val)
			}
		case "dupe_window":
			if c.dupeWindow, err = time.ParseDuration(val); err != nil || c.dupeWindow <= 0 {
				return nil, bad("dupe_window=%q: expected a positive duration such as 24h", val)
			}
		case "max_pending":
			if c.maxPending, err = strconv.Atoi(val); err != nil || c.maxPending < 1 {
				return nil, bad("max_pending=%q: expected a number of messages of at least 1", val)
			}
		case "ack_timeout":
			if c.ackTimeout, err = time.ParseDuration(val); err != nil || c.ackTimeout <= 0 {
				return nil, bad("ack_timeout=%q: expected a positive duration such as 10s", val)
			}
		case "reconnect_buffer":
			if c.reconnBuf, err = strconv.Atoi(val); err != nil || c.reconnBuf < 0 {
				return nil, bad("reconnect_buffer=%q: expected a number of bytes", val)
			}
		case "creds":
			c.creds = val
		default:
			return nil, bad("unknown parameter %q (known: stream, create, dupe_window, max_pending, ack_timeout, reconnect_buffer, creds, tls, tls_ca, tls_cert, tls_key)", k)
		}
	}
	if c.stream == "" || strings.ContainsAny(c.stream, ". *>") {
		return nil, bad("expected ?stream=NAME (a stream name without dots, spaces or wildcards)")
	}
	if problem := c.tls.check(); problem != "" {
		return nil, bad("%s", problem)
	}
	return c, nil
}

// connectOptions turns the config into nats.go options. Credentials from
// the URL win; the environment (NATS_USER/NATS_PASSWORD, NATS_TOKEN,
// NATS_CREDS) is used only when the URL gives none.
func (c *natsConfig) connectOptions(log func(msg string, args ...any)) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name("litcrawl"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.ReconnectJitter(500*time.Millisecond, time.Second),
		nats.ReconnectBufSize(c.reconnBuf),
		nats.Timeout(5 * time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil when we closed the connection ourselves
				log("nats disconnected", "sink", c.description, "error", redactErr(err))
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log("nats reconnected", "sink", c.description, "server", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log("nats error", "sink", c.description, "error", redactErr(err))
		}),
	}
	user, pass, token, creds := c.user, c.pass, c.token, c.creds
	if user == "" && token == "" && creds == "" {
		user, pass = os.Getenv("NATS_USER"), os.Getenv("NATS_PASSWORD")
		token, creds = os.Getenv("NATS_TOKEN"), os.Getenv("NATS_CREDS")
	}
	switch {
	case creds != "":
		opts = append(opts, nats.UserCredentials(creds))
	case user != "":
		opts = append(opts, nats.UserInfo(user, pass))
	case token != "":
		opts = append(opts, nats.Token(token))
	}
	tlsCfg, err := c.tls.config()
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		opts = append(opts, nats.Secure(tlsCfg))
	}
	return opts, nil
}

// redactErr keeps error texts that might quote a URL free of userinfo.
func redactErr(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	for _, f := range strings.Fields(msg) {
		if strings.Contains(f, "://") && strings.Contains(f, "@") {
			msg = strings.ReplaceAll(msg, f, Redact(f))
		}
	}
	return msg
}

// natsSink publishes each record to a JetStream subject with the record id
// as Nats-Msg-Id, so a resend inside the stream's duplicate window is
// dropped by the server. Write waits for every publish acknowledgement.
type natsSink struct {
	cfg *natsConfig
	nc  *nats.Conn
	js  jetstream.JetStream
	log func(msg string, args ...any)

	gate // Writes hold it shared; Close exclusively
}

func openNATS(ctx context.Context, raw string, opts Options) (*natsSink, error) {
	cfg, err := parseNATSURL(raw)
	if err != nil {
		return nil, err
	}
	logger := opts.logger()
	s := &natsSink{cfg: cfg, log: func(msg string, args ...any) { logger.Warn(msg, args...) }}
	nopts, err := cfg.connectOptions(s.log)
	if err != nil {
		return nil, &URLError{URL: cfg.description, Reason: err.Error()}
	}
	s.nc, err = nats.Connect(strings.Join(cfg.servers, ","), nopts...)
	if err != nil {
		return nil, retryable(fmt.Errorf("nats %s: connect: %s", cfg.description, redactErr(err)))
	}
	s.js, err = jetstream.New(s.nc,
		jetstream.WithPublishAsyncMaxPending(cfg.maxPending),
		jetstream.WithPublishAsyncTimeout(cfg.ackTimeout))
	if err != nil {
		s.nc.Close()
		return nil, fmt.Errorf("nats %s: %w", cfg.description, err)
	}
	if err := s.ensureStream(ctx); err != nil {
		s.nc.Close()
		return nil, err
	}
	return s, nil
}

// ensureStream checks that the stream exists and takes the subject,
// creating it when allowed, and warns when its duplicate window is shorter
// than asked.
func (s *natsSink) ensureStream(ctx context.Context) error {
	c := s.cfg
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := s.js.Stream(ctx, c.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if !c.create {
			return fmt.Errorf("nats %s: stream %s does not exist (and create=false)", c.description, c.stream)
		}
		_, err = s.js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       c.stream,
			Subjects:   []string{c.subject},
			Storage:    jetstream.FileStorage,
			Duplicates: c.dupeWindow,
		})
		if err != nil {
			return retryableUnlessAPI(fmt.Errorf("nats %s: create stream %s: %w", c.description, c.stream, err))
		}
		return nil
	}
	if err != nil {
		return retryableUnlessAPI(fmt.Errorf("nats %s: stream %s: %w", c.description, c.stream, err))
	}
	info := st.CachedInfo()
	if !subjectsCover(info.Config.Subjects, c.subject) {
		return fmt.Errorf("nats %s: stream %s does not take subject %s (its subjects: %s)",
			c.description, c.stream, c.subject, strings.Join(info.Config.Subjects, ", "))
	}
	if info.Config.Duplicates < c.dupeWindow {
		s.log("nats stream duplicate window is shorter than asked: a resend after it is not deduplicated",
			"sink", c.description, "stream", c.stream, "window", info.Config.Duplicates, "asked", c.dupeWindow)
	}
	return nil
}

// subjectsCover reports whether any of the stream's subject filters matches
// subject (NATS wildcards: * one token, > the rest).
func subjectsCover(filters []string, subject string) bool {
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

func retryableUnlessAPI(err error) error {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return err
	}
	return retryable(err)
}

func (s *natsSink) Describe() string { return s.cfg.description }

func (s *natsSink) Write(ctx context.Context, recs []record.Record) error {
	release, err := s.enter(ctx, false)
	if err != nil {
		return err
	}
	defer release()
	futures := make([]jetstream.PubAckFuture, 0, len(recs))
	for i := range recs {
		data, err := json.Marshal(&recs[i])
		if err != nil {
			return fmt.Errorf("nats: encode record %s: %w", recs[i].ID, err)
		}
		msg := nats.NewMsg(s.cfg.subject)
		msg.Data = data
		msg.Header.Set(jetstream.MsgIDHeader, recs[i].ID)
		f, err := s.js.PublishMsgAsync(msg, jetstream.WithExpectStream(s.cfg.stream))
		if err != nil {
			return retryableUnlessAPI(fmt.Errorf("nats %s: publish %s: %w", s.cfg.description, recs[i].ID, err))
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return retryableUnlessAPI(fmt.Errorf("nats %s: no ack for %s: %w", s.cfg.description, f.Msg().Header.Get(jetstream.MsgIDHeader), err))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (s *natsSink) Close() error {
	return s.shut(func() error {
		// Every Write has returned with its acks (or its error), so nothing
		// acknowledged is left in a buffer.
		s.nc.Close()
		return nil
	})
}
