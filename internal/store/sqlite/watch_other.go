//go:build !unix

package sqlite

import "errors"

// shmWatch is unavailable without shared memory maps: stores read stamps.
type shmWatch struct{ cacheWatchUnavailable }

type cacheWatchUnavailable struct{}

func (cacheWatchUnavailable) Mark() (uint64, bool)          { return 0, false }
func (cacheWatchUnavailable) Unchanged(string, uint64) bool { return false }
func (cacheWatchUnavailable) Wrote([]string)                {}

func openShmWatch(string) (*shmWatch, error) {
	return nil, errors.New("sqlite: no WAL index watch on this platform")
}

func (*shmWatch) close() error { return nil }
