//go:build !linux

package main

// evict does nothing where the page cache cannot be asked to drop a file (see evict_linux.go).
func evict(string) error { return nil }
