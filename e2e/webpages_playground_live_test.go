package e2e

import (
	"context"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserPlaygroundWithoutKey opens /v1/graphql in headless Chromium, as a newcomer would,
// and expects the playground, whose docs explorer shows the schema (Query.pet deprecated)
// before any key is typed: built from the public SDL, without a request that needs a key.
func TestBrowserPlaygroundWithoutKey(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	base, _ := devServer(t)

	tab, log := newBrowser(t)
	ctx, cancel := context.WithTimeout(tab, stepsTimeout)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/v1/graphql"),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
		waitFor(`location.pathname === '/v1/playground'`),
	)
	if err != nil {
		failBrowser(t, tab, log, base, "opening /v1/graphql in the browser", err)
	}
	if err = chromedp.Do(ctx, findDeprecatedPet...); err != nil {
		failBrowser(t, tab, log, base, "finding Query.pet deprecated in the docs explorer without a key", err)
	}
	log.mu.Lock()
	fetched := slices.Contains(log.requests, base+"/v1/graphql/schema.graphql")
	log.mu.Unlock()
	if !fetched {
		t.Error("the page did not fetch /v1/graphql/schema.graphql; want its schema from there")
	}
	log.check(t, tab, base) // a keyless request to /v1/graphql would show as a 401
}

// TestBrowserPlaygroundSubscription runs a petAdded subscription in the playground (GraphiQL
// over graphql-ws, the key sent in connection_init), watches a pet created over REST appear
// in its result pane, then a second one appended after it, the first still listed.
func TestBrowserPlaygroundSubscription(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	base, key := devServer(t)

	tab, log := newBrowser(t)
	ctx, cancel := context.WithTimeout(tab, stepsTimeout)
	defer cancel()
	query := url.Values{"query": {"subscription { petAdded { pet { name } } }"}}
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/v1/playground?"+query.Encode()),
		chromedp.WaitVisible(chromedp.CSS(".graphiql-execute-button")),
		chromedp.SendKeys(chromedp.CSS("#api-key"), key),
		chromedp.Click(chromedp.CSS(".graphiql-execute-button")),
	)
	if err != nil {
		failBrowser(t, tab, log, base, "starting the subscription in the playground", err)
	}
	// Without a cursor the subscription sends the pets added once it is open: create one every
	// half second until the pane shows one.
	seen := waitFor(resultText + `.includes('"name": "Whiskers"')`)
	for {
		if _, ok := postPet(base, key, "Whiskers"); !ok {
			t.Fatal("POST /v1/pets failed; want 201")
		}
		step, stop := context.WithTimeout(ctx, 500*time.Millisecond)
		err = chromedp.Do(step, seen)
		stop()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			failBrowser(t, tab, log, base, "seeing a pet created over REST in the subscription's pane", err)
		}
	}
	if _, ok := postPet(base, key, "Felix"); !ok {
		t.Fatal("POST /v1/pets failed; want 201")
	}
	both := waitFor(`(function (text) {
  var first = text.indexOf('"name": "Whiskers"'), second = text.indexOf('"name": "Felix"');
  return first >= 0 && second > first;
})(` + resultText + `)`)
	if err = chromedp.Do(ctx, both); err != nil {
		failBrowser(t, tab, log, base, "seeing the second pet appended after the first in the subscription's pane", err)
	}
	log.check(t, tab, base)
}
