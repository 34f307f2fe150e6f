package sinkurl

import (
	"strings"
	"testing"
)

// A URL whose secret holds an unencoded /, ? or # is refused without
// being shown: a client would take the secret's start for the host and
// echo it in its errors.
func TestMistypedSecretsAreNotShown(t *testing.T) {
	for _, raw := range []string{
		"nats://u:LEAKPREFIX/rest@h:1/s?stream=S",
		"nats://LEAKTOKEN/rest@h:1/s?stream=S",
		"kafka://u:LEAK?rest@h:1/t",
		"nats://u:LEAK#rest@h:1/s",
		"nats:/u:LEAK@h:1/s",
		"nats://u%3ALEAK%40h:1/s",
	} {
		_, err := Parse(raw)
		if err == nil || strings.Contains(err.Error(), "LEAK") {
			t.Errorf("Parse(%q) = %v: want refused, the secret not shown", raw, err)
		}
	}
	if _, err := Parse("nats://u:p%2Fq@h:1/s?stream=S"); err != nil {
		t.Errorf("an encoded / in a password: %v", err)
	}
}

// A file a URL names is a small regular file: a device, a FIFO or a
// directory is refused before a driver reads it (a device would be read
// without end).
func TestTLSFilesAreSmallRegularFiles(t *testing.T) {
	for _, ca := range []string{"/dev/zero", t.TempDir()} {
		tl := TLS{On: true, CA: ca}
		if _, err := tl.Config(); err == nil || !strings.Contains(err.Error(), "expected a regular file") {
			t.Errorf("tls_ca=%s: %v", ca, err)
		}
	}
}

// Every server of a list has a port from 1 to 65535 when it names one.
func TestServerPorts(t *testing.T) {
	for _, raw := range []string{"kafka://u:pw@127.0.0.1:99999/t", "nats://h:1,h2:0/s", "nats://h:/s", "kafka://[::1]:70000/t"} {
		if _, err := Parse(raw); err == nil || !strings.Contains(err.Error(), "expected a port from 1 to 65535") || strings.Contains(err.Error(), "pw") {
			t.Errorf("Parse(%q) = %v", raw, err)
		}
	}
	for _, raw := range []string{"kafka://a:9092,b:9093/t", "nats://h/s", "nats://[::1]:4222/s"} {
		if _, err := Parse(raw); err != nil {
			t.Errorf("Parse(%q) = %v", raw, err)
		}
	}
}
