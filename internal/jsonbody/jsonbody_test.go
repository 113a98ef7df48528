package jsonbody

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"petstore/apierr"
)

// pet is a body with the shapes the service reads: a string, a number kept as sent, an
// object of anything.
type pet struct {
	Name       *string        `json:"name"`
	CategoryID any            `json:"categoryId"`
	Variables  map[string]any `json:"variables"`
}

func TestDecode(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	for _, tc := range []struct {
		name, body string
		want       string // a word of the error message; "" for none
	}{
		{"plain", `{"name":"Rex","categoryId":3}`, ""},
		{"unknown members", `{"name":"Rex","id":9,"extra":{"a":[1,{"b":null}]}}`, ""},
		{"escaped name is the same name", `{"n\u0061me":"Rex"}`, ""},
		{"whitespace around", " \r\n\t{\"name\":\"Rex\"} \n", ""},
		{"empty", "", "is empty"},
		{"blank", " \n ", "is empty"},
		{"invalid UTF-8 in a string", "{\"name\":\"R\xffx\"}", "UTF-8"},
		{"invalid UTF-8 in a member name", "{\"na\xffme\":\"Rex\"}", "UTF-8"},
		{"overlong UTF-8", "{\"name\":\"\xc0\xaf\"}", "UTF-8"},
		{"lone surrogate escape", `{"name":"\ud800"}`, "surrogate"},
		{"repeated member", `{"name":"a","name":"b"}`, `member "name" twice`},
		{"repeated member, one escaped", `{"name":"a","n\u0061me":"b"}`, `member "name" twice`},
		{"repeated unknown member", `{"x":1,"x":2}`, `member "x" twice`},
		{"repeated member nested", `{"variables":{"in":{"a":1,"a":2}}}`, `member "a" twice in variables/in`},
		{"repeated member in an array", `{"extra":[{"a":1,"a":2}]}`, `member "a" twice in extra/0`},
		{"byte order mark", "\ufeff{}", "not valid JSON"},
		{"NaN", `{"categoryId":NaN}`, "not valid JSON"},
		{"Infinity", `{"categoryId":Infinity}`, "not valid JSON"},
		{"trailing garbage", `{"name":"Rex"} x`, "not valid JSON"},
		{"second object", `{"name":"Rex"}{}`, "not valid JSON"},
		{"truncated", `{"name":"Rex"`, "not valid JSON"},
		{"too deep", `{"x":` + deep + `}`, "max depth"},
		{"array", `[{"name":"Rex"}]`, "must be a JSON object"},
		{"null", `null`, "must be a JSON object"},
		{"string", `"Rex"`, "must be a JSON object"},
		{"wrong type", `{"name":5}`, "name must be a JSON string; got a JSON number"},
		{"wrong type nested", `{"variables":[]}`, "variables must be a JSON object; got a JSON array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p pet
			err := Decode([]byte(tc.body), &p)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Decode(%q): got error %v; want none", tc.body, err)
			case tc.want == "":
				if p.Name == nil || *p.Name != "Rex" {
					t.Errorf("Decode(%q): got name %v; want Rex", tc.body, p.Name)
				}
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Decode(%q): got error %v; want one saying %q", tc.body, err, tc.want)
			case apierr.From(err).Code != apierr.InvalidRequest:
				t.Errorf("Decode(%q): got code %s; want invalid_request", tc.body, apierr.From(err).Code)
			}
		})
	}
}

// TestDecodeExactNames checks that members bind by their exact names: a member that differs
// from a field's name by case is ignored, not taken in its place.
func TestDecodeExactNames(t *testing.T) {
	for _, body := range []string{`{"NAME":"b"}`, `{"Name":"b"}`, `{"name":"a","NAME":"b"}`, `{"NAME":"b","name":"a"}`} {
		var p pet
		if err := Decode([]byte(body), &p); err != nil {
			t.Fatalf("Decode(%s): got error %v", body, err)
		}
		if p.Name != nil && *p.Name != "a" {
			t.Errorf("Decode(%s): got name %q; want only \"name\" bound", body, *p.Name)
		}
	}
}

