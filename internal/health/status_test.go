package health

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One order, and the API says the same: the comment on the HealthStatus constants of
// both API versions lists Order.
func TestOrderIsTheAPIs(t *testing.T) {
	want := []Status{Healthy, Progressing, Unknown, Missing, Degraded}
	got := Order()
	if strings.Join(strs(got), ",") != strings.Join(strs(want), ",") {
		t.Fatalf("Order() = %v, want %v", got, want)
	}
	for i := range want {
		for j := range want {
			if want[i].Worse(want[j]) != (i > j) {
				t.Errorf("%s.Worse(%s) = %v", want[i], want[j], !(i > j))
			}
		}
	}
	if !Status("Bogus").Worse(Progressing) || Status("Bogus").Worse(Unknown) || Missing.Worse(Status("Bogus")) != true {
		t.Error("a value that is no Status ranks as Unknown")
	}
	line := "from best to worst (status.health is the worst of its objects): " + strings.Join(strs(want), ", ") + "."
	// api/v1alpha1's copy is generated from api/v1beta1 (hack/apicopy).
	for _, file := range []string{"v1beta1/application_status_types.go", "v1alpha1/zz_generated.application_status_types.go"} {
		src, err := os.ReadFile(filepath.Join("..", "..", "api", filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "// HealthStatus values; "+line) {
			t.Errorf("api/%s: the comment on the HealthStatus constants does not say %q", file, line)
		}
	}
}

func strs(ss []Status) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
