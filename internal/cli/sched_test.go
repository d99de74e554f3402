package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestSchedCheck: each scheduling flag out of range is a usage error that
// names the flag and what it accepts, found without applying anything.
func TestSchedCheck(t *testing.T) {
	n := runtime.NumCPU()
	tests := []struct {
		args []string
		want string // in the usage error; "" for none
	}{
		{nil, ""},
		{[]string{"--cpu", "0"}, ""},
		{[]string{"--cpu", fmt.Sprint(n)}, fmt.Sprintf("--cpu %d: want CPUs this process may run on: ", n)},
		{[]string{"--cpu", fmt.Sprintf("0-%d", n)}, fmt.Sprintf("--cpu %d: want CPUs", n)},
		{[]string{"--cpu", "1000"}, "--cpu 1000: want CPUs"},
		{[]string{"--cpu", "0-99999999"}, "--cpu: bad CPU range"},
		{[]string{"--cpu", "x"}, "--cpu: bad CPU"},
		{[]string{"--realtime", "100"}, "--realtime 100: want 1 to 99"},
		{[]string{"--realtime", "0"}, "--realtime 0: want 1 to 99"},
		{[]string{"--nice", "30"}, "--nice 30: want -20 to 19"},
		{[]string{"--nice", "-21"}, "--nice -21: want -20 to 19"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var sf schedFlags
			cmd := &cobra.Command{}
			sf.register(cmd, "test threads")
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			_, err := sf.check(cmd)
			var ue usageError
			switch {
			case tt.want == "" && err != nil && errors.As(err, &ue):
				t.Fatalf("check(%q) = %v, want no usage error", tt.args, err)
			case tt.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("check(%q) = %v, want a usage error with %q", tt.args, err, tt.want)
			}
		})
	}
}

// TestServerSchedUsage: a server with a bad scheduling flag exits 2
// before it says it listens.
func TestServerSchedUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--cpu", fmt.Sprint(runtime.NumCPU())},
		{"--realtime", "100"},
		{"--nice", "30"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := Main(ctx, append([]string{"server", "--listen", "127.0.0.1:0"}, args...), &stdout, &stderr)
			if code != ExitUsage || stdout.Len() > 0 || !strings.Contains(stderr.String(), args[0]+" ") {
				t.Fatalf("server %q = %d, stdout %q, stderr %q; want %d, nothing on stdout, %s named on stderr",
					args, code, stdout.String(), stderr.String(), ExitUsage, args[0])
			}
		})
	}
}
