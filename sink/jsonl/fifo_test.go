//go:build unix

package jsonl_test

import "syscall"

func syscallMkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
