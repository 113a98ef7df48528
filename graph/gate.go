package graph

import (
	"context"
	"petstore/apierr"
	"petstore/graph/gqlhttp"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// OperationGate charges the operations sent on a connection and watches how they end. Each
// method does nothing for an operation that is not the gate's to charge (an HTTP request,
// which the HTTP middleware charged).
type OperationGate interface {
	// Gate is asked before the operation is looked up (persisted queries), parsed or
	// validated, so that every operation is charged, refused ones too; its error (an
	// *apierr.Error) refuses the operation with the protocol's error message.
	Gate(ctx context.Context) error
	// Admitted is told that the operation passed every check and runs.
	Admitted(ctx context.Context)
	// Refused is told that the operation was answered with errors and no data: it did not run.
	Refused(ctx context.Context)
}

// operationCharge asks its gate about each operation before any other parameter mutator, and
// tells it of each one answered with errors and no data (an operation refused, whose answer
// gqlgen's DispatchError passes through the response interceptors).
type operationCharge struct{ gate OperationGate }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationParameterMutator
	graphql.ResponseInterceptor
} = operationCharge{}

func (operationCharge) ExtensionName() string                   { return "OperationCharge" }
func (operationCharge) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationParameters asks the gate. Its refusal's code is a protocol error's
// (refusalCodes), so that a WebSocket answers it with an error message rather than an event.
func (g operationCharge) MutateOperationParameters(ctx context.Context, _ *graphql.RawParams) *gqlerror.Error {
	err := g.gate.Gate(ctx)
	if err == nil {
		return nil
	}
	e := apierr.From(err)
	gqlErr := &gqlerror.Error{Message: e.Message, Err: e}
	gqlhttp.SetCode(gqlErr, e.Code)
	return gqlErr
}

// InterceptResponse tells the gate of a response with errors and no data.
func (g operationCharge) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp != nil && len(resp.Data) == 0 && len(resp.Errors) > 0 {
		g.gate.Refused(ctx)
	}
	return resp
}

// operationAdmission tells its gate of an operation that passed every check.
type operationAdmission struct{ gate OperationGate }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = operationAdmission{}

func (operationAdmission) ExtensionName() string                   { return "OperationAdmission" }
func (operationAdmission) Validate(graphql.ExecutableSchema) error { return nil }

// MutateOperationContext tells the gate the operation runs.
func (g operationAdmission) MutateOperationContext(ctx context.Context, _ *graphql.OperationContext) *gqlerror.Error {
	g.gate.Admitted(ctx)
	return nil
}
