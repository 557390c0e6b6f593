package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServingWatchSeesALineSplitAcrossWrites(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := &servingWatch{file: f, serving: make(chan struct{})}
	for _, p := range []string{"time=1 level=INFO msg=\"raft st", "arted\"\ntime=2 level=INFO msg=\"jacod ser", "ving\" listen=198.18.0.1:7000\n"} {
		select {
		case <-w.serving:
			t.Fatalf("serving before the whole line was written (at %q)", p)
		default:
		}
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-w.serving:
	default:
		t.Fatal("the serving line was not seen")
	}
	// Later lines, the same one again included, must not close twice.
	if _, err := w.Write([]byte("msg=\"jacod serving\"\n")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.Name())
	if !strings.Contains(string(b), "raft started") || strings.Count(string(b), "jacod serving") != 2 {
		t.Errorf("the log does not hold everything written: %q", b)
	}
}

func TestProcStateOfThisProcess(t *testing.T) {
	s, err := procState(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Running or sleeping: never stopped, since it is answering.
	if s != 'R' && s != 'S' {
		t.Errorf("this process is in state %c", s)
	}
}
