package rest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// openapiJSON is the OpenAPI 3.0.3 document of the REST surface. Its servers and its
// info.contact are placeholders that OpenAPIDocument replaces with the configured deployment's.
//
//go:embed openapi.json
var openapiJSON []byte

// openapiServer is one entry of the document's servers list.
type openapiServer struct {
	URL         string `json:"url"`
	Description string `json:"description"`
}

// Contact is who answers for a deployment of the API, as the deploying organisation says
// (config checks the values): the OpenAPI document's info.contact, named contactName.
type Contact struct {
	Email string // required
	URL   string // a web page; empty: none
}

// contactName is the name of the document's contact.
const contactName = "Pet Store API support"

// OpenAPIDocument returns the OpenAPI document with its servers set to the two deployments' base
// addresses (each ending in /v1): publicURL described as "Production", then stagingURL as
// "Staging", and its info.contact to contact. Each URL must be an absolute http or https URL
// whose path ends in /v1, and contact must have an email, else it returns an error. The output
// is compact JSON; the document's other members keep their order.
func OpenAPIDocument(publicURL, stagingURL string, contact Contact) ([]byte, error) {
	for _, u := range []struct{ name, value string }{{"public", publicURL}, {"staging", stagingURL}} {
		if err := checkBaseURL(u.value); err != nil {
			return nil, fmt.Errorf("openapi: %s URL %q: %w", u.name, u.value, err)
		}
	}
	if contact.Email == "" {
		return nil, errors.New("openapi: the contact has no email")
	}
	servers, err := json.Marshal([]openapiServer{
		{URL: publicURL, Description: "Production"},
		{URL: stagingURL, Description: "Staging"},
	})
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	doc, err := withContact(openapiJSON, contact)
	if err == nil {
		doc, err = replaceMember(doc, "servers", servers)
	}
	if err != nil {
		return nil, fmt.Errorf("openapi: embedded document: %w", err)
	}
	return doc, nil
}

// withContact returns doc with its info.contact replaced by contact's.
func withContact(doc []byte, contact Contact) ([]byte, error) {
	c, err := json.Marshal(struct {
		Name  string `json:"name"`
		URL   string `json:"url,omitempty"`
		Email string `json:"email"`
	}{contactName, contact.URL, contact.Email})
	if err != nil {
		return nil, err
	}
	var members struct{ Info json.RawMessage }
	if err := json.Unmarshal(doc, &members); err != nil {
		return nil, err
	}
	info, err := replaceMember(members.Info, "contact", c)
	if err != nil {
		return nil, fmt.Errorf("info: %w", err)
	}
	return replaceMember(doc, "info", info)
}

// checkBaseURL reports why raw is not an absolute http(s) URL whose path ends in /v1.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("want an absolute http or https URL")
	}
	if !strings.HasSuffix(u.Path, "/v1") || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("want a path ending in /v1, without query or fragment")
	}
	return nil
}

// replaceMember returns the JSON object doc, compacted, with the value of its top-level member
// name replaced by value (appended when absent). Members keep their order.
func replaceMember(doc []byte, name string, value json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out bytes.Buffer
	out.WriteByte('{')
	replaced := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // object keys are always strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if key == name {
			raw, replaced = value, true
		}
		writeMember(&out, key, raw)
	}
	if !replaced {
		writeMember(&out, name, value)
	}
	out.WriteByte('}')
	var compact bytes.Buffer
	if err := json.Compact(&compact, out.Bytes()); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}

// writeMember writes one "key":value member to out, after a comma unless it is the first.
func writeMember(out *bytes.Buffer, key string, value json.RawMessage) {
	if out.Len() > 1 {
		out.WriteByte(',')
	}
	k, _ := json.Marshal(key) // marshaling a string cannot fail
	out.Write(k)
	out.WriteByte(':')
	out.Write(value)
}
