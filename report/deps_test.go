package report_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPackagesLinkOnlyWhatTheyUse: the report, the engine, the run
// history, the crawler and the configuration link no sink driver, broker
// client, archive reader or (but the crawler) HTTP crawling library: each
// takes what it needs through a port of its own (the fetch port, the
// ledger port, the sink core), and only the binary imports the drivers.
func TestPackagesLinkOnlyWhatTheyUse(t *testing.T) {
	clients := []string{"github.com/nats-io/", "github.com/twmb/franz-go", "github.com/jackc/pgx", "github.com/nlnwa/gowarc", "github.com/gocolly/colly"}
	for _, tt := range []struct {
		pkg     string
		allowed string // a client the package may link
	}{
		{"./report", ""},
		{"./engine", ""},
		{"./history", ""},
		{"./fetch", ""},
		{"./config", ""},
		{"./crawler", "github.com/gocolly/colly"},
	} {
		out, err := exec.Command("go", "list", "-deps", "../"+strings.TrimPrefix(tt.pkg, "./")).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tt.pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, c := range clients {
				if strings.HasPrefix(dep, c) && c != tt.allowed {
					t.Errorf("%s links %s", tt.pkg, dep)
				}
			}
		}
	}
}
