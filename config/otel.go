package config

import (
	"fmt"
	"net/url"
	"strconv"
)

// samplers are the values of OTEL_TRACES_SAMPLER, and whether each takes a ratio as its
// argument.
var samplers = map[string]bool{
	"always_on": false, "always_off": false, "traceidratio": true,
	"parentbased_always_on": false, "parentbased_always_off": false, "parentbased_traceidratio": true,
}

// TracingFromEnv reports whether the standard OTEL_* variables ask for traces: an OTLP
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or
// OTEL_TRACES_EXPORTER=otlp, and neither OTEL_TRACES_EXPORTER=none nor OTEL_SDK_DISABLED=true.
// It refuses, whether tracing is on or not, the values this service cannot honour: another
// exporter than otlp or none, another OTLP protocol than http/protobuf, an unknown sampler,
// a sampler ratio outside [0, 1], an endpoint that is not an http or https URL. The
// OpenTelemetry SDK reads these variables and the others it defines (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_BSP_*)
// from the process's environment itself.
func TracingFromEnv(getenv func(string) string) (bool, error) {
	exporter := getenv("OTEL_TRACES_EXPORTER")
	if exporter != "" && exporter != "otlp" && exporter != "none" {
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER must be otlp or none; got %q", exporter)
	}
	endpoint := false
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		v := getenv(name)
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return false, fmt.Errorf("%s must be an http:// or https:// URL", name)
		}
		endpoint = true
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if v := getenv(name); v != "" && v != "http/protobuf" {
			return false, fmt.Errorf("%s must be http/protobuf (the only OTLP protocol this service sends); got %q", name, v)
		}
	}
	if err := checkSampler(getenv("OTEL_TRACES_SAMPLER"), getenv("OTEL_TRACES_SAMPLER_ARG")); err != nil {
		return false, err
	}
	if getenv("OTEL_SDK_DISABLED") == "true" || exporter == "none" {
		return false, nil
	}
	return endpoint || exporter == "otlp", nil
}

// checkSampler checks the values of OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG.
func checkSampler(sampler, arg string) error {
	if sampler == "" {
		return nil
	}
	ratio, ok := samplers[sampler]
	if !ok {
		return fmt.Errorf("OTEL_TRACES_SAMPLER must be always_on, always_off, traceidratio or parentbased_ one of them; got %q", sampler)
	}
	if !ratio || arg == "" {
		return nil
	}
	if r, err := strconv.ParseFloat(arg, 64); err != nil || r < 0 || r > 1 {
		return fmt.Errorf("OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1; got %q", arg)
	}
	return nil
}
