package pgtest_test

import (
	"context"
	"testing"

	"github.com/litcrawl/litcrawl/internal/pgtest"
)

// The harness starts a server that takes connections over TCP (with and
// without TLS) and on its socket, and starts again after a stop.
func TestServerStartsStopsStarts(t *testing.T) {
	s := pgtest.New(t)
	ctx := context.Background()
	db := s.NewDB(t)
	if err := s.Exec(ctx, db, "CREATE TABLE x (a int)"); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Connect(ctx, db); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, db, "INSERT INTO x VALUES (1)"); err != nil {
		t.Fatal(err)
	}
}
