// Package jsadmin holds the JetStream administration the NATS sink and the
// frontier share: checking the server's version, moving a stream to a
// replica count, telling the server's "wrong last sequence" answer, and
// asking again while a cluster elects a leader (Retry, Transient).
package jsadmin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// MinServerVersion is the oldest nats-server the frontier runs on; Debian
// 12 ships it, and the tests run against it.
const MinServerVersion = "2.9.10"

// CheckVersion refuses a server older than min, naming both versions.
func CheckVersion(server, min string) error {
	if Older(server, min) {
		return fmt.Errorf("nats-server %s is older than %s, the oldest this program supports: upgrade the server", server, min)
	}
	return nil
}

// Older reports whether version a is older than b (major.minor.patch;
// anything after a '-' is ignored; an unreadable version counts as 0).
func Older(a, b string) bool {
	pa, pb := parts(a), parts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}

func parts(v string) [3]int {
	v, _, _ = strings.Cut(strings.TrimPrefix(v, "v"), "-")
	var out [3]int
	for i, p := range strings.SplitN(v, ".", 3) {
		out[i], _ = strconv.Atoi(p)
	}
	return out
}

// CheckClustered refuses more than one replica on a server that is not
// part of a cluster (clusterName is what the server said, "" for a single
// server). Asked, a single nats-server 2.9 records three replicas and keeps
// one: nothing would be replicated. knob names the setting to change.
func CheckClustered(clusterName string, n int, knob string) error {
	if n > 1 && clusterName == "" {
		return fmt.Errorf("%s asks for %d replicas, but the server is a single server, not a cluster, and holds 1: set %s to 1, or run a cluster of at least %d servers", knob, n, knob, n)
	}
	return nil
}

// EnsureReplicas moves a stream to n replicas in place when n > 0 and the
// stream has another count. A cluster that cannot (fewer servers than
// replicas) refuses or keeps the old count: the error says so and what to
// do, naming knob, the setting that asked. It reports whether it changed
// the stream.
func EnsureReplicas(ctx context.Context, js jetstream.StreamManager, stream string, n int, knob string) (changed bool, err error) {
	if n <= 0 {
		return false, nil
	}
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return false, err
	}
	cfg := st.CachedInfo().Config
	from := max(cfg.Replicas, 1)
	if from == n {
		return false, nil
	}
	cfg.Replicas = n
	updated, err := js.UpdateStream(ctx, cfg)
	if err != nil {
		return false, fmt.Errorf("stream %s has %d replica(s) and the server refused to change it to %d: %w%s", stream, from, n, err, ReplicasHint(err, n, knob))
	}
	if got := max(updated.CachedInfo().Config.Replicas, 1); got != n {
		return false, fmt.Errorf("stream %s has %d replica(s) and the server kept %d when asked for %d%s", stream, from, got, n, ReplicasHint(nil, n, knob))
	}
	return true, nil
}

// ReplicasHint says how to get out of a replica count the server cannot
// hold, naming knob (the setting that asked), or "" when err is not about
// replicas.
func ReplicasHint(err error, n int, knob string) string {
	if err != nil && !strings.Contains(err.Error(), "replicas") && !strings.Contains(err.Error(), "insufficient resources") {
		return ""
	}
	return fmt.Sprintf(" (a single server holds 1 replica and a cluster at most one per server: set %s to 1, or run a cluster of at least %d servers)", knob, n)
}

// WrongLastSequence reports whether err is the server refusing a publish
// whose expected last sequence (per subject) did not hold.
func WrongLastSequence(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
