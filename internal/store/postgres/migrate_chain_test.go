package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"

	"github.com/swarmscore/swarmscore/internal/service"
	"github.com/swarmscore/swarmscore/internal/store/postgres/pgtest"
	"github.com/swarmscore/swarmscore/internal/store/storetest"
)

// legacyDB is a database at schema version 3, before migration 00004
// slimmed the chain records (storetest.LegacyDB).
type legacyDB struct {
	s *Store
	p *goose.Provider
}

func (l *legacyDB) Store() service.Backend { return l.s }

func (l *legacyDB) Exec(q string) error {
	_, err := l.s.pool.Exec(context.Background(), q)
	return err
}

func (l *legacyDB) Unguard() error {
	return l.Exec("ALTER TABLE ledger_records DISABLE TRIGGER ledger_records_no_update")
}

func (l *legacyDB) Down() error {
	_, err := l.p.DownTo(context.Background(), 3)
	return err
}

func (l *legacyDB) Contents() (map[string][]byte, error) {
	rows, err := l.s.pool.Query(context.Background(), `SELECT agent_id, seq, content FROM ledger_records`)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	var (
		agent   string
		seq     int64
		content []byte
	)
	_, err = pgx.ForEachRow(rows, []any{&agent, &seq, &content}, func() error {
		out[fmt.Sprintf("%s/%d", agent, seq)] = content
		return nil
	})
	return out, err
}

func (l *legacyDB) Time(at time.Time) string { return tamperer{}.Time(at) }
func (l *legacyDB) Bytes(b []byte) string    { return `'\x` + hex.EncodeToString(b) + "'::bytea" }

// TestMigrateSlimChainRecords is storetest.MigrateSlimChainRecords.
func TestMigrateSlimChainRecords(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p, db, err := newMigrator(s.pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := p.UpTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	storetest.MigrateSlimChainRecords(t, &legacyDB{s: s, p: p})
}

// TestMigrateKeyIntervals is storetest.MigrateKeyIntervals, from version
// 17, before migration 00018 gave keys their active intervals.
func TestMigrateKeyIntervals(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	p, db, err := newMigrator(s.pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := p.UpTo(ctx, 17); err != nil {
		t.Fatal(err)
	}
	storetest.MigrateKeyIntervals(t, &legacyDB{s: s, p: p})
}
