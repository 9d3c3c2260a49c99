// Package telemetry traces what an operator debugs, with OpenTelemetry:
// HTTP requests, appends (with their wait for a group commit), searches by
// signal and store, the index catching up, embedding, model calls (model,
// tokens, latency), summaries and extraction. Spans name what was done
// and how big it was, never what anyone said: no message, fact or query
// text goes into a span.
//
// It is off unless OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: the tracers are then
// OpenTelemetry's no-op ones, which record nothing and cost a few
// nanoseconds a span. When set, Start exports spans over OTLP/HTTP, as the
// OTEL_EXPORTER_OTLP_* variables configure it (headers, protocol, TLS),
// and takes trace context from incoming requests (W3C traceparent).
package telemetry

import (
	"context"
	"errors"
	"net/http"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hectormem/hector/pkg/errkind"
)

// Tracer makes Hector's spans. It follows whatever provider is installed,
// before or after it was taken.
var Tracer = otel.Tracer("github.com/hectormem/hector")

// Enabled reports whether the environment asks for traces.
func Enabled() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Start exports spans as the environment asks (see the package comment),
// as service name with version; without an endpoint it does nothing. The
// returned function flushes the spans not sent yet and stops exporting.
func Start(ctx context.Context, name, version string) (shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, errors.New("telemetry: the OTLP exporter: " + err.Error())
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, err
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(provider)
	return provider.Shutdown, nil
}

// Span begins a span named name under ctx's, with attributes.
func Span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return Tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// End ends span, marking it failed with err's kind when err is not nil
// (the error's text may hold what a user sent, so only its type goes).
func End(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "failed")
		span.SetAttributes(attribute.String("error.type", errorType(err)))
	}
	span.End()
}

// errorType is the kind of err (errkind's), or "error".
func errorType(err error) string {
	for _, k := range []*errkind.Kind{errkind.InvalidArgument, errkind.NotFound, errkind.AlreadyExists, errkind.Conflict, errkind.TooLarge, errkind.Unavailable} {
		if errors.Is(err, k) {
			return k.Error()
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "canceled"
	}
	return "error"
}

// Request starts the span of an HTTP request to route (its pattern, such
// as "POST /v1/apps/{app}/users/{user}/sessions"), under the trace context
// the request carries; end ends it with the response's status.
func Request(r *http.Request, route string) (_ *http.Request, end func(status int)) {
	ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := Tracer.Start(ctx, route, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		semconv.HTTPRequestMethodKey.String(r.Method), semconv.HTTPRoute(route)))
	return r.WithContext(ctx), func(status int) {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
	}
}
