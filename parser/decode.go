package parser

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/transform"
)

// decodeBytes turns the bytes of a page into UTF-8 text. It is the one place
// where page bytes are decoded. The charset comes, in this order, from
// override (a label such as "gbk"), a byte-order mark, the Content-Type
// header, a <meta> declaration in the first 1,024 bytes (HTML only), and
// otherwise is UTF-8, which the site serves; undeclared bytes that are not
// UTF-8 but read cleanly as GB18030 are taken as GB18030. Invalid bytes
// become U+FFFD and a multi-byte character cut off at the very end is
// dropped; it never panics. name is the charset used; guessed is true when
// it was inferred rather than declared.
//
// When data is already clean UTF-8 it is returned as is (no copy), so
// callers must copy what they keep and must not modify it.
func decodeBytes(data []byte, contentType, override string, isHTML bool) (text []byte, name string, guessed bool, err error) {
	if override != "" {
		if err := CheckCharset(override); err != nil {
			return nil, "", false, err
		}
		enc, n := charset.Lookup(override)
		return decodeWith(enc, n, data), n, false, nil
	}
	probe := data
	if !isHTML {
		// Plain text has no <meta>: only a BOM or the header count.
		probe = nil
		if bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}) ||
			bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) {
			probe = data
		}
	}
	enc, n, certain := charset.DetermineEncoding(probe, contentType)
	if certain || declaresCharset(probe) {
		return decodeWith(enc, n, data), n, false, nil
	}
	// Nothing declared: the site serves UTF-8, but a saved page may have
	// been re-encoded by whoever saved it.
	if !validUTF8Prefix(data) {
		if gb, ok := tryGB18030(data); ok {
			return gb, "gb18030", true, nil
		}
	}
	return cleanUTF8(data), "utf-8", true, nil
}

func declaresCharset(b []byte) bool {
	if len(b) > 1024 {
		b = b[:1024]
	}
	return bytes.Contains(bytes.ToLower(b), []byte("charset"))
}

func decodeWith(enc encoding.Encoding, name string, data []byte) []byte {
	if name == "utf-8" || enc == nil || enc == encoding.Nop {
		if bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}) {
			data = data[3:]
		}
		return cleanUTF8(data)
	}
	out, _, err := transform.Bytes(enc.NewDecoder(), data)
	if err != nil {
		// x/text decoders replace invalid input rather than fail; this is
		// only reachable for a decoder that refuses, so fall back to bytes.
		return cleanUTF8(data)
	}
	return cleanUTF8(out)
}

// validUTF8Prefix reports whether data is valid UTF-8 except possibly for a
// character cut off at its very end.
func validUTF8Prefix(data []byte) bool {
	return utf8.Valid(trimPartialRune(data))
}

func trimPartialRune(data []byte) []byte {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				return data[:i]
			}
			break
		}
	}
	return data
}

// cleanUTF8 drops a cut-off last character and replaces invalid bytes. It
// returns data itself (shortened) when nothing else needs replacing.
func cleanUTF8(data []byte) []byte {
	data = trimPartialRune(data)
	if utf8.Valid(data) {
		return data
	}
	return bytes.ToValidUTF8(data, []byte("\uFFFD"))
}

// tryGB18030 decodes data as GB18030 and accepts the result only when it
// decodes cleanly and holds Chinese text.
func tryGB18030(data []byte) ([]byte, bool) {
	out, _, err := transform.Bytes(simplifiedchinese.GB18030.NewDecoder(), data)
	if err != nil {
		return nil, false
	}
	if bytes.ContainsRune(out, utf8.RuneError) || !hasCJK(string(out)) {
		return nil, false
	}
	return out, true
}

// CheckCharset reports whether label names a charset Decode knows.
func CheckCharset(label string) error {
	if enc, _ := charset.Lookup(label); enc == nil {
		return fmt.Errorf("unknown charset %q (expected a label such as utf-8, gbk, gb18030, big5)", label)
	}
	return nil
}
