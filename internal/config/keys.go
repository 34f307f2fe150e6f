package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/litcrawl/litcrawl/internal/redact"
	"github.com/litcrawl/litcrawl/internal/suggest"
)

// checkKeys walks a decoded YAML document against the configuration's
// structs before it is decoded, so that a mistake is named by its key path
// and in words: an unknown key with the nearest valid one
// ("fetch.dealy: unknown key; did you mean fetch.delay?"), a value of the
// wrong kind with what is expected ("fetch.attempts: "abc": expected a
// whole number"), never a Go type name.
func checkKeys(doc *yaml.Node) error {
	if doc == nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	return checkNode(doc.Content[0], reflect.TypeOf(Config{}), "")
}

func checkNode(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Tag == "!!null" {
		return nil
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeOf(Journal{}) && n.Kind == yaml.ScalarNode:
		var id int64
		if err := n.Decode(&id); err != nil || n.ShortTag() != "!!int" {
			return fmt.Errorf("%s: %q: expected a journal id, or a section with id: and the journal's own settings (line %d)", path, shown(n.Value), n.Line)
		}
		return nil
	case t == reflect.TypeOf(Duration(0)):
		var d Duration
		if err := n.Decode(&d); err != nil {
			return fmt.Errorf("%s: %q is not a duration (expected e.g. 500ms, 1.5s, 2m)", path, shown(n.Value))
		}
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: expected a section of keys (key: value on the lines below), not %q", nameOr(path), shown(n.Value))
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i].Value, n.Content[i+1]
			ft, ok := fields[key]
			if !ok {
				msg := fmt.Sprintf("%s: unknown key (line %d)", join(path, key), n.Content[i].Line)
				if near := suggest.Nearest(key, slices.Collect(maps.Keys(fields))...); near != "" {
					msg += "; did you mean " + join(path, near) + "?"
				} else if strings.HasPrefix(path, "journals[") {
					msg += "; a journal's entry takes " + journalKeys
				}
				return fmt.Errorf("%s", msg)
			}
			if err := checkNode(val, ft, join(path, key)); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%s: %q: expected a list, e.g. [%s]", path, shown(n.Value), example(t.Elem()))
		}
		for i, e := range n.Content {
			if err := checkNode(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%s: expected %s, not a list or a section", path, kindName(t))
	}
	// A whole number is written as one: 64.9, 1e1 or 0.5 for a count
	// would be cut to a whole number without a word.
	wholeWanted := t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64
	if err := n.Decode(reflect.New(t).Interface()); err != nil || wholeWanted && n.ShortTag() != "!!int" {
		return fmt.Errorf("%s: %q: expected %s (line %d)", path, shown(n.Value), kindName(t), n.Line)
	}
	return nil
}

// journalKeys are the keys a journal's entry takes.
const journalKeys = "id, name, nightly.stop_after_known_pages, nightly.max_pages, backfill.stop_after_repeat_pages, backfill.max_pages, sinks and fetch.delay"

// shown is a value as an error may quote it: a URL's secrets redacted
// (a sink URL written where a list was expected holds its password).
func shown(v string) string { return redact.Text(v) }

// yamlFields maps a struct's YAML keys to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		out[name] = f.Type
	}
	return out
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "text"
	}
	return "a value"
}

func example(t reflect.Type) string {
	if t == reflect.TypeOf(Journal{}) {
		return "501422, 501423"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "501422, 501423"
	case reflect.String:
		return "a, b"
	}
	return "…"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func nameOr(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}
