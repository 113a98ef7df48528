package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"petstore/app"
)

// TestOpenAPIDocumentNamesTheDeployment: the served document lists the configured base
// addresses as its servers and gives the configured contact.
func TestOpenAPIDocumentNamesTheDeployment(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.PublicURL, cfg.StagingURL = "https://pets.example.org/api/v1", "https://pets-staging.example.org/api/v1"
	cfg.ContactEmail, cfg.ContactURL = "pets@example.org", "https://example.org/pets/help"
	api := newTestAPIConfig(t, dbtestSQLite(t), cfg)
	rec := httptest.NewRecorder()
	api.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/openapi.json", nil))
	var doc struct {
		Info struct {
			Contact struct{ Name, Email, URL string }
		}
		Servers []struct{ URL string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if c := doc.Info.Contact; c.Name != "Pet Store API support" || c.Email != cfg.ContactEmail || c.URL != cfg.ContactURL {
		t.Errorf("info.contact: got %+v; want Pet Store API support, %s, %s", c, cfg.ContactEmail, cfg.ContactURL)
	}
	if len(doc.Servers) != 2 || doc.Servers[0].URL != cfg.PublicURL || doc.Servers[1].URL != cfg.StagingURL {
		t.Errorf("servers: got %+v; want %s then %s", doc.Servers, cfg.PublicURL, cfg.StagingURL)
	}
}
