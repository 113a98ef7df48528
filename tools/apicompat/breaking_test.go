package apicompat

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/oasdiff/checker"
	"github.com/oasdiff/oasdiff/diff"
	"github.com/oasdiff/oasdiff/load"
)

// TestNoBreakingChange runs every breaking-change rule of oasdiff from the published v1 document
// to the current one, and fails on each change that oasdiff finds breaking (ERR) or possibly
// breaking (WARN): a removed operation, parameter, response or field, a parameter made
// required, a narrower type or enum, and the like.
func TestNoBreakingChange(t *testing.T) {
	loader := openapi3.NewLoader()
	base, err := load.NewSpecInfo(loader, load.NewSource(publishedDocument))
	if err != nil {
		t.Fatalf("loading %s: %v", publishedDocument, err)
	}
	revision, err := load.NewSpecInfo(loader, load.NewSource(currentDocument))
	if err != nil {
		t.Fatalf("loading %s: %v", currentDocument, err)
	}
	report, sources, err := diff.GetWithOperationsSourcesMap(diff.NewConfig(), base, revision)
	if err != nil {
		t.Fatalf("diffing the documents: %v", err)
	}
	changes := checker.CheckBackwardCompatibilityUntilLevel(
		checker.NewConfig(checker.GetAllChecks()), report, sources, checker.WARN)
	l := checker.NewDefaultLocalizer()
	for _, c := range changes {
		t.Errorf("%s", c.SingleLineError(l, checker.ColorNever))
	}
}
