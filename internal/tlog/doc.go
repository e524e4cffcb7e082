// Package tlog is the ledger's transparency log as a standard Merkle log
// (issue 23): RFC 6962 hashing over the leaves ledger.LogLeaf writes, proofs
// from github.com/transparency-dev/merkle, tiles per C2SP tlog-tiles and
// checkpoints per C2SP tlog-checkpoint, signed as C2SP signed notes with
// golang.org/x/mod/sumdb/note. It does no I/O: the hashes it needs come
// through a Reader, which the service backs with the store.
//
// The log keeps the hashes a tile serves: level 0 holds the leaf hashes,
// and tile level L >= 1 holds the hash of every complete subtree of 256^L
// leaves (Integrate computes them from the level below). Any other node's
// hash is folded from at most 128 hashes of the level below it, so a root,
// a tile or a proof reads a few hundred hashes whatever the log's size.
package tlog