// TestDecodeNumbers checks that numbers in an any keep the text they were sent as.
func TestDecodeNumbers(t *testing.T) {
	var p pet
	if err := Decode([]byte(`{"categoryId":9223372036854775807,"variables":{"a":9223372036854775807,"b":[1.50,{"c":-2e3}]}}`), &p); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": stdjson.Number("9223372036854775807"), "b": []any{stdjson.Number("1.50"), map[string]any{"c": stdjson.Number("-2e3")}}}
	if p.CategoryID != stdjson.Number("9223372036854775807") || !reflect.DeepEqual(p.Variables, want) {
		t.Errorf("got %q and %#v; want the numbers as sent", p.CategoryID, p.Variables)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`{"name":"sometype","n":[1,2]}`, ""},
		{`"any value"`, ""},
		{`{"a":1,"a":2}`, `the variables parameter has the member "a" twice`},
		{"{\"a\":\"\xff\"}", "the variables parameter is not valid UTF-8"},
		{`{"a":1} x`, "the variables parameter is not valid JSON"},
	} {
		err := Check("the variables parameter", []byte(tc.text))
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%q): got %v; want %q", tc.text, err, tc.want)
		}
	}
}

// FuzzDecode checks Decode against encoding/json: on a body that both accept, both read the
// same values; a body that encoding/json takes and Decode refuses breaks one of Decode's
// documented rules; every refusal is an invalid_request error.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{"name":"Rex","categoryId":3}`, `{"name":"a","NAME":"b"}`, `{"Name":"x","categoryId":1}`,
		`{"name":"a","name":"b"}`, `{"x":{"a":1,"a":2}}`, "{\"name\":\"\xff\"}", `{"name":"\ud800"}`, `{"name":"\u00e9\ud83d\udc36"}`,
		`null`, `[]`, `{} x`, "\ufeff{}", `{"variables":{"n":1.5e300,"m":[true,null,"s"]}}`, `{"categoryId":-0}`, ``} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got map[string]any
		err := Decode(body, &got)
		var want map[string]any
		dec := stdjson.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		stdErr := dec.Decode(&want)
		if stdErr == nil && dec.InputOffset() < int64(len(bytes.TrimRight(body, " \t\r\n"))) {
			stdErr = errors.New("trailing data")
		}
		switch {
		case err != nil && apierr.From(err).Code != apierr.InvalidRequest:
			t.Fatalf("Decode(%q): got %v; want an invalid_request error", body, err)
		case err == nil && stdErr != nil:
			t.Fatalf("Decode(%q) accepted what encoding/json refuses: %v", body, stdErr)
		case err == nil && !reflect.DeepEqual(got, want):
			t.Fatalf("Decode(%q): got %#v; encoding/json reads %#v", body, got, want)
		case err != nil && stdErr == nil && !brokenRule(err):
			t.Fatalf("Decode(%q) refused what encoding/json takes, for no documented rule: %v", body, err)
		case err == nil:
			checkExactName(t, body, got)
		}
	})
}

// brokenRule reports whether err refuses a body for one of the rules that Decode adds to
// encoding/json's.
func brokenRule(err error) bool {
	for _, rule := range []string{"UTF-8", "twice", "surrogate", "must be a JSON object"} {
		if strings.Contains(err.Error(), rule) {
			return true
		}
	}
	return false
}

// checkExactName checks that the name field of a body that Decode accepted holds exactly its
// "name" member, whatever members differ from it by case.
func checkExactName(t *testing.T, body []byte, members map[string]any) {
	t.Helper()
	var p struct {
		Name any `json:"name"`
	}
	if err := Decode(body, &p); err != nil {
		t.Fatalf("Decode(%q) into a struct: %v", body, err)
	}
	if !reflect.DeepEqual(p.Name, members["name"]) {
		t.Fatalf("Decode(%q): got name %#v; want %#v", body, p.Name, members["name"])
	}
}
