package sink

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/litcrawl/litcrawl/record"
)

// Marshal is the one encoding of a record that every sink sends: JSON
// without HTML escaping (& < > stay as they are), fields in the order of
// record.Record, no trailing newline. The same record is the same bytes in
// a JSONL line, a NATS message and a Kafka value.
func Marshal(r *record.Record) ([]byte, error) {
	var buf bytes.Buffer
	if err := encode(&buf, r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// EncodeLines replaces buf's content with recs as JSON lines, each record
// encoded as Marshal encodes it and followed by a newline.
func EncodeLines(buf *bytes.Buffer, recs []record.Record) error {
	buf.Reset()
	for i := range recs {
		if err := encode(buf, &recs[i]); err != nil {
			return err
		}
	}
	return nil
}

// MaxLine is the longest JSON line (a record's encoding) the JSONL sink
// writes: a record longer than that is refused (sink.ErrRefused) and kept
// in the quarantine, so that every line of the file can be read by a
// reader with a bounded buffer (the quarantine's own among them).
const MaxLine = 16 << 20

// EncodeLinesBounded is EncodeLines refusing (ErrRefused) a batch with a
// record whose line is longer than max, before anything is written.
func EncodeLinesBounded(buf *bytes.Buffer, recs []record.Record, max int) error {
	buf.Reset()
	for i := range recs {
		before := buf.Len()
		if err := encode(buf, &recs[i]); err != nil {
			return err
		}
		if n := buf.Len() - before; n > max {
			return Refused(fmt.Errorf("record %s is %d bytes encoded, over the %d a line may hold", recs[i].ID, n, max))
		}
	}
	return nil
}

func encode(buf *bytes.Buffer, r *record.Record) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode record %s: %w", r.ID, err)
	}
	return nil
}
