package postgres

import "testing"

func TestRedact(t *testing.T) {
	if r := Redact("postgres://u:pw@h:5432/db?sslmode=disable"); r != "postgres://u:xxxxx@h:5432/db?sslmode=disable" {
		t.Errorf("Redact = %s", r)
	}
	if r := Redact("postgres://u@h/db"); r != "postgres://u@h/db" {
		t.Errorf("Redact without password = %s", r)
	}
}
