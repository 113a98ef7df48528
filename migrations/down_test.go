package migrations

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// TestDropsData checks which statements of a down section are taken to drop data: all but
// those that create, insert, or drop indexes and constraints; every shipped migration's down
// drops its tables or columns, and so drops data.
func TestDropsData(t *testing.T) {
	keeps := []string{
		"CREATE INDEX idx ON pets (status, id)",
		"DROP INDEX idx_pets_status_id ON pets",
		"ALTER TABLE pets ADD COLUMN born DATE NULL, ADD KEY idx (category_id, id)",
		"ALTER TABLE pets DROP INDEX idx, DROP CONSTRAINT chk_pets_status, DROP FOREIGN KEY fk",
		"INSERT INTO api_keys (name) VALUES ('a,b')",
	}
	drops := []string{
		"DROP TABLE pets",
		"ALTER TABLE pets DROP COLUMN born",
		"ALTER TABLE pets DROP born",
		"ALTER TABLE pets ADD KEY idx (a, b), DROP COLUMN born",
		"ALTER TABLE pets MODIFY name VARCHAR(10)",
		"TRUNCATE pets",
		"DELETE FROM pets",
		"UPDATE pets SET status = NULL",
	}
	if got := dropsData(keeps); len(got) > 0 {
		t.Errorf("taken to drop data: %q; want none", got)
	}
	if got := dropsData(drops); !slices.Equal(got, drops) {
		t.Errorf("taken to drop data: %q; want all of %q", got, drops)
	}
	notTableOrColumn := func(s string) bool {
		return !strings.HasPrefix(s, "DROP TABLE ") && !strings.Contains(s, " DROP COLUMN ")
	}
	for _, dialect := range []string{MySQL, SQLite} {
		names, err := fs.Glob(files, dialect+"/*.sql")
		if err != nil || len(names) == 0 {
			t.Fatalf("%s: %v, %v", dialect, names, err)
		}
		for _, name := range names {
			text, _ := files.ReadFile(name)
			got := dropsData(downSection(string(text)))
			if len(got) == 0 || slices.ContainsFunc(got, notTableOrColumn) {
				t.Errorf("%s: statements that drop data: %q; want its DROP TABLEs and DROP COLUMNs", name, got)
			}
		}
	}
}
