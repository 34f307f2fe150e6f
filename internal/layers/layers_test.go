package layers

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/litcrawl/litcrawl/"

// table is docs/architecture.md's layer table read: each layer's
// packages, what each layer may import, and what each package may not
// link.
type table struct {
	layerOf  map[string]string   // package → its layer
	packages map[string][]string // layer → its packages
	allowed  map[string][]string // layer → layers and packages it may import
	noLink   map[string][]string // package → module path prefixes it may not link
}

// cells splits a markdown table row into its cells.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "| ---") {
		return nil
	}
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// items are a cell's comma-separated entries, backticks taken off.
func items(cell string) []string {
	var out []string
	for _, it := range strings.Split(cell, ",") {
		it = strings.TrimSpace(strings.Trim(strings.TrimSpace(it), "`"))
		if i := strings.Index(it, " ("); i >= 0 {
			it = it[:i] // "leaves (and only tests import them)"
		}
		if it != "" {
			out = append(out, it)
		}
	}
	return out
}

func readTable(path string) (table, error) {
	f, err := os.Open(path)
	if err != nil {
		return table{}, err
	}
	defer f.Close()
	t := table{layerOf: map[string]string{}, packages: map[string][]string{}, allowed: map[string][]string{}, noLink: map[string][]string{}}
	var in string // the table being read: "layers", "links" or ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		c := cells(sc.Text())
		switch {
		case len(c) == 3 && c[0] == "layer" && c[1] == "packages":
			in = "layers"
		case len(c) == 2 && c[0] == "package" && c[1] == "links none of":
			in = "links"
		case c == nil && !strings.HasPrefix(strings.TrimSpace(sc.Text()), "| ---"):
			in = ""
		case in == "layers" && len(c) == 3:
			layer := c[0]
			for _, p := range items(c[1]) {
				t.layerOf[p] = layer
				t.packages[layer] = append(t.packages[layer], p)
			}
			t.allowed[layer] = items(c[2])
		case in == "links" && len(c) == 2:
			for _, p := range items(c[0]) {
				t.noLink[p] = items(c[1])
			}
		}
	}
	if len(t.layerOf) == 0 || len(t.noLink) == 0 {
		return t, fmt.Errorf("%s: no layer table or no links table", path)
	}
	return t, sc.Err()
}

// may reports whether a package of layer from may import package to.
func (t table) may(from, to string) bool {
	for _, a := range t.allowed[from] {
		if a == "anything" || a == to || t.layerOf[to] == a && a != from {
			return true
		}
	}
	return false
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

// violations are the imports and links the table does not allow, and the
// packages it does not place.
func (t table) violations(pkgs []pkg) []string {
	var out []string
	kit := func(p string) bool { return t.layerOf[p] == "test kits" }
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module)
		layer, ok := t.layerOf[name]
		if !ok {
			out = append(out, fmt.Sprintf("%s: in no layer of the table: add it to docs/architecture.md", name))
			continue
		}
		for _, imp := range p.Imports {
			to, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if kit(to) && !kit(name) {
				out = append(out, fmt.Sprintf("%s imports %s, a test kit, outside its tests", name, to))
			} else if !t.may(layer, to) {
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s): the table does not allow it", name, layer, to, t.layerOf[to]))
			}
		}
		for _, dep := range p.Deps {
			for _, no := range t.noLink[name] {
				if strings.HasPrefix(dep, no) {
					out = append(out, fmt.Sprintf("%s links %s", name, dep))
				}
			}
		}
	}
	return out
}

func goList(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,GoFiles,Imports,Deps", module+"...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String()) // an import cycle is said here
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		// Stat each file, so that go test's cache knows this test's
		// result depends on them (it does not see what go list read).
		for _, f := range p.GoFiles {
			if _, err := os.Stat(filepath.Join(p.Dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportsFollowTheLayers: every package of the module imports only
// what its layer's row allows, links nothing its row in the second table
// forbids, and is placed in the table; test kits are imported by tests
// alone.
func TestImportsFollowTheLayers(t *testing.T) {
	tbl, err := readTable("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := goList(t)
	if len(pkgs) < 30 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, v := range tbl.violations(pkgs) {
		t.Error(v)
	}
	// Every package the table names exists (a renamed package leaves no
	// stale row behind).
	for p := range tbl.layerOf {
		if !slices.ContainsFunc(pkgs, func(q pkg) bool { return q.ImportPath == module+p }) {
			t.Errorf("the table places %s, which is no package", p)
		}
	}
}

// TestTheLayerCheckCatchesAForbiddenImport: the check fails when a
// package imports what its row does not allow (the engine the
// configuration, the fleet the HTTP crawler), links what it may not (the
// engine YAML), or uses a test kit outside tests, and when a package is
// in no layer.
func TestTheLayerCheckCatchesAForbiddenImport(t *testing.T) {
	tbl, err := readTable("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p    pkg
		want string
	}{
		{pkg{ImportPath: module + "internal/engine", Imports: []string{module + "internal/config"}}, "internal/engine (core) imports internal/config (settings)"},
		{pkg{ImportPath: module + "internal/frontier", Imports: []string{module + "crawler"}}, "internal/frontier (fleet) imports crawler (adapters)"},
		{pkg{ImportPath: module + "internal/quality", Imports: []string{module + "internal/config"}}, "internal/quality (ports) imports internal/config"},
		{pkg{ImportPath: module + "internal/engine", Deps: []string{"go.yaml.in/yaml/v3"}}, "internal/engine links go.yaml.in/yaml/v3"},
		{pkg{ImportPath: module + "internal/app", Imports: []string{module + "internal/natstest"}}, "a test kit, outside its tests"},
		{pkg{ImportPath: module + "internal/newthing"}, "internal/newthing: in no layer"},
		{pkg{ImportPath: module + "record", Imports: []string{module + "parser"}}, "record (schema) imports parser (parse)"},
	} {
		v := tbl.violations([]pkg{tt.p})
		if len(v) != 1 || !strings.Contains(v[0], tt.want) {
			t.Errorf("%s importing %v, linking %v: violations %q, want one with %q", tt.p.ImportPath, tt.p.Imports, tt.p.Deps, v, tt.want)
		}
	}
	// And allows what the rows allow.
	if v := tbl.violations([]pkg{{ImportPath: module + "internal/app", Imports: []string{module + "internal/engine", module + "crawler", "fmt"}}}); v != nil {
		t.Errorf("app importing the engine and the crawler: %q", v)
	}
}
