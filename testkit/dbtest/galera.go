package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the driver of the admin connections
)

// GaleraProvider is Debian's galera-4 library, which mariadb-server ships.
const GaleraProvider = "/usr/lib/galera/libgalera_smm.so"

// Galera is a MariaDB Galera cluster started by StartGalera: its nodes, each a mariadbd of its
// own with its own datadir and ports on loopback.
type Galera struct {
	Nodes []*GaleraNode
	dir   string
}

// GaleraNode is one node of a Galera cluster.
type GaleraNode struct {
	Port    int // the MySQL port
	gcomm   int // group communication
	ist     int // incremental state transfer
	sst     int // state snapshot transfer (rsync)
	datadir string
	cnf     string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	log     string
}

// StartGalera starts a cluster of n nodes (node 1 bootstraps it with --wsrep-new-cluster, the
// others join with an empty datadir, filled by rsync) on free loopback ports, with small buffers, and stops exactly the
// processes it started when tb ends. It skips tb, or fails it where services are required,
// when mariadbd or the Galera library is missing. The machine's own MariaDB is never touched.
func StartGalera(tb testing.TB, n int) *Galera {
	tb.Helper()
	for _, need := range []string{"/usr/sbin/mariadbd", "/usr/bin/mariadb-install-db", GaleraProvider, "/usr/bin/rsync"} {
		if _, err := os.Stat(need); err != nil {
			Unreachable(tb, "Galera ("+need+")", err)
		}
	}
	// Not tb.TempDir: a test's name may put characters such as '=' in it, which the SST
	// scripts do not survive.
	dir, err := os.MkdirTemp("", "petstore-galera-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if !tb.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	// The joiners' rsync daemon runs as nobody (the SST script sets no uid): it must reach
	// their datadirs.
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	g := &Galera{dir: dir}
	ports := freePorts(tb, 4*n)
	var peers []string
	for i := range n {
		node := &GaleraNode{Port: ports[4*i], gcomm: ports[4*i+1], ist: ports[4*i+2], sst: ports[4*i+3]}
		node.datadir = filepath.Join(g.dir, fmt.Sprintf("node%d", i+1))
		node.log = node.datadir + ".err"
		g.Nodes = append(g.Nodes, node)
		peers = append(peers, fmt.Sprintf("127.0.0.1:%d", node.gcomm))
	}
	tb.Cleanup(g.stop)
	for i, node := range g.Nodes {
		node.writeConfig(tb, g.dir, i+1, strings.Join(peers, ","))
		if i == 0 {
			node.install(tb)
		} else {
			emptyDatadir(tb, node.datadir)
		}
		node.Start(tb, i == 0)
	}
	g.waitSize(tb, n)
	return g
}

// emptyDatadir makes an empty datadir for a joiner, owned by nobody: the SST's rsync daemon
// runs as nobody (the script sets no uid) and fills it; mariadbd, as root, reads it all.
func emptyDatadir(tb testing.TB, dir string) {
	tb.Helper()
	if err := os.Mkdir(dir, 0o750); err != nil {
		tb.Fatal(err)
	}
	giveToNobody(tb, dir)
}

// giveToNobody makes nobody the owner of dir and everything in it, so that a state transfer
// by rsync (run as nobody) can write there: a node killed by Kill has lost its position and
// gets the whole state again when it rejoins.
func giveToNobody(tb testing.TB, dir string) {
	tb.Helper()
	nobody, err := user.Lookup("nobody")
	if err != nil {
		tb.Fatal(err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	err = filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// writeConfig writes the node's option file.
func (node *GaleraNode) writeConfig(tb testing.TB, dir string, id int, peers string) {
	tb.Helper()
	node.cnf = filepath.Join(dir, fmt.Sprintf("node%d.cnf", id))
	cnf := fmt.Sprintf(`[mariadbd]
datadir=%[1]s
socket=%[1]s.sock
pid-file=%[1]s.pid
log-error=%[2]s
port=%[3]d
bind-address=127.0.0.1
skip-name-resolve
innodb_buffer_pool_size=32M
innodb_log_file_size=16M
key_buffer_size=1M
performance_schema=OFF
max_connections=100
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=%[4]s
wsrep_cluster_name=petstore_test
wsrep_node_name=node%[5]d
wsrep_node_address=127.0.0.1
wsrep_cluster_address=gcomm://%[6]s
wsrep_provider_options="base_port=%[7]d;gmcast.listen_addr=tcp://127.0.0.1:%[7]d;ist.recv_addr=127.0.0.1:%[8]d;gcache.size=32M;evs.keepalive_period=PT0.5S;evs.inactive_timeout=PT5S;evs.suspect_timeout=PT2S"
wsrep_sst_method=rsync
wsrep_sst_receive_address=127.0.0.1:%[9]d
wsrep_slave_threads=2
`, node.datadir, node.log, node.Port, GaleraProvider, id, peers, node.gcomm, node.ist, node.sst)
	if err := os.WriteFile(node.cnf, []byte(cnf), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// install creates the node's system tables.
func (node *GaleraNode) install(tb testing.TB) {
	tb.Helper()
	out, err := exec.Command("/usr/bin/mariadb-install-db", "--defaults-file="+node.cnf, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	if err != nil {
		tb.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
}

// Start starts the node's mariadbd (bootstrap: as the first node of a new cluster) and waits
// until it is synced with the cluster. A node that joins, first or again after Kill, gets its
// state from another by rsync.
func (node *GaleraNode) Start(tb testing.TB, bootstrap bool) {
	tb.Helper()
	if !bootstrap {
		giveToNobody(tb, node.datadir)
	}
	args := []string{"--defaults-file=" + node.cnf, "--user=root"}
	if bootstrap {
		args = append(args, "--wsrep-new-cluster")
	}
	node.cmd = exec.Command("/usr/sbin/mariadbd", args...)
	node.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so that Kill reaches the SST scripts too
	if err := node.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	cmd, exited := node.cmd, make(chan struct{})
	node.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if node.synced() {
			return
		}
		select {
		case <-exited:
			deadline = time.Now()
		default:
		}
	}
	log, _ := os.ReadFile(node.log)
	donor, _ := os.ReadFile(filepath.Join(filepath.Dir(node.log), "node1.err"))
	tb.Fatalf("Galera node on port %d not synced within 90s; its log:\n%s\nnode 1's log:\n%s", node.Port, tail(log, 3000), tail(donor, 3000))
}

// Kill kills the node's processes at once (SIGKILL), as a crash would.
func (node *GaleraNode) Kill() {
	if node.cmd == nil || node.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-node.cmd.Process.Pid, syscall.SIGKILL)
	<-node.exited
	node.cmd = nil
}

// DSN returns the PETSTORE_DB address of database name on the node.
func (node *GaleraNode) DSN(name string) string {
	return fmt.Sprintf("mysql://root:@127.0.0.1:%d/%s", node.Port, name)
}

// Exec runs statement on the node as root.
func (node *GaleraNode) Exec(statement string) error {
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?timeout=2s", node.Port))
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(statement)
	return err
}

// synced reports whether the node answers and is synced with its cluster.
func (node *GaleraNode) synced() bool {
	return node.Status("wsrep_local_state_comment") == "Synced"
}

// Status returns the node's status variable name (such as wsrep_cluster_size), "" when the
// node does not answer within 2 s.
func (node *GaleraNode) Status(name string) string {
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?timeout=1s&readTimeout=2s", node.Port))
	if err != nil {
		return ""
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var k, v string
	if db.QueryRowContext(ctx, "SHOW STATUS LIKE '"+name+"'").Scan(&k, &v) != nil {
		return ""
	}
	return v
}

// waitSize waits until the first node sees n members.
func (g *Galera) waitSize(tb testing.TB, n int) {
	tb.Helper()
	want := fmt.Sprint(n)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if g.Nodes[0].Status("wsrep_cluster_size") == want {
			return
		}
	}
	tb.Fatalf("Galera cluster of %d nodes did not form within 30s", n)
}

// stop kills every node this cluster started.
func (g *Galera) stop() {
	for _, node := range g.Nodes {
		node.Kill()
	}
}

// freePorts returns n distinct free loopback ports.
func freePorts(tb testing.TB, n int) []int {
	tb.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return ports
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
