package store

import (
	"strconv"
	"strings"

	"github.com/swarmscore/swarmscore/internal/ledger"
)

// The SQL both back ends generate from ledger.Catalogue: the statements an
// erasure runs and the condition retention prunes by. Only the dialect
// differs (Dialect).

// Dialect is how a back end writes the pieces of SQL that differ.
type Dialect struct {
	// Param is the placeholder of the nth argument, from 1: "?1", "$1".
	Param func(n int) string
	// Contains is a condition true when the text of expression s contains
	// the text of expression sub (instr, strpos).
	Contains func(s, sub string) string
	// Text is column c read and compared as text (c, c::text).
	Text func(c string) string
	// Bytewise is text expression e ordered byte by byte (e, e COLLATE "C").
	Bytewise func(e string) string
}

// EraseArg names a value an erasure statement takes.
type EraseArg uint8

// The values of an erasure statement's arguments.
const (
	ArgPseudonym EraseArg = iota + 1 // the pseudonym
	ArgErased                        // the erased id
	ArgAt                            // the erasure's time
	ArgID                            // the erasure's id
)

// Statement is one generated statement: its SQL and the values of its
// parameters, in order.
type Statement struct {
	SQL  string
	Args []EraseArg
}

// Values returns st's arguments: the pseudonym, the erased id, the
// erasure's time (as the back end stores times) and its id, as st takes
// them.
func (st *Statement) Values(pseudonym, erased string, at any, id string) []any {
	out := make([]any, len(st.Args))
	for i, a := range st.Args {
		switch a {
		case ArgPseudonym:
			out[i] = pseudonym
		case ArgErased:
			out[i] = erased
		case ArgAt:
			out[i] = at
		case ArgID:
			out[i] = id
		}
	}
	return out
}

// TextRename is a table whose free-text columns (ledger.AgentText) an
// erasure renames row by row, with ledger.ReplaceID.
type TextRename struct {
	// Columns are the free-text columns, Key the columns addressing a
	// row.
	Key, Columns []string
	// Select reads the Key columns as text, then the Columns, of every
	// row in which one of Columns contains the erased id (parameter 1).
	Select string
	// Update sets the Columns (the first len(Columns) parameters) of the
	// row whose Key columns, as text, are the remaining parameters.
	Update string
}

// ErasureSQL is what an erasure runs, in order, after writing its plan's
// erasure row, the pseudonym's agent row, the seals of other chains'
// records and the erasure's record, and before computing the LeafHash
// columns (ledger.LeafHash) and deleting the erased agent's row.
type ErasureSQL struct {
	// Updates rename the agent ids, act on the agent's rows (blank,
	// revoke, seal, delete, unlist): every set-based change.
	Updates []Statement
	// Texts are the free-text renames, run after Updates.
	Texts []TextRename
}

// NewErasureSQL generates an erasure's statements from ledger.Catalogue in
// dialect d. Tables with a LeafHash column and the agents table
// (ledger.AgentKey) are left to the back end, which computes the leaf
// hashes and writes the agent's row from the plan.
func NewErasureSQL(d Dialect) ErasureSQL {
	var out ErasureSQL
	for _, t := range ledger.Catalogue() {
		if len(t.With(ledger.AgentKey)) > 0 || len(t.With(ledger.LeafHash)) > 0 {
			continue
		}
		out.Updates = append(out.Updates, tableUpdates(d, &t)...)
		if text := t.With(ledger.AgentText); len(text) > 0 {
			out.Texts = append(out.Texts, textRename(d, &t, text))
		}
	}
	return out
}

