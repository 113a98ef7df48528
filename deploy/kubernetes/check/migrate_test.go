package check

import (
	"net/url"
	"os"
	"regexp"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestMigrations: the pods migrate as the migrating user and serve as the serving one. The
// init container runs the serving container's build's migrate up with the Secret
// petstore-migrate; the serving container changes no schema (PETSTORE_MIGRATE=off) and reads
// only the Secret petstore (TestHardening); the rollback Job runs migrate down with
// petstore-migrate, once, on a pod the Service does not select. The example Secrets name the
// users of deploy/mysql/grants.sql, on the same database.
func TestMigrations(t *testing.T) {
	m := load(t)
	c := container(t, m)
	inits := m.deployment.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || inits[0].Name != "migrate" {
		t.Fatalf("Deployment: want one init container, migrate; got %d", len(inits))
	}
	migrate := inits[0]
	if migrate.Image != c.Image || !slices.Equal(migrate.Args, []string{"migrate", "up"}) {
		t.Errorf("init container: %s %v; want %s [migrate up], the serving container's image", migrate.Image, migrate.Args, c.Image)
	}
	fromMigrateSecret(t, "init container", migrate, m.migrateSecret)
	hardened(t, "init container", migrate)
	if v := env(c, "PETSTORE_MIGRATE"); v != "off" {
		t.Errorf("serving container: PETSTORE_MIGRATE %q; want off, the init container having migrated", v)
	}

	job := m.job.Spec.Template.Spec
	if len(job.Containers) != 1 || len(job.Containers[0].Args) < 2 || !slices.Equal(job.Containers[0].Args[:2], []string{"migrate", "down"}) {
		t.Fatalf("Job %s: want one container running migrate down", m.job.Name)
	}
	fromMigrateSecret(t, "Job", job.Containers[0], m.migrateSecret)
	hardened(t, "Job", job.Containers[0])
	if job.RestartPolicy != corev1.RestartPolicyNever || m.job.Spec.BackoffLimit == nil || *m.job.Spec.BackoffLimit != 0 {
		t.Error("Job: want restartPolicy Never and backoffLimit 0: a rollback runs once")
	}
	if job.AutomountServiceAccountToken == nil || *job.AutomountServiceAccountToken || job.SecurityContext == nil ||
		job.SecurityContext.RunAsNonRoot == nil || !*job.SecurityContext.RunAsNonRoot {
		t.Error("Job: want no service account token and runAsNonRoot")
	}
	selected := true
	for k, v := range m.service.Spec.Selector {
		selected = selected && m.job.Spec.Template.Labels[k] == v
	}
	if selected {
		t.Error("Job: the Service selects its pod, and would send it traffic")
	}

	grants, err := os.ReadFile("../../mysql/grants.sql")
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, u := range regexp.MustCompile(`(?m)^CREATE USER '(\w+)'@`).FindAllStringSubmatch(string(grants), -1) {
		users = append(users, u[1])
	}
	serving, _ := url.Parse(m.secret.StringData["database-url"])
	migrating, _ := url.Parse(m.migrateSecret.StringData["database-url"])
	if serving == nil || migrating == nil || serving.User.Username() != "petstore" || migrating.User.Username() != "petstore_migrate" ||
		!slices.Equal(users, []string{"petstore_migrate", "petstore"}) {
		t.Errorf("the example Secrets' users %v and %v are not grants.sql's %v", serving, migrating, users)
	} else if serving.Host != migrating.Host || serving.Path != migrating.Path || serving.Path != "/petstore" {
		t.Errorf("the example Secrets' databases differ, or are not grants.sql's petstore: %s, %s", serving.Redacted(), migrating.Redacted())
	}
}

// fromMigrateSecret checks that c's PETSTORE_DB is the database-url of secret, which it must have.
func fromMigrateSecret(t *testing.T, what string, c corev1.Container, secret *corev1.Secret) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name != "PETSTORE_DB" {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref == nil || ref.Name != secret.Name || ref.Key != "database-url" || (ref.Optional != nil && *ref.Optional) {
			t.Errorf("%s: PETSTORE_DB is not the database-url of the Secret %s", what, secret.Name)
		}
		if _, ok := secret.StringData["database-url"]; !ok {
			t.Errorf("the example Secret %s has no database-url", secret.Name)
		}
		return
	}
	t.Errorf("%s: no PETSTORE_DB", what)
}

// hardened checks that c has a read-only root and no privilege escalation.
func hardened(t *testing.T, what string, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: want a read-only root and no privilege escalation", what)
	}
}
