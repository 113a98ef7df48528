package pets

import (
	"database/sql"
	"errors"
	"fmt"

	"petstore/models"
)

// scanPage reads the rows of a page of n pets, and whether more follow; its errors are the
// driver's. It is the innermost loop of every listing, written to spare database/sql's
// generic conversions: the integer columns are read as they come, not by reflection, and
// the names are read as raw bytes into one buffer that becomes one string for the page, which
// the pets' names share, not a string each; no string per status either, the three being
// shared.
func scanPage(rows *sql.Rows, n int) ([]models.Pet, bool, error) {
	pets := make([]models.Pet, 0, n+1)
	var (
		row struct {
			id, category any // int64 but for another driver (convertInt)
			name, status sql.RawBytes
		}
		nameBuf [1024]byte // the names of a page of 20, or of 100 short ones
		endBuf  [101]int32 // a page of 100 and the one after it
		names   = nameBuf[:0]
		ends    = endBuf[:0] // of each pet's name in names
	)
	for rows.Next() {
		if err := rows.Scan(&row.id, &row.name, &row.category, &row.status); err != nil {
			return nil, false, err
		}
		var (
			p   models.Pet
			ok  bool
			err error
		)
		if p.ID, ok = row.id.(int64); !ok {
			if p.ID, err = convertInt(rows, 0, row.id); err != nil {
				return nil, false, err
			}
		}
		if p.CategoryID, ok = row.category.(int64); !ok {
			if p.CategoryID, err = convertInt(rows, 2, row.category); err != nil {
				return nil, false, err
			}
		}
		if row.status != nil { // a NULL status; the column's strings are never nil
			p.Status = models.StatusPtr(row.status)
		}
		pets = append(pets, p)
		names = append(names, row.name...)
		ends = append(ends, int32(len(names)))
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	all, start := string(names), int32(0)
	for i, end := range ends {
		pets[i].Name, start = all[start:end], end
	}
	if len(pets) > n {
		return pets[:n], true, nil
	}
	return pets, false, nil
}

// convertInt returns the integer of column col, scanned into v (an any, which database/sql
// fills without converting: the int64 that the MySQL and SQLite drivers return is taken as it
// is by scanPage, where a Scanner or an *int64 would cost a type assertion or reflection) when
// v is not an int64: converted as sql.NullInt64 converts it, its error worded as Rows.Scan's.
func convertInt(rows *sql.Rows, col int, v any) (int64, error) {
	var n sql.NullInt64
	err := n.Scan(v)
	if err == nil && !n.Valid {
		err = errors.New("pets: NULL in an integer column")
	}
	if err != nil {
		name := ""
		if cols, cerr := rows.Columns(); cerr == nil && col < len(cols) {
			name = cols[col]
		}
		return 0, fmt.Errorf("sql: Scan error on column index %d, name %q: %w", col, name, err)
	}
	return n.Int64, nil
}
