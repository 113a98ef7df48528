package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// evict writes the file at path to disk and drops it from the page cache, so that a server
// started from it reads its pages from disk as a deployed binary does. Straight after go
// build the linker's output sits in the page cache in large folios, which a process maps
// whole when it touches any page of them: the service's resident memory would then depend on
// how the kernel happened to hold the file (1 to 7 MiB more, varying from build to build).
func evict(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
