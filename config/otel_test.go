package config

import (
	"strings"
	"testing"
)

func TestTracingFromEnv(t *testing.T) {
	const endpoint = "http://127.0.0.1:4318"
	for _, tt := range []struct {
		name    string
		env     map[string]string
		want    bool
		wantErr string // part of the error; "" for none
	}{
		{"unset", nil, false, ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, true, ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint + "/v1/traces"}, true, ""},
		{"exporter otlp, default endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SDK_DISABLED": "true"}, false, ""},
		{"service name alone", map[string]string{"OTEL_SERVICE_NAME": "pets"}, false, ""},
		{"ratio sampler", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}, true, ""},
		{"protocol http/protobuf", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true, ""},
		{"exporter console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, false, "OTEL_TRACES_EXPORTER"},
		{"protocol grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"traces protocol json", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, false, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{"endpoint without scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"}, false, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"unknown sampler", map[string]string{"OTEL_TRACES_SAMPLER": "sometimes"}, false, "OTEL_TRACES_SAMPLER"},
		{"ratio over 1", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, false, "OTEL_TRACES_SAMPLER_ARG"},
		{"ratio not a number", map[string]string{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"}, false, "OTEL_TRACES_SAMPLER_ARG"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TracingFromEnv(func(k string) string { return tt.env[k] })
			if got != tt.want {
				t.Errorf("on: got %v; want %v", got, tt.want)
			}
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error: got %v; want one naming %q", err, tt.wantErr)
			}
		})
	}
}