// tableUpdates are the set-based statements of one table: the owner's
// rename with every change to the agent's rows, the other agent columns'
// renames, then the row an Unlisted column needs.
func tableUpdates(d Dialect, t *ledger.Table) []Statement {
	var out []Statement
	if del := t.With(ledger.DeleteRow); len(del) > 0 {
		var b stmt
		b.add(d, "DELETE FROM "+t.Name+" WHERE "+del[0]+" = ", ArgErased)
		return []Statement{b.done()}
	}
	for _, c := range t.With(ledger.AgentRef) {
		var b stmt
		b.add(d, "UPDATE "+t.Name+" SET "+c+" = ", ArgPseudonym)
		if c == t.Owner {
			for _, col := range t.Columns {
				switch col.Role {
				case ledger.Blanked:
					b.add(d, ", "+col.Name+" = ''")
				case ledger.Revoked:
					b.add(d, ", "+col.Name+" = COALESCE("+col.Name+", ", ArgAt)
					b.add(d, ")")
				case ledger.Sealed:
					b.add(d, ", "+col.Name+" = ", ArgID)
				}
			}
		}
		b.add(d, " WHERE "+c+" = ", ArgErased)
		out = append(out, b.done())
	}
	if unlisted := t.With(ledger.Unlisted); len(unlisted) > 0 {
		cols := append([]string{t.Owner}, unlisted[0])
		vals := "'" + string(ledger.VisibilityUnlisted) + "'"
		var b stmt
		b.add(d, "INSERT INTO "+t.Name+" ("+strings.Join(append(cols, t.With(ledger.Stamped)...), ", ")+") VALUES (", ArgPseudonym)
		b.add(d, ", "+vals)
		for range t.With(ledger.Stamped) {
			b.add(d, ", ", ArgAt)
		}
		b.add(d, ") ON CONFLICT ("+t.Owner+") DO UPDATE SET "+unlisted[0]+" = "+vals)
		out = append(out, b.done())
	}
	return out
}

// Rows is what the shared code reads: the rows of a query, in either
// back end's driver.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Tx is what the shared code writes through: a back end's transaction.
type Tx interface {
	Query(sql string, args ...any) (Rows, error)
	Exec(sql string, args ...any) error
}

