package redact

import (
	"errors"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	tests := map[string]string{
		"nats://user:secret@127.0.0.1:4222/papers?stream=P": "nats://user:REDACTED@127.0.0.1:4222/papers?stream=P",
		"nats://s3cr3ttoken@host:4222/x":                    "nats://REDACTED@host:4222/x",
		"kafka://a:1,b:2/topic":                             "kafka://a:1,b:2/topic",
		"jsonl:out/papers.jsonl":                            "jsonl:out/papers.jsonl",
		"nats://u:p%zz@host/x":                              "nats://REDACTED@host/x",
		"kafka://u:pw@a:1,b:2/topic":                        "kafka://u:REDACTED@a:1,b:2/topic",
		"http://user:pw@site.example/literature_d1.htm":     "http://user:REDACTED@site.example/literature_d1.htm",
		// A server list where each server has its scheme and user info.
		"nats://a:pw1@h:1,nats://b:pw2@h:2": "nats://a:REDACTED@h:1,nats://b:REDACTED@h:2",
		// A PostgreSQL user alone is a role, shown as the sink's errors
		// show it; its password is not.
		"postgres://crawler@db:5432/lit?table=papers": "postgres://crawler@db:5432/lit?table=papers",
		"postgresql://crawler:pw@db:5432/lit":         "postgresql://crawler:REDACTED@db:5432/lit",
		"POSTGRES://crawler@db/lit":                   "postgres://crawler@db/lit",
	}
	for in, want := range tests {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTextAndError(t *testing.T) {
	raw := "nats://admin:hunter22@10.0.0.1:4222,10.0.0.2:4222"
	msg := `dial nats://admin:hunter22@10.0.0.1:4222: refused; auth admin:hunter22 rejected (password hunter22)`
	got := Text(msg, raw)
	if strings.Contains(got, "hunter22") || !strings.Contains(got, "nats://admin:REDACTED@10.0.0.1:4222:") {
		t.Errorf("Text = %q", got)
	}
	if got := Error(errors.New("plain failure"), raw); got != "plain failure" {
		t.Errorf("Error without secrets changed the text: %q", got)
	}
	if Error(nil) != "" {
		t.Error("Error(nil) is not empty")
	}
}

// Secrets outside the user information: a query parameter named like one,
// and "user:password@host" with no scheme.
func TestURLQueryAndSchemeless(t *testing.T) {
	for raw, want := range map[string]string{
		"nats://h:4222/s?stream=S&token=PW": "nats://h:4222/s?stream=S&token=REDACTED",
		"bob:PW@host":                       "REDACTED@host",
		"nats://h:4222/s?stream=S":          "nats://h:4222/s?stream=S",
		"jsonl:out/a@b.jsonl":               "jsonl:out/a@b.jsonl",
		"https:/bob:PW@example.org/feeds":   "https:/REDACTED@example.org/feeds",
		"https:/bob:ab/PW@example.org":      "https:/REDACTED@example.org",
		"nats:/PW@127.0.0.1:4222/s":         "nats:/REDACTED@127.0.0.1:4222/s",
		"HTTPS:PW@example.org":              "HTTPS:REDACTED@example.org",
		`https:\\bob:PW@example.org`:        `https:\\REDACTED@example.org`,
	} {
		if got := URL(raw); got != want {
			t.Errorf("URL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestSecrets(t *testing.T) {
	got := Secrets(`password authentication failed: "pa ss/w?rd" (pa+ss%2Fw%3Frd, pa%20ss%2Fw%3Frd), pw`, "pa ss/w?rd", "pw")
	if strings.Contains(got, "pa ss") || strings.Contains(got, "pa+ss") || strings.Contains(got, "pa%20ss") || !strings.HasSuffix(got, ", pw") {
		t.Fatalf("Secrets: %q", got)
	}
}
