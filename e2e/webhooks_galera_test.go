//go:build galera

package e2e

import (
	"testing"
	"time"
)

// TestGaleraWebhooks runs an instance on each node of a 3-node Galera cluster, and checks that
// every pet created on any node is delivered exactly once (checkEveryPetOnce): the nodes'
// fan-outs of one endpoint conflict at commit, and the later one is rolled back.
func TestGaleraWebhooks(t *testing.T) {
	_, dbs := galeraDBs(t, "")
	var apis []*testAPI
	for _, db := range dbs {
		apis = append(apis, newHookAPI(t, db, hookConfig(time.Second)))
	}
	for _, api := range apis[1:] { // one key, made on node 1, for all
		api.key = apis[0].key
	}
	checkEveryPetOnce(t, apis)
}
