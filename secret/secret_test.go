package secret

import (
	"errors"
	"strings"
	"testing"
)

// hostilePasswords are passwords that do not survive url.Parse unescaped. Their pieces between
// special characters are distinct, so a test can tell that no part of one leaked.
var hostilePasswords = []string{
	"Zq7/Xk9", "Wm4#Rt2", "Yp6?Lb3", "Hd5%Gn8", "Fc2@Vs6", "Tj3%zzQw", "Ku1/Ee4?Oo5#Ii6@Aa7%2F", "Nn8:Mm9", "Bb1 Cc2",
	"Dd3/", "?Ee4", "Gg5//Hh6@@", "Jj7&Kk8=", "Ll9;password=Pp0",
}

// pieces returns the parts of password at least three bytes long between its special
// characters: none of them may appear in a masked address or an error.
func pieces(password string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(password, func(r rune) bool { return strings.ContainsRune("/#?%@:& =;", r) }) {
		if len(p) >= 3 && p != "password" {
			out = append(out, p)
		}
	}
	return out
}

// addresses returns the addresses that carry password, in every form the service accepts.
func addresses(password string) []string {
	return []string{
		"mysql://app:" + password + "@db.internal:3306/pets",
		"mysql://app:" + password + "@db.internal:3306/pets?tls=true&charset=utf8mb4",
		"mysql://app:" + password + "@db.internal/pets/extra@x",
		"redis://:" + password + "@cache.internal:6379/0",
		"redis://default:" + password + "@cache.internal:6379/2?dial_timeout=1s",
		"rediss://user:" + password + "@cache.internal",
	}
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		"mysql://app:secret@db:3306/pets":                   "mysql://app:***@db:3306/pets",
		"redis://127.0.0.1:6379/0":                          "redis://127.0.0.1:6379/0",
		"sqlite:petstore.db":                                "sqlite:petstore.db",
		"sqlite:/data/odd@name.db":                          "sqlite:/data/odd@name.db",
		"mysql://root:@127.0.0.1:3306/t":                    "mysql://root:***@127.0.0.1:3306/t",
		"mysql://app:a/b#c?d%e@db:3306/pets":                "mysql://app:***@db:3306/pets",
		"redis://:p@ss@cache:6379/0":                        "redis://:***@cache:6379/0",
		"redis://user@cache:6379/0":                         "redis://user@cache:6379/0",
		"mysql://db:3306/pets?user=app&password=s3cr3t&x=1": "mysql://db:3306/pets?user=app&password=***&x=1",
		"": "",
	} {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestMaskHostilePasswords(t *testing.T) {
	for _, password := range hostilePasswords {
		for _, address := range addresses(password) {
			got := Mask(address)
			for _, p := range pieces(password) {
				if strings.Contains(got, p) {
					t.Errorf("Mask(%q) = %q: shows %q of the password", address, got, p)
				}
			}
			if !strings.Contains(got, Masked) {
				t.Errorf("Mask(%q) = %q: nothing masked", address, got)
			}
		}
	}
}

func TestParseURL(t *testing.T) {
	for _, address := range []string{
		"mysql://app:secret@db:3306/pets", "mysql://app:p%40ss@db:3306/pets", "redis://:p@ss@cache:6379/0",
		"redis://127.0.0.1:6379/0", "mysql://root:@127.0.0.1:3306/test?parseTime=true",
	} {
		if _, err := ParseURL(address); err != nil {
			t.Errorf("ParseURL(%q): %v; want success", address, err)
		}
	}
	refused := 0
	for _, password := range hostilePasswords {
		for _, address := range addresses(password) {
			u, err := ParseURL(address)
			if err == nil {
				if got, _ := u.User.Password(); got != password {
					t.Errorf("ParseURL(%q): got password %q; want %q or an error", address, got, password)
				}
				continue
			}
			refused++
			if !errors.Is(err, ErrUnparsable) {
				t.Errorf("ParseURL(%q): got %v; want ErrUnparsable", address, err)
			}
			for _, p := range pieces(password) {
				if strings.Contains(err.Error(), p) {
					t.Errorf("ParseURL(%q): error %q shows %q of the password", address, err, p)
				}
			}
		}
	}
	if refused == 0 {
		t.Error("no hostile address refused")
	}
}
