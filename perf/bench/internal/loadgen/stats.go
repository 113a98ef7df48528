package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// RPS returns the answered requests per second.
func (r Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.latencies)) / r.Elapsed.Seconds()
}

// Quantile returns the latency below which the fraction q of the answers came (nearest rank),
// or 0 when nothing was answered.
func (r Result) Quantile(q float64) time.Duration {
	n := len(r.latencies)
	if n == 0 {
		return 0
	}
	i := int(q*float64(n)+0.5) - 1
	return r.latencies[min(max(i, 0), n-1)]
}

// Errors returns the attempts that got no answer plus the answers outside 2xx.
func (r Result) Errors() int {
	n := r.NetErrors
	for st, c := range r.Statuses {
		if st < 200 || st > 299 {
			n += c
		}
	}
	return n
}

// Summary is the machine-readable form of one run: one JSON object per line.
type Summary struct {
	Label     string         `json:"label,omitempty"`
	Workload  string         `json:"workload"`
	Server    string         `json:"server,omitempty"`
	Round     int            `json:"round,omitempty"`
	Conns     int            `json:"conns"`
	Requests  int            `json:"requests"`
	Seconds   float64        `json:"seconds"`
	RPS       float64        `json:"rps"`
	P50us     float64        `json:"p50_us"`
	P90us     float64        `json:"p90_us"`
	P99us     float64        `json:"p99_us"`
	MaxUs     float64        `json:"max_us"`
	Errors    int            `json:"errors"`
	NetErrors int            `json:"net_errors"`
	Statuses  map[string]int `json:"statuses"`
	CPUusReq  float64        `json:"server_cpu_us_per_req,omitempty"`
	// DriverCPUusReq is the load generator's own CPU time per answered request (Result.CPU).
	DriverCPUusReq float64 `json:"driver_cpu_us_per_req,omitempty"`
	// DeliveredPS is the webhook deliveries the bench's receiver got per second of the run, and
	// DeliveryTailS how long after the run the last pet it created arrived (a row with a webhook
	// endpoint).
	DeliveredPS   float64 `json:"delivered_per_s,omitempty"`
	DeliveryTailS float64 `json:"delivery_tail_s,omitempty"`
}

// Summarize returns the summary of r for a workload run with conns connections.
func (r Result) Summarize(workload string, conns int) Summary {
	s := Summary{
		Workload: workload, Conns: conns, Requests: r.Requests, Seconds: r.Elapsed.Seconds(),
		RPS: r.RPS(), P50us: micros(r.Quantile(0.50)), P90us: micros(r.Quantile(0.90)),
		P99us: micros(r.Quantile(0.99)), MaxUs: micros(r.Quantile(1)),
		Errors: r.Errors(), NetErrors: r.NetErrors, Statuses: map[string]int{},
	}
	for st, n := range r.Statuses {
		s.Statuses[strconv.Itoa(st)] = n
	}
	if n := len(r.latencies); n > 0 {
		s.DriverCPUusReq = micros(r.CPU) / float64(n)
	}
	return s
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// WriteLine writes s as one line of JSON.
func (s Summary) WriteLine(w io.Writer) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// WriteTable writes s for people.
func (s Summary) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tconns\trequests\treq/s\tp50\tp90\tp99\tmax\tdriver cpu/req\terrors\tstatuses\t")
	fmt.Fprintf(tw, "%s\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t\n", s.Workload, s.Conns, s.Requests, s.RPS,
		FormatMicros(s.P50us), FormatMicros(s.P90us), FormatMicros(s.P99us), FormatMicros(s.MaxUs),
		FormatMicros(s.DriverCPUusReq), s.Errors, s.StatusList())
	return tw.Flush()
}

// StatusList returns the answers by status, such as "200:5120 500:3", plus "net:N" for
// attempts without an answer.
func (s Summary) StatusList() string {
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(s.Statuses)) {
		parts = append(parts, fmt.Sprintf("%s:%d", st, s.Statuses[st]))
	}
	if s.NetErrors > 0 {
		parts = append(parts, fmt.Sprintf("net:%d", s.NetErrors))
	}
	return strings.Join(parts, " ")
}

// FormatMicros writes a latency in microseconds with a unit people read at a glance.
func FormatMicros(us float64) string {
	switch {
	case us <= 0:
		return "-"
	case us < 1000:
		return fmt.Sprintf("%.0fµs", us)
	case us < 100_000:
		return fmt.Sprintf("%.1fms", us/1000)
	}
	return fmt.Sprintf("%.0fms", us/1000)
}
