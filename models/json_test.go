package models

import (
	"encoding/json"
	"testing"
)

// FuzzPetJSON checks that AppendJSON and AppendPetsJSON write what json.Marshal writes.
func FuzzPetJSON(f *testing.F) {
	for _, s := range []string{"Rex", "", `a"b\c/`, "\x00\x01\b\f\n\r\t\x1f\x7f", "<b>&amp;</b>", "ü 🐕 日本", "\xff\xfe\xed\xa0\x80", "\u2028\u2029\ufffd"} {
		f.Add(int64(1), s, int64(1)<<62, "available", true)
		f.Add(int64(-9), s, int64(0), s, false)
	}
	for _, st := range []PetStatus{PetStatusAvailable, PetStatusPending, PetStatusSold, "lost", `"<&>"`} {
		f.Add(int64(7), "Rex", int64(2), string(st), true)
	}
	f.Fuzz(func(t *testing.T, id int64, name string, category int64, status string, hasStatus bool) {
		p := Pet{ID: id, Name: name, CategoryID: category}
		if hasStatus {
			st := PetStatus(status)
			p.Status = &st
		}
		pets := []Pet{p, {ID: 2, Name: status}}
		for _, c := range []struct {
			got []byte
			v   any
		}{{p.AppendJSON([]byte("x")), p}, {AppendPetsJSON([]byte("x"), pets), pets}, {AppendPetsJSON([]byte("x"), []Pet{}), []Pet{}}} {
			want, err := json.Marshal(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(c.got[1:]) != string(want) {
				t.Errorf("got  %s\nwant %s", c.got[1:], want)
			}
		}
	})
}
