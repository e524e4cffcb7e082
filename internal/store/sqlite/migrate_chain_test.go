package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/storetest"
)

// legacyDB is a database at schema version 2, before migration 00003
// slimmed the chain records (storetest.LegacyDB), reached through a
// connection of its own.
type legacyDB struct {
	s  *Store
	db *sql.DB
	p  *goose.Provider
}

func (l *legacyDB) Store() service.Backend { return l.s }

func (l *legacyDB) Exec(q string) error {
	_, err := l.db.Exec(q)
	return err
}

func (l *legacyDB) Unguard() error { return l.Exec("DROP TRIGGER ledger_records_no_update") }

func (l *legacyDB) Down() error {
	_, err := l.p.DownTo(context.Background(), 2)
	return err
}

func (l *legacyDB) Contents() (map[string][]byte, error) {
	rows, err := l.db.Query(`SELECT agent_id, seq, content FROM ledger_records`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var agent string
		var seq int64
		var content []byte
		if err := rows.Scan(&agent, &seq, &content); err != nil {
			return nil, err
		}
		out[fmt.Sprintf("%s/%d", agent, seq)] = content
	}
	return out, rows.Err()
}

func (l *legacyDB) Time(at time.Time) string { return strconv.FormatInt(at.UnixMicro(), 10) }
func (l *legacyDB) Bytes(b []byte) string    { return "X'" + hex.EncodeToString(b) + "'" }

// TestMigrateSlimChainRecords is storetest.MigrateSlimChainRecords.
func TestMigrateSlimChainRecords(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	p, err := s.migrator(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	storetest.MigrateSlimChainRecords(t, &legacyDB{s: s, db: db, p: p})
}

// TestMigrateKeyIntervals is storetest.MigrateKeyIntervals, from version
// 15, before migration 00016 gave keys their active intervals.
func TestMigrateKeyIntervals(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	p, err := s.migrator(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 15); err != nil {
		t.Fatal(err)
	}
	storetest.MigrateKeyIntervals(t, &legacyDB{s: s, db: db, p: p})
}
