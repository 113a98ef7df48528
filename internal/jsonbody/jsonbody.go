// Package jsonbody reads the JSON that clients send, REST and GraphQL bodies alike, one strict
// way, so that the service never reads a body otherwise than a proxy or a client library does.
// It rests on the JSON v2 experiment (github.com/go-json-experiment/json, which becomes
// encoding/json/v2), whose defaults are the rules: RFC 8259 and I-JSON (RFC 7493).
package jsonbody

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"petstore/apierr"
)

// Body is what Decode and Check call the whole text in their messages.
const Body = "the request body"

// options keep numbers that land in an any (the values of a map[string]any) as the
// encoding/json.Number they were sent as, as gqlgen's transports read variables: no float64
// rounding of large integers.
var options = json.WithUnmarshalers(json.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *any) error {
	if dec.PeekKind() != '0' {
		return json.SkipFunc
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	*v = stdjson.Number(tok.String())
	return nil
}))

// Decode reads body, which must be one JSON object, into v, a pointer to a struct whose fields
// carry json tags:
//   - a member binds to the field whose tag is its exact name: "NAME" and "Name" are not
//     "name", and, like every member without a field, are ignored;
//   - no object, at any depth and in ignored members too, may repeat a member name;
//   - body must be valid UTF-8 (an escaped lone surrogate such as "\ud800" is refused too),
//     nest at most 10,000 levels deep, and hold nothing but whitespace after the object; a
//     byte order mark, NaN or Infinity is not JSON and is refused.
//
// Every error is an invalid_request *apierr.Error that tells the client what is wrong and
// where; a type's own UnmarshalJSON may return an *apierr.Error, which is passed on.
func Decode(body []byte, v any) error {
	if err := precheck(Body, body); err != nil {
		return err
	}
	if err := json.Unmarshal(body, v, options); err != nil {
		return explain(Body, err)
	}
	if body = bytes.TrimLeft(body, " \t\r\n"); body[0] != '{' { // null: the one non-object v2 takes
		return apierr.Invalid("%s must be a JSON object", Body)
	}
	return nil
}

// Check reports whether text, which the client sent as what (such as "the variables
// parameter"), is JSON by the rules of Decode; it may be any JSON value.
func Check(what string, text []byte) error {
	if err := precheck(what, text); err != nil {
		return err
	}
	if err := json.Unmarshal(text, new(jsontext.Value)); err != nil {
		return explain(what, err)
	}
	return nil
}

// precheck refuses empty text and text that is not UTF-8, with messages clearer than the
// parser's.
func precheck(what string, text []byte) error {
	switch {
	case len(bytes.TrimLeft(text, " \t\r\n")) == 0:
		return apierr.Invalid("%s is empty: it must be a JSON object", what)
	case !utf8.Valid(text):
		return apierr.Invalid("%s is not valid UTF-8", what)
	}
	return nil
}

// explain turns an error of the parser into a message for the client.
func explain(what string, err error) error {
	var apiErr *apierr.Error
	var syntax *jsontext.SyntacticError
	var semantic *json.SemanticError
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &syntax) && errors.Is(err, jsontext.ErrDuplicateName):
		return duplicate(what, syntax.JSONPointer)
	case errors.As(err, &syntax):
		return apierr.Invalid("%s is not valid JSON: %v (at byte %d)", what, syntax.Err, syntax.ByteOffset)
	case errors.As(err, &semantic) && semantic.JSONPointer == "":
		return apierr.Invalid("%s must be a JSON object", what)
	case errors.As(err, &semantic) && semantic.GoType != nil:
		return apierr.Invalid("%s must be a JSON %s; got a JSON %s", member(semantic.JSONPointer), kindOf(semantic.GoType), kindName(semantic.JSONKind))
	}
	return apierr.Invalid("%s does not fit: %v", what, err)
}

// duplicate says which member name is repeated, and where when it is not at the top level.
func duplicate(what string, at jsontext.Pointer) error {
	if parent := at.Parent(); parent != "" {
		return apierr.Invalid("%s has the member %q twice in %s", what, at.LastToken(), member(parent))
	}
	return apierr.Invalid("%s has the member %q twice", what, at.LastToken())
}

// member names the member at p for a client: categoryId, or variables/in/name when nested.
func member(p jsontext.Pointer) string {
	return strings.TrimPrefix(string(p), "/")
}

// kindOf returns the kind of JSON value that a Go type takes.
func kindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	}
	return "value"
}

// kindName returns the name of a kind of JSON value.
func kindName(k jsontext.Kind) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	}
	return k.String() // null, string, number
}
