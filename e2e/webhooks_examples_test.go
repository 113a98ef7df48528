package e2e

import (
	"net/http"
	"strings"
	"testing"

	"petstore/auth"
)

// The webhook operations, each with a request that reaches its handler; those naming an
// endpoint name one the key does not have.
var (
	listWebhooksOp      = exampleOp{"listWebhooks", get("/v1/webhooks")}
	createWebhookOp     = exampleOp{"createWebhook", post("/v1/webhooks", `{"url":"`+publicURL+`","events":["pet.created"]}`)}
	deleteWebhookOp     = exampleOp{"deleteWebhook", request{method: http.MethodDelete, path: "/v1/webhooks/ep_none"}}
	rotateWebhookOp     = exampleOp{"rotateWebhookSecret", post("/v1/webhooks/ep_none/secret", "")}
	listDeliveriesOp    = exampleOp{"listWebhookDeliveries", get("/v1/webhooks/ep_none/deliveries")}
	replayWebhookOp     = exampleOp{"replayWebhook", post("/v1/webhooks/ep_none/replay", `{"after":"cGV0OnYxOjQy"}`)}
	webhookExampleOps   = []exampleOp{listWebhooksOp, createWebhookOp, deleteWebhookOp, rotateWebhookOp, listDeliveriesOp, replayWebhookOp}
	webhookNotFoundOps  = []exampleOp{deleteWebhookOp, rotateWebhookOp, listDeliveriesOp, replayWebhookOp}
	webhookBodyOps      = []exampleOp{createWebhookOp, replayWebhookOp}
	webhookTooLargeOps  = []exampleOp{listWebhooksOp, listDeliveriesOp}
	webhookBodyTooLarge = `{"url":"` + strings.Repeat("a", 1<<20) + `"}`
)

// addWebhookExampleCases adds to cases the requests that produce the examples of the webhook
// operations.
func addWebhookExampleCases(cases map[string]func(*testing.T) response) {
	body := func(b string) request { return post("/v1/webhooks", b) }
	cases["createWebhook 400 urlMissing"] = fresh(body(`{"events":["pet.created"]}`))
	cases["createWebhook 400 urlPrivate"] = fresh(body(`{"url":"https://127.0.0.1/hooks","events":["pet.created"]}`))
	cases["createWebhook 400 eventUnknown"] = fresh(body(`{"url":"https://hooks.example.com/pets","events":["pet.sold"]}`))
	cases["createWebhook 400 planLimit"] = func(t *testing.T) response {
		api := newTestAPI(t, dbtestSQLite(t))
		api.key = api.createKey(t, auth.KeySpec{Plan: auth.Free.Name})
		api.createHook(t, publicURL)
		return api.do(t, createWebhookOp.req)
	}
	cases["replayWebhook 400 afterMissing"] = fresh(post(replayWebhookOp.req.path, `{}`))
	cases["replayWebhook 400 afterInvalid"] = fresh(post(replayWebhookOp.req.path, `{"after":"xyz"}`))
	for _, op := range webhookNotFoundOps {
		cases[op.id+" 404 notFound"] = fresh(op.req)
	}
	for _, op := range webhookBodyOps {
		cases[op.id+" 413 tooLarge"] = fresh(post(op.req.path, webhookBodyTooLarge))
		cases[op.id+" 415 textPlain"] = fresh(withHeader(op.req, "Content-Type", "text/plain"))
	}
	for _, op := range webhookTooLargeOps {
		cases[op.id+" 400 url"] = fresh(get(op.req.path + "?q=" + strings.Repeat("a", 8200)))
		cases[op.id+" 400 headers"] = fresh(withHeaders(op.req, 101))
	}
	for _, op := range webhookExampleOps {
		noKey := op.req
		noKey.noAuth = true
		cases[op.id+" 401 missingKey"] = fresh(noKey)
		cases[op.id+" 401 scheme"] = fresh(withHeader(op.req, "Authorization", "Basic cGV0OnN0b3Jl"))
		cases[op.id+" 401 invalidKey"] = fresh(withHeader(op.req, "Authorization", "Bearer "+auth.NewKey(auth.TestPrefix)))
		cases[op.id+" 429 rateLimited"] = refusedUntil("rate_limited", op.req)
		cases[op.id+" 429 keySuspended"] = refusedUntil("key_suspended", op.req)
		cases[op.id+" 503 keyCheck"] = keyUnchecked(op.req)
		cases[op.id+" 500 internal"] = databaseClosed(op.req)
		cases[op.id+" 503 database"] = databaseCut(op.req)
	}
}
