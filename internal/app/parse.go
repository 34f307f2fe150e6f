package app

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sourcegraph/conc/stream"

	"github.com/litcrawl/litcrawl/parser"
)

// Parse is a parse of saved listing pages (crawl parse).
type Parse struct {
	// Paths are page files, or directories walked in lexical order for
	// .htm, .html and .txt files.
	Paths []string
	// URL, when set, is the URL of the one page given: its journal and
	// page; otherwise they come from each file's name.
	URL, Charset string
	Format       parser.Format
	// MaxInput bounds a file read (parse.max_input_bytes); Concurrency the
	// files parsed at once.
	MaxInput    int64
	Concurrency int
	Sinks       []string // none: standard output
}

// Parse parses the files of p.Paths, Concurrency at a time, and delivers
// their records in input order (Pages: each paper once, as a crawl
// delivers them). Each file's page, or why it could not be read, goes to
// each in input order, before its records are delivered. Every path must
// exist before anything is written. It returns the first error that stops
// it (a sink, a walk, ctx); files that could not be read do not stop it.
func (e *Env) Parse(ctx context.Context, p Parse, each func(path string, page *parser.Page, err error)) error {
	for _, path := range p.Paths {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("parse: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out, err := OpenSinks(ctx, p.Sinks, SinkOptions{Stdout: e.Stdout, Log: e.log(), Metrics: e.Metrics})
	if err != nil {
		return err
	}
	pages := newMemoryDelivery(out, "")
	var writeErr error
	s := stream.New().WithMaxGoroutines(max(p.Concurrency, 1))
	submit := func(path string) {
		s.Go(func() stream.Callback {
			page, err := e.parseFile(ctx, p, path)
			return func() {
				each(path, page, err)
				if err == nil && writeErr == nil {
					if _, writeErr = pages.Deliver(ctx, page); writeErr != nil {
						cancel() // stop walking: nothing more can be delivered
					}
				}
			}
		})
	}
	walkErr := func() error {
		for _, path := range p.Paths {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := walkInputs(ctx, path, submit); err != nil {
				return err
			}
		}
		return nil
	}()
	s.Wait()
	if err := out.Close(); err != nil && writeErr == nil {
		writeErr = err
	}
	switch {
	case writeErr != nil:
		return fmt.Errorf("deliver records: %w", writeErr)
	case walkErr != nil:
		return walkErr
	}
	return ctx.Err()
}

// ReadPage reads one page file (at most p.MaxInput bytes) and the options
// to parse it with: its journal and page from p.URL, else from the file's
// name under the site's URL scheme.
func (e *Env) ReadPage(ctx context.Context, p Parse, path string) ([]byte, parser.Options, error) {
	scheme := e.Config.Site.Scheme()
	journal, pageNo, _ := scheme.ParseFile(path)
	if p.URL != "" {
		journal, pageNo, _ = scheme.ParseURL(p.URL)
	}
	data, err := readCapped(ctx, path, p.MaxInput)
	return data, parser.Options{URL: p.URL, Journal: journal, Page: pageNo, Capture: filepath.ToSlash(path), Charset: p.Charset, Format: p.Format}, err
}

func (e *Env) parseFile(ctx context.Context, p Parse, path string) (*parser.Page, error) {
	data, opts, err := e.ReadPage(ctx, p, path)
	if err != nil {
		return nil, err
	}
	page, err := parser.Parse(data, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return page, nil
}

// walkInputs calls submit for path, or for each page file below it in
// lexical order when it is a directory.
func walkInputs(ctx context.Context, path string, submit func(string)) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	if !info.IsDir() {
		submit(path)
		return nil
	}
	return filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("parse: walk %s: %w", p, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.IsDir() && isPageFile(p) {
			submit(p)
		}
		return nil
	})
}

func isPageFile(p string) bool {
	switch strings.ToLower(filepath.Ext(p)) {
	case ".htm", ".html", ".txt":
		return true
	}
	return false
}

// readCapped reads path whole, failing once it holds more than max bytes
// (so /dev/zero or a huge file never takes the memory), and returns at
// once when ctx ends, even while a pipe or FIFO waits for its writer (the
// read is left behind; the process is about to exit).
func readCapped(ctx context.Context, path string, max int64) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, max+1))
		if err == nil && int64(len(data)) > max {
			err = fmt.Errorf("%s: larger than parse.max_input_bytes (%d bytes; --max-input-bytes raises it)", path, max)
		}
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", path, ctx.Err())
	}
}
