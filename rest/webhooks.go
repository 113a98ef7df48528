package rest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"petstore/auth"
	"petstore/internal/jsonbody"
	"petstore/webhooks"
)

// webhookRoutes routes the webhook endpoints of the caller's key (/v1/webhooks) on api, whose
// chain identifies, charges and requires the key as for every /v1 operation.
func webhookRoutes(api gin.IRoutes, hooks *webhooks.Endpoints) {
	get(api, "/webhooks", listWebhooks(hooks))
	api.POST("/webhooks", createWebhook(hooks))
	api.DELETE("/webhooks/:webhookId", deleteWebhook(hooks))
	api.POST("/webhooks/:webhookId/secret", rotateWebhookSecret(hooks))
	get(api, "/webhooks/:webhookId/deliveries", listWebhookDeliveries(hooks))
	api.POST("/webhooks/:webhookId/replay", replayWebhook(hooks))
}

// keyID returns the API key of the request, which auth.Require has made sure of.
func keyID(c *gin.Context) int64 { return auth.FromContext(c.Request.Context()).KeyID }

// newWebhookBody is the body of POST /v1/webhooks.
type newWebhookBody struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
}

// createWebhook answers POST /v1/webhooks (createWebhook): 201 with the endpoint and its
// secret, shown this once.
func createWebhook(hooks *webhooks.Endpoints) gin.HandlerFunc {
	return func(c *gin.Context) {
		var in newWebhookBody
		if err := readBody(c.Request, &in); err != nil {
			writeError(c, err)
			return
		}
		e, err := hooks.Create(c.Request.Context(), auth.FromContext(c.Request.Context()), in.URL, in.Events)
		if err != nil {
			writeError(c, err)
			return
		}
		c.Header("Location", "/v1/webhooks/"+e.ID)
		c.JSON(http.StatusCreated, e)
	}
}

// readBody reads a JSON request body into v as every body is read (jsonbody.Decode).
func readBody(r *http.Request, v any) error {
	body, err := readJSON(r)
	if err != nil {
		return err
	}
	return jsonbody.Decode(body, v)
}

// listWebhooks answers GET /v1/webhooks (listWebhooks): the key's endpoints, without secrets.
func listWebhooks(hooks *webhooks.Endpoints) gin.HandlerFunc {
	return func(c *gin.Context) {
		list, err := hooks.List(c.Request.Context(), keyID(c))
		if err != nil {
			writeError(c, err)
			return
		}
		c.JSON(http.StatusOK, list)
	}
}

// deleteWebhook answers DELETE /v1/webhooks/{webhookId} (deleteWebhook): 204.
func deleteWebhook(hooks *webhooks.Endpoints) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := hooks.Delete(c.Request.Context(), keyID(c), c.Param("webhookId")); err != nil {
			writeError(c, err)
			return
		}
		c.Status(http.StatusNoContent)
	}
}

// rotateWebhookSecret answers POST /v1/webhooks/{webhookId}/secret (rotateWebhookSecret):
// the endpoint with its new secret.
func rotateWebhookSecret(hooks *webhooks.Endpoints) gin.HandlerFunc {
	return func(c *gin.Context) {
		e, err := hooks.Rotate(c.Request.Context(), keyID(c), c.Param("webhookId"))
		if err != nil {
			writeError(c, err)
			return
		}
		c.JSON(http.StatusOK, e)
	}
}

// listWebhookDeliveries answers GET /v1/webhooks/{webhookId}/deliveries
// (listWebhookDeliveries): the endpoint's most recent deliveries, newest first.
func listWebhookDeliveries(hooks *webhooks.Endpoints) gin.HandlerFunc {
	return func(c *gin.Context) {
		list, err := hooks.Deliveries(c.Request.Context(), keyID(c), c.Param("webhookId"))
		if err != nil {
			writeError(c, err)
			return
		}
		c.JSON(http.StatusOK, list)
	}
}

// replayBody is the body of POST /v1/webhooks/{webhookId}/replay.
type replayBody struct {
	After *string `json:"after"`
}

// replayWebhook answers POST /v1/webhooks/{webhookId}/replay (replayWebhook): 202 with the
// deliveries queued, of the pets after the cursor.
func replayWebhook(hooks *webhooks.Endpoints) gin.HandlerFunc {
	return func(c *gin.Context) {
		var in replayBody
		if err := readBody(c.Request, &in); err != nil {
			writeError(c, err)
			return
		}
		r, err := hooks.Replay(c.Request.Context(), keyID(c), c.Param("webhookId"), in.After)
		if err != nil {
			writeError(c, err)
			return
		}
		c.JSON(http.StatusAccepted, r)
	}
}
