package tlog

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/swarmscore/swarmscore/internal/errkind"
)

// Tile names a tile (C2SP tlog-tiles): its level, its index within the
// level and its width, 1 to TileWidth (TileWidth for a full tile).
type Tile struct {
	Level int
	Index uint64
	Width int
}

// MaxTileLevel is the highest level a tile path may name (C2SP
// tlog-tiles: 0 to 63).
const MaxTileLevel = 63

// Path is the tile's path under the log's prefix: tile/<L>/<N>[.p/<W>],
// where <N> is written in groups of three decimal digits, each but the
// last prefixed with x (tile/0/x001/234 is tile 1234 of level 0).
func (t Tile) Path() string {
	p := "tile/" + strconv.Itoa(t.Level) + "/" + indexPath(t.Index)
	if t.Width < TileWidth {
		p += ".p/" + strconv.Itoa(t.Width)
	}
	return p
}

func indexPath(n uint64) string {
	groups := []string{fmt.Sprintf("%03d", n%1000)}
	for n /= 1000; n > 0; n /= 1000 {
		groups = append(groups, fmt.Sprintf("x%03d", n%1000))
	}
	for i, j := 0, len(groups)-1; i < j; i, j = i+1, j-1 {
		groups[i], groups[j] = groups[j], groups[i]
	}
	return strings.Join(groups, "/")
}

// ParseTilePath reads a path as Path writes it (the part after the log's
// prefix, starting at "tile/"). Only the canonical form is accepted: each
// group exactly three digits, no leading x000 group, a partial width of 1
// to 255. The entries bundles (tile/entries/...) are not served: a leaf
// holds only hashes, which the level-0 tiles already give. Errors:
// ErrInvalid.
func ParseTilePath(p string) (Tile, error) {
	bad := func(why string) (Tile, error) {
		return Tile{}, fmt.Errorf("%w: %q is not a tile path (tile/<L>/<N>[.p/<W>]): %s", errkind.ErrInvalid, clip(p), why)
	}
	rest, ok := strings.CutPrefix(p, "tile/")
	if !ok {
		return bad("it does not start with tile/")
	}
	if strings.HasPrefix(rest, "entries/") {
		return bad("entry bundles are not served; the level-0 tiles hold the leaf hashes")
	}
	lvl, rest, ok := strings.Cut(rest, "/")
	if !ok {
		return bad("no index")
	}
	level, err := strconv.Atoi(lvl)
	if err != nil || level < 0 || level > MaxTileLevel || strconv.Itoa(level) != lvl {
		return bad("the level is not 0 to 63")
	}
	t := Tile{Level: level, Width: TileWidth}
	if idx, w, partial := strings.Cut(rest, ".p/"); partial {
		width, err := strconv.Atoi(w)
		if err != nil || width < 1 || width >= TileWidth || strconv.Itoa(width) != w {
			return bad("a partial tile's width is 1 to 255")
		}
		t.Width, rest = width, idx
	}
	groups := strings.Split(rest, "/")
	var n uint64
	for i, g := range groups {
		last := i == len(groups)-1
		if !last {
			var ok bool
			if g, ok = strings.CutPrefix(g, "x"); !ok {
				return bad("every group of the index but the last starts with x")
			}
		}
		if len(g) != 3 || strings.Trim(g, "0123456789") != "" {
			return bad("the index is written in groups of three digits")
		}
		d, _ := strconv.ParseUint(g, 10, 64)
		if n > (1<<63)/1000 {
			return bad("the index is too large")
		}
		n = n*1000 + d
		if i == 0 && !last && d == 0 {
			return bad("the index has a leading x000 group")
		}
	}
	t.Index = n
	return t, nil
}

// Exists reports whether the tile is in the log of size leaves: the
// hashes it holds are all of complete subtrees of that log.
func (t Tile) Exists(size uint64) bool {
	entries := size
	for range t.Level {
		entries /= TileWidth
	}
	return t.Index < (1<<63)/TileWidth && t.Index*TileWidth+uint64(t.Width) <= entries
}

// ReadTile returns a tile's bytes: its hashes, concatenated. Errors:
// ErrNotFound for a tile not in the log of size leaves.
func ReadTile(ctx context.Context, r Reader, t Tile, size uint64) ([]byte, error) {
	if !t.Exists(size) {
		return nil, fmt.Errorf("%w: tile %s is not in the log of %d leaves", errkind.ErrNotFound, t.Path(), size)
	}
	from := t.Index * TileWidth
	hs, err := r.Hashes(ctx, t.Level, from, from+uint64(t.Width))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(hs)*HashSize)
	for _, h := range hs {
		out = append(out, h...)
	}
	return out, nil
}
