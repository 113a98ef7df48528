package observe

import (
	"net/http"
	"strconv"

	"petstore/auth"
	"petstore/ratelimit"
)

// unmatched is the route label of a request that no route matched.
const unmatched = "unmatched"

// routeLabel returns the route label of a request whose gin route template is fullPath.
func routeLabel(fullPath string) string {
	if fullPath == "" {
		return unmatched
	}
	return fullPath
}

// methodLabel returns m when it is a method of RFC 9110 or RFC 5789, else "OTHER". It returns
// constants, so that a label never keeps a request's memory alive.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet:
		return http.MethodGet
	case http.MethodHead:
		return http.MethodHead
	case http.MethodPost:
		return http.MethodPost
	case http.MethodPut:
		return http.MethodPut
	case http.MethodPatch:
		return http.MethodPatch
	case http.MethodDelete:
		return http.MethodDelete
	case http.MethodOptions:
		return http.MethodOptions
	case http.MethodConnect:
		return http.MethodConnect
	case http.MethodTrace:
		return http.MethodTrace
	}
	return "OTHER"
}

// statusLabels holds the label of every status code net/http accepts (100 to 999), so that
// labelling a request allocates nothing.
var statusLabels = func() (s [1000]string) {
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

// statusLabel returns the decimal text of code.
func statusLabel(code int) string {
	if code >= 0 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}

// plans are the values of the plan label; the last one stands for any name not in the list.
var plans = [...]string{auth.Free.Name, auth.Pro.Name, auth.Business.Name, auth.Enterprise, ratelimit.AnonymousPlan, "other"}

// planIndex returns the index in plans of the plan label for name.
func planIndex(name string) int {
	for i, p := range plans[:len(plans)-1] {
		if p == name {
			return i
		}
	}
	return len(plans) - 1
}

// outcomes are the values of the outcome label, indexed by ratelimit.Outcome; index 0 stands
// for any outcome ratelimit may add later.
var outcomes = [...]string{"unknown", ratelimit.Allowed.String(), ratelimit.Limited.String(), ratelimit.Suspended.String()}

// outcomeIndex returns the index in outcomes of o.
func outcomeIndex(o ratelimit.Outcome) int {
	if int(o) < len(outcomes) {
		return int(o)
	}
	return 0
}
