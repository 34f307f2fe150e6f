package sink

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/litcrawl/litcrawl/internal/redact"
)

// Driver makes the sinks of one URL scheme. Each driver lives in a package
// of its own (sink/jsonl, sink/nats, sink/kafka) that registers it in an
// init function; a program links the drivers it imports and no others, so
// a package that needs only the Sink interface links no broker client.
type Driver struct {
	// Scheme is what a URL starts with before its colon: "jsonl" for
	// jsonl:PATH, "nats" for nats://….
	Scheme string
	// Usage is the URL's shape, for messages: "nats://HOST:PORT/SUBJECT?stream=NAME".
	Usage string
	// Check validates a URL of the scheme without opening anything: no
	// file is created, no broker is contacted. Its error says what is
	// wrong and what is expected (a *URLError).
	Check func(rawURL string) error
	// Open opens the sink a URL names; the URL has passed Check.
	Open func(ctx context.Context, rawURL string, opts Options) (Sink, error)
	// Same, when set, is the destination a URL names, however it is
	// spelled (a file's absolute path): two URLs with one Same are one
	// sink. nil: the URL itself.
	Same func(rawURL string) string
}

var registry = struct {
	sync.RWMutex
	drivers map[string]Driver
}{drivers: map[string]Driver{}}

// Register makes a driver's scheme known to Open and CheckURL. It panics
// when the scheme is taken or the driver is incomplete: both are
// programming errors found at start.
func Register(d Driver) {
	if d.Scheme == "" || d.Check == nil || d.Open == nil {
		panic(fmt.Sprintf("sink.Register: driver %q lacks a scheme, Check or Open", d.Scheme))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.drivers[d.Scheme]; dup {
		panic("sink.Register: scheme " + d.Scheme + " registered twice")
	}
	registry.drivers[d.Scheme] = d
}

// Schemes lists the registered schemes, sorted.
func Schemes() []string {
	registry.RLock()
	defer registry.RUnlock()
	return schemesLocked()
}

func schemesLocked() []string {
	out := make([]string, 0, len(registry.drivers))
	for s := range registry.drivers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Stdout is the URL of standard output: an alias of jsonl:-.
const Stdout = "-"

// Scheme is a sink URL's scheme in lower case ("jsonl" for "-"), or ""
// when it has none.
func Scheme(rawURL string) string {
	if rawURL == Stdout {
		return "jsonl"
	}
	scheme, _, ok := strings.Cut(rawURL, ":")
	if !ok {
		return ""
	}
	return strings.ToLower(scheme)
}

// driverFor finds the driver of a URL's scheme, and gives the URL with its
// scheme in lower case (schemes are case-insensitive; drivers see one form)
// and "-" as jsonl:-.
func driverFor(rawURL string) (Driver, string, error) {
	if rawURL == Stdout {
		rawURL = "jsonl:-"
	}
	scheme, rest, ok := strings.Cut(rawURL, ":")
	scheme = strings.ToLower(scheme)
	registry.RLock()
	d, found := registry.drivers[scheme]
	registry.RUnlock()
	if ok && found {
		return d, scheme + ":" + rest, nil
	}
	return Driver{}, rawURL, &URLError{URL: redact.URL(rawURL), Reason: expected()}
}

// expected lists the URL shapes of the registered drivers.
func expected() string {
	registry.RLock()
	defer registry.RUnlock()
	if len(registry.drivers) == 0 {
		return "no sink driver is linked into this program"
	}
	var usages []string
	for _, s := range schemesLocked() {
		if u := registry.drivers[s].Usage; u != "" {
			usages = append(usages, u)
		}
	}
	if len(usages) == 1 {
		return "expected " + usages[0]
	}
	return "expected " + strings.Join(usages[:len(usages)-1], ", ") + " or " + usages[len(usages)-1]
}

// CheckURL checks a sink URL's form without opening anything (no file is
// created, no broker is contacted), so configuration can be checked at
// start. "-" is standard output (jsonl:-).
func CheckURL(rawURL string) error {
	d, u, err := driverFor(rawURL)
	if err != nil {
		return err
	}
	return d.Check(u)
}

// Same is the destination a URL names, however it is spelled: two URLs
// with one Same are one sink (jsonl:out/p.jsonl and jsonl:./out/p.jsonl).
func Same(rawURL string) string {
	d, u, err := driverFor(rawURL)
	if err != nil || d.Same == nil {
		return rawURL
	}
	return d.Same(u)
}

// Open makes the sink a URL names, through the driver registered for its
// scheme. A bad URL fails here, naming the URL (redacted) and what is
// expected.
func Open(ctx context.Context, rawURL string, opts Options) (Sink, error) {
	d, u, err := driverFor(rawURL)
	if err != nil {
		return nil, err
	}
	if err := d.Check(u); err != nil {
		return nil, err
	}
	return d.Open(ctx, u, opts)
}

// Registered answers what the configuration asks of sink URLs
// (config.SinkURLs) by the drivers registered: CheckURL and Same.
type Registered struct{}

// CheckURL is the package's CheckURL.
func (Registered) CheckURL(rawURL string) error { return CheckURL(rawURL) }

// Same is the package's Same.
func (Registered) Same(rawURL string) string { return Same(rawURL) }