// Write runs the erasure of erased under pseudonym: Updates, then Texts
// row by row. at is the erasure's time as the back end stores times, id
// its id. It returns the first error of tx.
func (e *ErasureSQL) Write(tx Tx, erased, pseudonym string, at any, id string) error {
	for _, st := range e.Updates {
		if err := tx.Exec(st.SQL, st.Values(pseudonym, erased, at, id)...); err != nil {
			return err
		}
	}
	for _, t := range e.Texts {
		rows, err := tx.Query(t.Select, erased)
		if err != nil {
			return err
		}
		updates, err := t.Renames(rows, erased, pseudonym)
		rows.Close()
		if err != nil {
			return err
		}
		for _, args := range updates {
			if err := tx.Exec(t.Update, args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// Renames reads the rows of Select (run with the erased id x) and returns
// the arguments of Update for each row that names x as a whole identifier:
// its Columns with every such occurrence replaced by p (ledger.ReplaceID;
// nil for NULL), then its Key. The caller closes rows.
func (t *TextRename) Renames(rows Rows, x, p string) ([][]any, error) {
	var updates [][]any
	for rows.Next() {
		row := make([]*string, len(t.Key)+len(t.Columns))
		ptrs := make([]any, len(row))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		if args, changed := t.rename(row, x, p); changed {
			updates = append(updates, args)
		}
	}
	return updates, rows.Err()
}

func (t *TextRename) rename(row []*string, x, p string) (args []any, changed bool) {
	for _, v := range row[len(t.Key):] {
		if v != nil {
			if r := ledger.ReplaceID(*v, x, p); r != *v {
				v, changed = &r, true
			}
		}
		args = append(args, v)
	}
	for _, k := range row[:len(t.Key)] {
		args = append(args, k)
	}
	return args, changed
}

func textRename(d Dialect, t *ledger.Table, text []string) TextRename {
	var read, found, set, match []string
	for _, k := range t.Key {
		read = append(read, d.Text(k))
	}
	for i, c := range text {
		read = append(read, c)
		found = append(found, d.Contains("COALESCE("+c+", '')", d.Param(1)))
		set = append(set, c+" = "+d.Param(i+1))
	}
	for i, k := range t.Key {
		match = append(match, d.Text(k)+" = "+d.Param(len(text)+i+1))
	}
	return TextRename{Key: t.Key, Columns: text,
		Select: "SELECT " + strings.Join(read, ", ") + " FROM " + t.Name + " WHERE " + strings.Join(found, " OR "),
		Update: "UPDATE " + t.Name + " SET " + strings.Join(set, ", ") + " WHERE " + strings.Join(match, " AND "),
	}
}

// stmt builds a Statement, numbering each distinct argument once.
type stmt struct {
	sql  strings.Builder
	args []EraseArg
}

func (b *stmt) add(d Dialect, sql string, arg ...EraseArg) {
	b.sql.WriteString(sql)
	for _, a := range arg {
		n := 0
		for i, have := range b.args {
			if have == a {
				n = i + 1
			}
		}
		if n == 0 {
			b.args = append(b.args, a)
			n = len(b.args)
		}
		b.sql.WriteString(d.Param(n))
	}
}

func (b *stmt) done() Statement { return Statement{SQL: b.sql.String(), Args: b.args} }

// NotPrunable is a condition true of a chain record (alias r of
// ledger_records) that a prune at cutoff (an SQL expression, a parameter)
// must keep: not a summary, and not a report or correction of an event
// ledger.Prunable allows (final, ended before the cutoff, never moved to
// another agent). An event table's Ends column is set exactly when the
// event is final, so "Ends < cutoff" is both of Prunable's first tests.
func NotPrunable(cutoff string) string {
	var b strings.Builder
	b.WriteString("NOT (r.event_type = " + quote(string(ledger.SummaryType)))
	for _, t := range ledger.Catalogue() {
		if t.Event == "" {
			continue
		}
		b.WriteString("\n\t  OR (r.event_type = " + quote(string(t.Event)) + " AND EXISTS (SELECT 1 FROM " + t.Name +
			" e WHERE e." + t.Key[0] + " = r.event_id AND e." + t.Ends + " < " + cutoff + "))")
	}
	b.WriteString(")\n\tOR EXISTS (SELECT 1 FROM corrections k WHERE k.event_type = r.event_type AND k.event_id = r.event_id AND k.action = " +
		quote(string(ledger.ActionReattribute)) + ")")
	return b.String()
}

// PruneCandidates selects, in byte order, the agents whose chains have a
// record after their anchor that a prune at the cutoff (parameter 1) may
// remove: a prune looks no further (the prefix's end is PruneFirstKept's
// business).
func PruneCandidates(d Dialect) string {
	return `SELECT a.id FROM agents a
	    WHERE EXISTS (SELECT 1 FROM ledger_records r WHERE r.agent_id = a.id
	        AND r.seq > COALESCE((SELECT c.seq FROM chain_anchors c WHERE c.agent_id = a.id), 0)
	        AND r.event_type <> ` + quote(string(ledger.SummaryType)) + ` AND NOT (` + NotPrunable(d.Param(1)) + `))
	    ORDER BY ` + d.Bytewise("a.id")
}

// PruneFirstKept selects the first record of agent parameter 1's chain
// after seq parameter 3 (its anchor) that a prune at cutoff parameter 2
// must keep (NULL when there is none): the prunable prefix ends before
// it.
func PruneFirstKept(d Dialect) string {
	return `SELECT MIN(r.seq) FROM ledger_records r WHERE r.agent_id = ` + d.Param(1) + ` AND r.seq > ` + d.Param(3) +
		` AND (` + NotPrunable(d.Param(2)) + `)`
}

// quote is s as an SQL string literal (s has no quote: the values are the
// ledger's own constants).
func quote(s string) string { return "'" + s + "'" }

// NumberedParam is Dialect.Param for "?1"-style placeholders (SQLite).
func NumberedParam(n int) string { return "?" + strconv.Itoa(n) }

// DollarParam is Dialect.Param for "$1"-style placeholders (PostgreSQL).
func DollarParam(n int) string { return "$" + strconv.Itoa(n) }
