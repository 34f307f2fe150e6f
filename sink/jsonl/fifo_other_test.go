//go:build !unix

package jsonl_test

import "errors"

func syscallMkfifo(string) error { return errors.New("no mkfifo") }
